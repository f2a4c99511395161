"""The deployed reranker's path, run locally: the environment the stack gives Hindsight for
``hindsight.reranker_model`` (:func:`infra.constructs.hindsight_task.reranker_environment`) makes Hindsight 1.1.0's
``litellm-sdk`` provider send each recall's candidates, SigV4-signed, to Bedrock's Rerank API, here the stand-in's
(:mod:`localdev.rerank_stub`); its scores decide the order recall returns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from infra.config import load_config_from_cdk_json
from infra.constructs.hindsight_task import reranker_environment
from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.llm_stub import LLMStub
from localdev.token_issuer import TokenIssuer
from memory_adapter.identity.bank_ids import format_bank_id
from tests.conftest import throwaway_hindsight

pytestmark = pytest.mark.integration

USER = "rerank-ana"
BANK = format_bank_id(user=USER, agent="support")
MODEL = "amazon.rerank-v1:0"
REGION = "us-east-1"


def _deployed_environment() -> dict[str, str]:
    """The stack's reranker settings for ``bedrock/amazon.rerank-v1:0``, with the partition and region resolved as
    CloudFormation would in us-east-1."""
    from aws_cdk import App, Stack

    config = load_config_from_cdk_json({"hindsight.reranker_model": f"bedrock/{MODEL}"})
    stack = Stack(App(), "RerankEnv")

    def concrete(value: Any) -> str:
        if isinstance(value, str):
            return value
        if "Ref" in value:
            return {"AWS::Partition": "aws", "AWS::Region": REGION}[value["Ref"]]
        return "".join(concrete(part) for part in value["Fn::Join"][1])

    return {key: concrete(stack.resolve(value)) for key, value in reranker_environment(config.hindsight).items()}


@pytest.fixture(scope="module")
def reranked(token_issuer: TokenIssuer) -> Iterator[tuple[LocalHindsight, LLMStub]]:
    """A Hindsight whose reranker is the stand-in's Bedrock Rerank, with three memories in a bank."""
    with LLMStub() as bedrock:
        env = {
            **_deployed_environment(),
            "HINDSIGHT_API_RERANKER_LITELLM_SDK_API_BASE": bedrock.url,  # instead of Bedrock's regional endpoint
            "AWS_ACCESS_KEY_ID": "AKIDLOCALSTANDIN",
            "AWS_SECRET_ACCESS_KEY": "local-stand-in",
            "AWS_REGION": REGION,
        }
        config = LocalHindsightConfig.ephemeral(issuer_discovery_url=token_issuer.discovery_url, extra_env=env)
        with throwaway_hindsight(config) as hindsight:
            token = token_issuer.mint(USER, ttl=900)
            with httpx.Client(base_url=hindsight.url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as c:
                items = [
                    {"content": "Ana: I live in Lisbon, near the old harbour."},
                    {"content": "Ana: My brother plays the cello in an orchestra."},
                    {"content": "Ana: I am learning to bake sourdough bread."},
                ]
                body = {"items": items, "async": False}
                assert c.post(f"/v1/default/banks/{BANK}/memories", json=body).status_code == 200
            yield hindsight, bedrock


def test_recall_is_ordered_by_the_bedrock_reranker_the_stack_configures(
    reranked: tuple[LocalHindsight, LLMStub], token_issuer: TokenIssuer
) -> None:
    hindsight, bedrock = reranked
    # WHEN Ana asks where she lives
    token = token_issuer.mint(USER, ttl=900)
    with httpx.Client(base_url=hindsight.url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as c:
        answer = c.post(f"/v1/default/banks/{BANK}/memories/recall", json={"query": "Where does Ana live, Lisbon?"})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    # THEN Hindsight sent its candidates to Bedrock's Rerank with the model the stack names, as its ARN,
    (call, *_) = [r for r in bedrock.requests if r["endpoint"] == "rerank"]
    model = call["request"]["rerankingConfiguration"]["bedrockRerankingConfiguration"]["modelConfiguration"]
    assert model["modelArn"] == f"arn:aws:bedrock:{REGION}::foundation-model/{MODEL}"
    assert len(call["request"]["sources"]) >= len(results) > 1
    # AND the memory the reranker scored highest comes first, carrying the reranker's score
    best = call["response"]["results"][0]
    best_text = call["request"]["sources"][best["index"]]["inlineDocumentSource"]["textDocument"]["text"]
    assert "Lisbon" in best_text
    assert "Lisbon" in results[0]["text"], json.dumps(results)[:500]
    assert results[0]["scores"]["reranker"] == pytest.approx(best["relevanceScore"], abs=1e-6)
