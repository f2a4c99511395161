"""Cold start: importing the package, or the parts other components import alone, loads nothing heavy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memory_adapter

PACKAGE_README = Path(__file__).resolve().parents[3] / "layers" / "memory_adapter" / "README.md"
HEAVY = ("hindsight_client", "pydantic", "boto3", "aiohttp", "jwt", "urllib3")


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # this checkout, not an installed copy
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env).stdout
    modules: list[str] = json.loads(out)
    return modules


def test_package_import_is_light():
    loaded = _loaded_after("import memory_adapter")
    assert not [m for m in (*HEAVY, "asyncio", "http.client") if m in loaded]


def test_bank_ids_import_is_light():
    loaded = _loaded_after("import memory_adapter.identity.bank_ids")
    assert not [m for m in (*HEAVY, "asyncio") if m in loaded]


@pytest.mark.parametrize(
    "module",
    [
        "memory_adapter.identity",
        "memory_adapter.identity.settings",
        "memory_adapter.identity.caller",
        "memory_adapter.settings_reader",
        "runtime_handler.settings",
        "hindsight_isolation.settings",
    ],
)
def test_the_identity_contract_and_the_settings_need_only_the_standard_library(module: str):
    # The CDK app imports these to name and check settings; the Hindsight extension imports them at start-up.
    loaded = _loaded_after(f"import {module}")
    assert not [m for m in (*HEAVY, "cryptography", "asyncio") if m in loaded]


@pytest.mark.parametrize("module", ["memory_adapter.missions", "hindsight_isolation.route"])
def test_the_missions_value_loads_no_wire(module: str):
    # Hindsight's isolation extension reads the missions (the value) without the adapter's HTTP client (the applier).
    loaded = _loaded_after(f"import {module}")
    assert not [m for m in ("memory_adapter._hindsight_api", "memory_adapter.transport", "http.client") if m in loaded]


def test_the_verifier_loads_pyjwt_but_not_boto3():
    loaded = _loaded_after("import memory_adapter.identity.verifier")
    assert "jwt" in loaded
    assert not [m for m in ("boto3", "botocore", "hindsight_client", "pydantic", "asyncio") if m in loaded]


def test_adapter_import_does_not_load_hindsight_client():
    loaded = _loaded_after("from memory_adapter import HindsightRuntimeAdapter, TurnContext")
    assert not [m for m in HEAVY if m in loaded]


def test_lazy_exports_resolve_and_unknown_names_fail():
    for name in memory_adapter.__all__:
        assert getattr(memory_adapter, name) is not None
    with pytest.raises(AttributeError, match="DoesNotExist"):
        memory_adapter.DoesNotExist  # noqa: B018
    assert set(dir(memory_adapter)) == set(memory_adapter.__all__)


def _documented_public_face() -> set[str]:
    """The names the package README's "Package layout" says the top level exports."""
    text = " ".join(PACKAGE_README.read_text(encoding="utf-8").split())
    listed = text.split("the handful a turn needs:", 1)[1].split(";", 1)[0]
    return set(re.findall(r"`(\w+)`", listed))


def test_the_public_face_is_what_a_turn_needs_and_the_rest_has_a_module_path():
    # GIVEN the package's public names
    public = set(memory_adapter.__all__)
    # THEN they are the handful the README documents for a turn (the prior art's live in memory_adapter.compat)
    assert len(public) <= 8
    assert public == _documented_public_face() | {"__version__"}
    # AND a name that left the top level is reached by its module, not here
    with pytest.raises(AttributeError, match="RetainRecord"):
        memory_adapter.RetainRecord  # noqa: B018


def test_a_prior_art_import_does_not_load_the_adapter_until_a_name_is_used():
    loaded = _loaded_after("import memory_adapter\nmemory_adapter.TurnContext")
    assert "memory_adapter.compat" not in loaded
    loaded = _loaded_after("from memory_adapter import configure")
    assert not [m for m in HEAVY if m in loaded]


def test_an_adapter_spooling_to_a_queue_loads_boto3_only_when_it_first_spools():
    loaded = _loaded_after(
        "from memory_adapter import HindsightRuntimeAdapter\n"
        "HindsightRuntimeAdapter('a', hindsight_api_url='http://h', "
        "spool_queue_url='https://sqs.us-east-1.amazonaws.com/123456789012/q')"
    )
    assert not [m for m in ("boto3", "botocore", "hindsight_client") if m in loaded]


FRAMEWORKS = ("strands", "langgraph", "langchain_core", "bedrock_agentcore", "starlette")


@pytest.mark.parametrize(
    "statement",
    [
        "import memory_adapter.agentcore",
        "import memory_adapter.agentcore.settings",
        "import memory_adapter.integrations",
        "from memory_adapter.agentcore import AgentCoreMemory, MemoryTurn",
    ],
)
def test_the_wiring_and_the_integrations_load_no_framework_until_used(statement: str):
    # The extras are optional: the wiring's settings are read by the CDK app, and an agent pays for its framework only.
    loaded = _loaded_after(statement)
    assert not [m for m in (*FRAMEWORKS, "hindsight_client", "boto3") if m in loaded]
