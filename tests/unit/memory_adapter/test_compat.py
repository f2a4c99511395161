"""Drop-in compatibility with hindsight-agentcore 0.1.3: names, signatures, defaults, documented behaviours."""

from __future__ import annotations

import importlib
import inspect

import pytest

import memory_adapter
import memory_adapter.compat
from memory_adapter import (  # the prior art's import, with the package renamed
    BankResolutionError,
    HindsightAgentCoreError,
    HindsightRuntimeAdapter,
    RecallPolicy,
    RetentionPolicy,
    TurnContext,
    configure,
)
from memory_adapter.compat import format_memories_as_prior_art
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
    # The compatibility module lists them; the package resolves each too, so switching the import is enough.
    for name in PRIOR_ART_NAMES:
        assert name in memory_adapter.compat.__all__
        assert getattr(memory_adapter, name) is getattr(memory_adapter.compat, name)
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
    from memory_adapter.formatting import RecalledMemory

    text = format_memories_as_bullets(
        [RecalledMemory("likes tea", "world", "2024-01-01"), RecalledMemory("plain"), RecalledMemory("typed", "x")]
    )
    assert text == "- likes tea [world] (2024-01-01)\n\n- plain\n\n- typed [x]"


#: Every public name of hindsight-agentcore 0.1.3, by module (what its code defines or lists in ``__all__``).
PRIOR_ART_MODULES = {
    "": [*PRIOR_ART_NAMES, "__version__"],
    ".adapter": ["HindsightRuntimeAdapter", "RecallPolicy", "RetentionPolicy", "logger"],
    ".bank": ["TurnContext", "BankResolver", "default_bank_resolver", "BankResolutionError"],
    ".config": [
        "DEFAULT_HINDSIGHT_API_URL",
        "HINDSIGHT_API_URL_ENV",
        "HINDSIGHT_API_KEY_ENV",
        "HINDSIGHT_API_TOKEN_ENV",
        "HindsightAgentCoreConfig",
        "configure",
        "get_config",
        "reset_config",
    ],
    ".errors": ["HindsightAgentCoreError", "BankResolutionError"],
}


@pytest.mark.parametrize("module", list(PRIOR_ART_MODULES))
def test_every_prior_art_module_and_name_imports_under_this_package(module: str) -> None:
    # GIVEN code written for hindsight_agentcore, with the package renamed in its imports
    imported = importlib.import_module("memory_adapter" + module)
    # THEN every name it could import is there, and the same object wherever it is imported from
    for name in PRIOR_ART_MODULES[module]:
        assert getattr(imported, name) is getattr(memory_adapter, name, getattr(imported, name)), name
    assert set(PRIOR_ART_NAMES) <= set(memory_adapter.compat.__all__)


def test_there_is_no_default_url_and_its_name_says_so() -> None:
    from memory_adapter.config import DEFAULT_HINDSIGHT_API_URL

    assert configure().hindsight_api_url == DEFAULT_HINDSIGHT_API_URL == ""


async def test_the_prior_art_output_on_request(make_adapter, fake) -> None:
    # GIVEN the formatter that reproduces 0.1.3's output
    fake.banks["user:alice:agent:support"] = {"d0": {"content": "prefers\nemail"}}
    ctx = TurnContext("s", "alice", "support")
    recall = make_adapter(formatter=format_memories_as_prior_art)
    # THEN recall results are its unsanitised bullets, and a reflect answer its plain text
    assert await recall.before_turn(ctx, query="email") == "- prefers\nemail [world]"
    fake.reflect_answer = "Alice prefers email."
    reflect = make_adapter(formatter=format_memories_as_prior_art, recall_policy=RecallPolicy(mode="reflect"))
    assert await reflect.before_turn(ctx, query="email") == "Alice prefers email."
    recollection = await make_adapter(recall_policy=RecallPolicy(mode="reflect")).recall_for_turn(ctx, "email")
    assert [(type(m).__name__, m.text) for m in recollection.memories] == [("ReflectAnswer", "Alice prefers email.")]
