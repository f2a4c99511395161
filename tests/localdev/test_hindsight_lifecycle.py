"""``LocalHindsight`` / ``python -m localdev.hindsight``: idempotent start, status, clean stop, visible failures.

These start their own throwaway servers (hashed embeddings, no isolation: the quickest configuration),
separate from the session's ``local_hindsight``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from localdev.hindsight import (
    EmbeddingsMode,
    HindsightStartError,
    LLMMode,
    LocalHindsight,
    LocalHindsightConfig,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNNING_KEYS = ("healthy", "api_running", "workers_running", "postgres_running", "llm_stub_running")


def _quick_config(**overrides) -> LocalHindsightConfig:
    return LocalHindsightConfig.ephemeral(embeddings=EmbeddingsMode.HASHED, isolation=False, **overrides)


def _cli(command: str, hs: LocalHindsight) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "localdev.hindsight", command, "--data-dir", str(hs.data_dir), "--no-isolation"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        check=False,
    )


@pytest.fixture
def throwaway() -> Iterator[LocalHindsight]:
    messages: list[str] = []
    hs = LocalHindsight(_quick_config(), log=messages.append)
    hs.messages = messages  # type: ignore[attr-defined]
    yield hs
    hs.destroy()


@pytest.mark.integration
def test_start_is_idempotent_status_reports_and_stop_is_clean(throwaway):
    # GIVEN a started server
    throwaway.start()
    first = json.loads(throwaway.state_file.read_text())
    assert throwaway.is_healthy()

    # WHEN it is started again, from the same object and from a fresh one on the same data dir (as the CLI does)
    throwaway.start()
    again = LocalHindsight(
        LocalHindsightConfig(data_dir=throwaway.data_dir, embeddings=EmbeddingsMode.HASHED, isolation=False)
    )
    again.start()

    # THEN nothing was restarted: same processes, same URL, and it said so
    assert json.loads(throwaway.state_file.read_text())["api_pid"] == first["api_pid"]
    assert again.url == throwaway.url
    assert any("already running" in m for m in throwaway.messages)

    # AND status says healthy, from Python and from the CLI (exit 0)
    status = throwaway.status()
    assert all(status[k] for k in RUNNING_KEYS), status
    cli = _cli("status", throwaway)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert json.loads(cli.stdout)["url"] == throwaway.url

    # WHEN stopped through the CLI
    stopped = _cli("stop", throwaway)

    # THEN everything is down, status says so (exit 3), and stopping again is harmless
    assert stopped.returncode == 0, stopped.stderr
    status = throwaway.status()
    assert not any(status[k] for k in RUNNING_KEYS), status
    assert _cli("status", throwaway).returncode == 3
    second_stop = _cli("stop", throwaway)
    assert second_stop.returncode == 0
    assert "not running" in second_stop.stdout


@pytest.mark.integration
def test_the_api_and_the_retain_worker_run_apart_as_deployed(throwaway):
    # GIVEN a started server (one worker process by default)
    throwaway.start()
    pids = throwaway.pids()
    assert {"hindsight-api", "hindsight-worker-1"} <= set(pids)
    # THEN the API runs no queue worker, the worker process does, under a stable id
    api_env = Path(f"/proc/{pids['hindsight-api']}/environ").read_bytes().split(b"\0")
    worker_env = Path(f"/proc/{pids['hindsight-worker-1']}/environ").read_bytes().split(b"\0")
    assert b"HINDSIGHT_API_WORKER_ENABLED=false" in api_env
    assert b"HINDSIGHT_API_WORKER_ENABLED=true" in worker_env
    assert b"HINDSIGHT_API_WORKER_ID=local" in worker_env

    # AND an async retain is extracted (by the worker: the API has none)
    client = httpx.Client(base_url=throwaway.url, timeout=60)
    bank = "lifecycle-worker"
    accepted = client.post(
        f"/v1/default/banks/{bank}/memories", json={"items": [{"content": "I like tea."}], "async": True}
    )
    assert accepted.status_code == 200, accepted.text
    operation = accepted.json()["operation_id"]
    deadline = time.monotonic() + 90
    while (status := client.get(f"/v1/default/banks/{bank}/operations/{operation}").json()["status"]) != "completed":
        assert status in ("pending", "processing"), status
        assert time.monotonic() < deadline, "the worker never completed the retain"
        time.sleep(0.5)

    # WHEN the worker is gone, the server is not reused as it is: start() restarts everything
    os.kill(pids["hindsight-worker-1"], signal.SIGKILL)
    time.sleep(0.5)
    assert not throwaway.status()["workers_running"]
    throwaway.start()
    assert throwaway.status()["workers_running"]
    assert throwaway.pids()["hindsight-api"] != pids["hindsight-api"]


def test_workers_zero_runs_the_queue_worker_in_the_api(tmp_path):
    hs = LocalHindsight(LocalHindsightConfig(data_dir=tmp_path, isolation=False, port=1, pg_port=2, llm_port=3))
    assert hs.server_env()["HINDSIGHT_API_WORKER_ENABLED"] == "false"
    inline = LocalHindsight(LocalHindsightConfig(data_dir=tmp_path, isolation=False, workers=0))
    assert "HINDSIGHT_API_WORKER_ENABLED" not in inline.server_env()
    assert LocalHindsightConfig.from_env({"LOCAL_HINDSIGHT_WORKERS": "0"}).workers == 0


@pytest.mark.integration
def test_failed_start_shows_the_server_log_and_leaves_nothing_running():
    # GIVEN a server configured with an extension that does not exist (it exits during start-up)
    hs = LocalHindsight(_quick_config(extra_env={"HINDSIGHT_API_TENANT_EXTENSION": "no_such_module_xyz:Nope"}))
    try:
        # WHEN it is started
        with pytest.raises(HindsightStartError) as caught:
            hs.start()

        # THEN the error carries the server's own log lines and a hint
        message = str(caught.value)
        assert f"--- last lines of {hs.server_log} ---" in message
        assert "no_such_module_xyz" in message
        assert "Hint:" in message
        # AND it cleaned up after itself
        status = hs.status()
        assert not any(status[k] for k in RUNNING_KEYS), status
    finally:
        hs.destroy()


def test_busy_port_is_reported_before_anything_starts():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        busy = sock.getsockname()[1]
        hs = LocalHindsight(_quick_config(port=busy))
        try:
            with pytest.raises(HindsightStartError, match=f"port {busy} .* is in use.*LOCAL_HINDSIGHT_PORT"):
                hs.start()
            assert not hs.status()["postgres_running"]
        finally:
            hs.destroy()


def test_watchdog_cleans_up_after_a_dead_owner(tmp_path):
    # GIVEN an instance's state (a stand-in process as its API) watched on behalf of a short-lived process
    hs = LocalHindsight(LocalHindsightConfig(data_dir=tmp_path / "hs", isolation=False))
    hs.data_dir.mkdir()
    api = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    hs.state_file.write_text(json.dumps({"port": 1, "api_pid": api.pid}))
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    hs.stop_when_gone(owner.pid, delete=True)
    assert hs.data_dir.exists()

    # WHEN the owner dies without cleaning up
    owner.kill()
    owner.wait()

    # THEN the watchdog stops the instance's processes and deletes its data dir
    deadline = time.monotonic() + 30
    while hs.data_dir.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not hs.data_dir.exists()
    assert api.poll() is not None, "the watchdog left the API running"


def test_server_env_is_offline_and_points_at_the_bundled_model(tmp_path):
    hs = LocalHindsight(LocalHindsightConfig(data_dir=tmp_path, isolation=False, port=1, pg_port=2, llm_port=3))
    env = hs.server_env()
    assert env["HF_HUB_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == "1"
    assert env["HINDSIGHT_API_EMBEDDINGS_PROVIDER"] == "local"
    assert Path(env["HINDSIGHT_API_EMBEDDINGS_LOCAL_MODEL"]).joinpath("model.safetensors").exists()
    assert env["HINDSIGHT_API_RERANKER_PROVIDER"] == "rrf"
    assert env["HINDSIGHT_API_ENABLE_GRAPH_RETRIEVAL"] == "false"  # make eval: RRF with the graph arm lost
    assert env["HINDSIGHT_API_ADMISSION_RETAIN_MAX_WAIT_MS"] == "600000"  # as deployed: retains queue
    assert env["HINDSIGHT_API_HOST"] == "127.0.0.1"
    assert env["HINDSIGHT_API_DATABASE_URL"].startswith("postgresql://postgres@127.0.0.1:2/")
    assert env["HINDSIGHT_API_LLM_BASE_URL"] == "http://127.0.0.1:3/v1"
    # the stand-in consolidates nothing, so consolidation is off unless asked for
    assert env["HINDSIGHT_API_ENABLE_OBSERVATIONS"] == "false"
    with_observations = LocalHindsight(LocalHindsightConfig(data_dir=tmp_path, isolation=False, observations=True))
    assert with_observations.server_env()["HINDSIGHT_API_ENABLE_OBSERVATIONS"] == "true"


def test_config_from_env_reads_the_documented_variables(tmp_path):
    env = {
        "LOCAL_HINDSIGHT_PORT": "9999",
        "LOCAL_HINDSIGHT_PG_PORT": "9998",
        "LOCAL_HINDSIGHT_LLM": "bedrock",
        "LOCAL_HINDSIGHT_EMBEDDINGS": "hashed",
        "LOCAL_HINDSIGHT_DATA_DIR": str(tmp_path),
        "HINDSIGHT_VENV": "/opt/hs",
    }
    config = LocalHindsightConfig.from_env(env, port=7777)
    assert (config.port, config.pg_port, config.llm, config.embeddings) == (
        7777,
        9998,
        LLMMode.BEDROCK,
        EmbeddingsMode.HASHED,
    )
    assert (config.data_dir, config.venv) == (tmp_path, Path("/opt/hs"))


def test_openai_mode_needs_a_key_and_uses_the_callers_credentials(tmp_path, monkeypatch):
    config = LocalHindsightConfig(data_dir=tmp_path, isolation=False, llm=LLMMode.OPENAI)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(HindsightStartError, match="OPENAI_API_KEY"):
        LocalHindsight(config).server_env()

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example/v1")
    env = LocalHindsight(config).server_env()
    assert (env["HINDSIGHT_API_LLM_PROVIDER"], env["HINDSIGHT_API_LLM_API_KEY"]) == ("openai", "sk-test")
    assert env["HINDSIGHT_API_LLM_BASE_URL"] == "https://gateway.example/v1"
    assert env["HINDSIGHT_API_ENABLE_OBSERVATIONS"] == "true"


def test_bedrock_mode_uses_litellm_with_the_boto3_chain(tmp_path):
    config = LocalHindsightConfig(data_dir=tmp_path, isolation=False, llm=LLMMode.BEDROCK, llm_model="amazon.nova-lite")
    env = LocalHindsight(config).server_env()
    assert (env["HINDSIGHT_API_LLM_PROVIDER"], env["HINDSIGHT_API_LLM_MODEL"]) == ("bedrock", "amazon.nova-lite")
    assert "HINDSIGHT_API_LLM_API_KEY" not in env
    assert "HINDSIGHT_API_LLM_BASE_URL" not in env


def test_inherited_hindsight_settings_are_ignored_but_extra_env_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("HINDSIGHT_API_LLM_PROVIDER", "mock")
    config = LocalHindsightConfig(data_dir=tmp_path, isolation=False, extra_env={"HINDSIGHT_API_MCP_ENABLED": "false"})
    env = LocalHindsight(config).server_env()
    assert env["HINDSIGHT_API_LLM_PROVIDER"] == "openai"
    assert env["HINDSIGHT_API_MCP_ENABLED"] == "false"


def test_projected_embeddings_point_at_the_second_model(tmp_path):
    # GIVEN the projected mode (the re-embedding test's second model)
    hs = LocalHindsight(LocalHindsightConfig.ephemeral(base_dir=tmp_path, embeddings=EmbeddingsMode.PROJECTED))
    env = hs.server_env()
    model = Path(env["HINDSIGHT_API_EMBEDDINGS_LOCAL_MODEL"])
    # THEN the server loads a built sentence-transformers directory with the 512-dimension projection appended
    assert model.name == "minilm-projected-512"
    modules = json.loads((model / "modules.json").read_text())
    assert modules[-1]["type"].endswith("Dense")
    assert json.loads((model / modules[-1]["path"] / "config.json").read_text())["out_features"] == 512
    assert env["HINDSIGHT_API_LLM_TRACE_ENABLED"] == "false"


def test_a_running_server_with_other_settings_is_not_reused():
    # GIVEN what a server started with other embeddings recorded
    hs = LocalHindsight(_quick_config())
    same = {
        "llm": str(hs.config.llm),
        "embeddings": str(hs.config.embeddings),
        "workers": hs.config.workers,
        "port": 18888,
        "pg_port": 5,
    }
    # THEN the same settings match, and each difference is named
    assert hs.changed_settings(same) == ""
    # a server recorded before the workers ran apart ran its worker in-process
    assert hs.changed_settings({k: v for k, v in same.items() if k != "workers"}) == "workers 0 instead of 1"
    assert hs.changed_settings({k: v for k, v in same.items() if k != "embeddings"}) == ""  # not recorded
    changed = hs.changed_settings({**same, "embeddings": "local-model", "llm": "bedrock"})
    assert "embeddings local-model instead of" in changed
    assert "llm bedrock instead of" in changed
