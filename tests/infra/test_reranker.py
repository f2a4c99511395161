"""``hindsight.reranker_model``: null keeps Hindsight's fused ranks (``rrf``); a Bedrock rerank model reaches the
Hindsight tasks as the ``litellm-sdk`` reranker, and their role may call exactly that model (the request path itself
runs against the stand-in in tests/integration/test_bedrock_rerank.py)."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from infra.config import ConfigError, load_config_from_cdk_json
from infra.constructs.hindsight_task import RERANK_CANDIDATES, bedrock_models, grant_bedrock, reranker_environment


def _statements(reranker: str | None) -> list[dict[str, Any]]:
    overrides = {"hindsight.reranker_model": reranker} if reranker else {}
    config = load_config_from_cdk_json(overrides).hindsight
    stack = Stack(App(), "Grants")
    role = iam.Role(stack, "Task", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    grant_bedrock(stack, role, config)
    (policy,) = Template.from_stack(stack).find_resources("AWS::IAM::Policy").values()
    statements: list[dict[str, Any]] = policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def test_by_default_there_is_no_reranker_and_no_rerank_permission() -> None:
    config = load_config_from_cdk_json({}).hindsight
    assert config.reranker_model is None
    assert reranker_environment(config) == {"HINDSIGHT_API_RERANKER_PROVIDER": "rrf"}
    assert not [s for s in _statements(None) if "bedrock:Rerank" in str(s["Action"])]


def test_a_bedrock_rerank_model_becomes_the_litellm_sdk_reranker_with_its_grants() -> None:
    config = load_config_from_cdk_json({"hindsight.reranker_model": "bedrock/amazon.rerank-v1:0"}).hindsight
    env = reranker_environment(config)
    assert env["HINDSIGHT_API_RERANKER_PROVIDER"] == "litellm-sdk"
    assert env["HINDSIGHT_API_RERANKER_LITELLM_SDK_MODEL"].startswith("bedrock/arn:")
    assert env["HINDSIGHT_API_RERANKER_LITELLM_SDK_MODEL"].endswith("::foundation-model/amazon.rerank-v1:0")
    assert env["HINDSIGHT_API_RERANKER_MAX_CANDIDATES"] == str(RERANK_CANDIDATES)
    assert "amazon.rerank-v1:0" in bedrock_models(config)
    statements = _statements("bedrock/amazon.rerank-v1:0")
    (rerank,) = [s for s in statements if s["Action"] == "bedrock:Rerank"]
    assert rerank["Resource"] == "*"  # Rerank takes no resource; the model is scoped by InvokeModel below
    invoke = " ".join(str(s["Resource"]) for s in statements if "bedrock:InvokeModel" in str(s["Action"]))
    assert "foundation-model/amazon.rerank-v1:0" in invoke


def test_a_reranker_that_is_not_on_bedrock_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"hindsight.reranker_model must be bedrock/<rerank model id>"):
        load_config_from_cdk_json({"hindsight.reranker_model": "cohere/rerank-english-v3.0"})
