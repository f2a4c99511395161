"""Changing the embedding model without re-extraction, on a server of its own (it is restarted with the new model).

all-MiniLM-L6-v2 (384 dimensions) to the projected model (``--embeddings projected``: another vector space, 512
dimensions): ``memory_adapter.admin.maintenance reembed`` copies every bank into a fresh schema through Hindsight's
importer while the old server keeps serving; the server restarted on the new schema with the new model still
recalls a paraphrase, and the LLM stand-in saw no extraction request.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from localdev.hindsight import EmbeddingsMode, LocalHindsight, LocalHindsightConfig
from localdev.hindsight.projected_model import projected_model_dir
from localdev.hindsight.venv import HindsightVenv
from localdev.token_issuer import TokenIssuer
from tests.integration.admin.conftest import Users, extraction_requests, run_maintenance

pytestmark = pytest.mark.integration

TARGET = "emb_projected"
MEMORIES = (
    "I prefer email over phone, so please do not call me.",
    "My dog Rex loves long walks on the beach.",
    "I work as a primary school teacher in Leeds.",
    "My favourite food is mushroom risotto.",
)
#: Paraphrases that share no content word with the memory they should find first.
EXPECTED = {
    "How should you contact me?": MEMORIES[0],
    "Tell me about my pet": MEMORIES[1],
    "What do I do for a living?": MEMORIES[2],
}


def _top_answers(users: Users) -> dict[str, str | None]:
    return {query: next(iter(users.recall("max", query)), None) for query in EXPECTED}


@pytest.fixture
def minilm_server(token_issuer: TokenIssuer) -> Iterator[LocalHindsight]:
    config = LocalHindsightConfig.ephemeral(issuer_discovery_url=token_issuer.discovery_url)
    server = LocalHindsight(config)
    server.stop_when_gone(delete=True)
    try:
        yield server.start()
    finally:
        server.stop()
        shutil.rmtree(config.data_dir, ignore_errors=True)


def _result(completed: Any) -> dict[str, Any]:
    assert completed.returncode == 0, completed.stderr[-3000:]
    parsed: dict[str, Any] = json.loads(completed.stdout.splitlines()[-1])
    return parsed


def test_reembedding_keeps_recall_and_runs_no_extraction(
    minilm_server: LocalHindsight, token_issuer: TokenIssuer
) -> None:
    users = Users(minilm_server.url, token_issuer.mint, "reembed")
    for text in MEMORIES:
        users.retain("max", text)
    users.retain("max", "I am learning to play the cello.", agent="travel")
    users.retain("nia", "Nia is allergic to peanuts.")
    assert _top_answers(users) == EXPECTED  # the baseline: MiniLM ranks each paraphrase's memory first
    extractions = len(extraction_requests(minilm_server.llm_base_url))
    projected = {
        "HINDSIGHT_API_EMBEDDINGS_LOCAL_MODEL": str(projected_model_dir(HindsightVenv(minilm_server.config.venv)))
    }

    # WHEN every bank is re-embedded into a fresh schema with the projected model, the old server still serving
    result = _result(
        run_maintenance(minilm_server, "reembed", "--source-schema", "public", "--target-schema", TARGET, env=projected)
    )
    # THEN every bank is there with the source's counts, in 512 dimensions, and no extraction ran
    assert result["space"]["dimension"] == 512
    assert sorted(b["bank_id"] for b in result["banks"]) == sorted(
        [users.bank("max"), users.bank("max", "travel"), users.bank("nia")]
    )
    assert len(extraction_requests(minilm_server.llm_base_url)) == extractions

    # AND the target refuses vectors of another space (MiniLM again, mid-way)
    mixed = run_maintenance(minilm_server, "reembed", "--source-schema", "public", "--target-schema", TARGET)
    assert mixed.returncode == 2
    assert "refusing to mix vector spaces" in mixed.stderr
    # AND a re-run with the same model resumes: everything done is skipped
    rerun = _result(
        run_maintenance(minilm_server, "reembed", "--source-schema", "public", "--target-schema", TARGET, env=projected)
    )
    assert all(b.get("skipped") for b in rerun["banks"])
    # AND the source is never the target
    same = run_maintenance(
        minilm_server, "reembed", "--source-schema", "public", "--target-schema", "public", env=projected
    )
    assert same.returncode == 2

    # WHEN the server is restarted on the new schema with the new model
    minilm_server.stop()
    new_config = dataclasses.replace(
        minilm_server.config,
        embeddings=EmbeddingsMode.PROJECTED,
        extra_env={**minilm_server.config.extra_env, "HINDSIGHT_API_DATABASE_SCHEMA": TARGET},
    )
    server = LocalHindsight(new_config).start()
    try:
        users = Users(server.url, token_issuer.mint, "reembed")
        # THEN recall still ranks each paraphrase's memory first, and every user still has exactly their own
        assert _top_answers(users) == EXPECTED
        assert users.recall("max", "Which instrument am I learning?", agent="travel")[0].startswith("I am learning")
        assert not any("email" in t for t in users.recall("nia", "How should you contact me?"))
        assert extraction_requests(server.llm_base_url) == []
    finally:
        server.stop()
