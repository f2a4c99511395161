"""Drop-in compatibility with hindsight-agentcore 0.1.3: names, signatures, defaults, documented behaviours."""

from __future__ import annotations

import inspect

import memory_adapter
from memory_adapter import (
    BankResolutionError,
    HindsightAgentCoreError,
    HindsightRuntimeAdapter,
    RecallPolicy,
    RetentionPolicy,
    TurnContext,
)
from memory_adapter.formatting import format_memories_as_bullets

PRIOR_ART_NAMES = [
    "HindsightRuntimeAdapter",
    "RecallPolicy",
    "RetentionPolicy",
    "TurnContext",
    "BankResolver",
    "default_bank_resolver",
    "configure",
    "get_config",
    "reset_config",
    "HindsightAgentCoreConfig",
    "HindsightAgentCoreError",
    "BankResolutionError",
]


def test_every_prior_art_name_is_exported():
    for name in PRIOR_ART_NAMES:
        assert name in memory_adapter.__all__
        assert getattr(memory_adapter, name) is not None
    assert issubclass(BankResolutionError, HindsightAgentCoreError)


def test_adapter_signature_is_a_superset():
    params = inspect.signature(HindsightRuntimeAdapter.__init__).parameters
    assert list(params)[:9] == [
        "self",
        "agent_name",
        "hindsight_api_url",
        "api_key",
        "bank_resolver",
        "recall_policy",
        "retention_policy",
        "verbose",
        "recall_timeout",
    ]
    assert params["agent_name"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.default is None for name, p in params.items() if name != "self")
    run_turn = inspect.signature(HindsightRuntimeAdapter.run_turn).parameters
    assert run_turn["query_key"].default == "prompt"
    assert run_turn["result_key"].default == "output"
    assert inspect.signature(HindsightRuntimeAdapter.after_turn).parameters["query"].default is None


def test_policies_keep_their_defaults():
    assert (RecallPolicy().mode, RecallPolicy().budget, RecallPolicy().max_tokens) == ("recall", None, None)
    policy = RetentionPolicy()
    assert policy.context_label == "agentcore-runtime:conversation_turn"
    assert (policy.extra_tags, policy.extra_metadata, policy.include_user_message) == ([], {}, True)


def test_turn_context_positional_fields_metadata_and_tags():
    ctx = TurnContext("sess", "alice", "bot", "acme", "req-1")
    assert ctx.as_metadata() == {
        "channel": "agentcore-runtime",
        "runtime_session_id": "sess",
        "agent_name": "bot",
        "user_id": "alice",
        "tenant_id": "acme",
        "request_id": "req-1",
    }
    assert ctx.as_tags() == ["tenant:acme", "user:alice", "agent:bot", "session:sess"]
    bare = TurnContext("sess", "alice", "bot")
    assert "tenant_id" not in bare.as_metadata()
    assert bare.as_tags() == ["user:alice", "agent:bot", "session:sess"]


def test_credential_is_keyword_only_and_never_printed_or_stored_as_metadata():
    ctx = TurnContext("s", "u", "a", credential="secret-jwt")
    assert "secret-jwt" not in repr(ctx)
    assert "secret-jwt" not in str(ctx.as_metadata()) + str(ctx.as_tags())
    params = inspect.signature(TurnContext).parameters
    assert params["credential"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["credential"].default is None


def test_bullets_formatter_keeps_the_prior_art_layout():
    from memory_adapter import RecalledMemory

    text = format_memories_as_bullets(
        [RecalledMemory("likes tea", "world", "2024-01-01"), RecalledMemory("plain"), RecalledMemory("typed", "x")]
    )
    assert text == "- likes tea [world] (2024-01-01)\n\n- plain\n\n- typed [x]"
