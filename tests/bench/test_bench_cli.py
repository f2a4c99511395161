"""The benchmark's command line is importable and documented (benchmarks themselves run with `make bench`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_help_lists_every_measurement() -> None:
    # GIVEN the project virtualenv (no prior-art package, no matplotlib needed for --help)
    # WHEN the benchmark's help is printed
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    # THEN it succeeds and names the measurements
    assert done.returncode == 0, done.stderr
    for name in ("recall", "first_turn", "degraded", "spools", "outage", "invocations", "after_turn", "build"):
        assert name in done.stdout


def test_an_eval_run_writes_a_folder_per_data_set_never_the_published_results() -> None:
    from bench.eval.__main__ import RESULTS, _parser, outputs

    synthetic = outputs(_parser().parse_args(["--data", "synthetic"]))
    locomo = outputs(_parser().parse_args(["--data", "/data/locomo-dev.json", "--name", "conv41"]))
    assert [p.relative_to(ROOT).as_posix() for p in synthetic] == [
        f"bench/results/eval/synthetic/eval.{suffix}" for suffix in ("json", "md", "png")
    ]
    assert locomo[0].relative_to(ROOT).as_posix() == "bench/results/eval/locomo-dev/conv41.json"
    published = {p for p in RESULTS.glob("eval*.*")}
    assert published, "the published results (BENCHMARKS.md shows them) are bench/results/eval*.*"
    assert published.isdisjoint(synthetic + locomo)


def test_an_eval_run_refuses_to_replace_results_unless_asked(tmp_path: Path) -> None:
    # GIVEN results from an earlier run
    (tmp_path / "eval.md").write_text("published\n")
    # WHEN a run would write the same files
    done = subprocess.run(
        [sys.executable, "-m", "bench.eval", "--data", "synthetic", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # THEN it stops before it starts, naming the file and both ways on, and the results are untouched
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (
        f"{tmp_path / 'eval.md'} exists (earlier results): pass --name <another name> to keep them, "
        "or --replace to overwrite them"
    )
    assert done.stdout == ""
    assert (tmp_path / "eval.md").read_text() == "published\n"


def test_the_published_results_are_replaced_only_when_asked() -> None:
    from bench.eval.__main__ import RESULTS, _parser, already_there

    refusal = already_there(_parser().parse_args(["--out", str(RESULTS)]))
    assert refusal is not None
    assert "(earlier results, published)" in refusal
    assert already_there(_parser().parse_args(["--out", str(RESULTS), "--replace"])) is None
