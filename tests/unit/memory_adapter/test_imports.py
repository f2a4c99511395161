"""Cold start: importing the package (or bank_ids) loads nothing heavy."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import memory_adapter

HEAVY = ("hindsight_client", "pydantic", "boto3", "aiohttp", "jwt", "urllib3")


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    modules: list[str] = json.loads(out)
    return modules


def test_package_import_is_light():
    loaded = _loaded_after("import memory_adapter")
    assert not [m for m in (*HEAVY, "asyncio", "http.client") if m in loaded]


def test_bank_ids_import_is_light():
    loaded = _loaded_after("import memory_adapter.bank_ids")
    assert not [m for m in (*HEAVY, "asyncio") if m in loaded]


def test_adapter_import_does_not_load_hindsight_client():
    loaded = _loaded_after("from memory_adapter import HindsightRuntimeAdapter, TurnContext")
    assert not [m for m in HEAVY if m in loaded]


def test_lazy_exports_resolve_and_unknown_names_fail():
    for name in memory_adapter.__all__:
        assert getattr(memory_adapter, name) is not None
    with pytest.raises(AttributeError, match="DoesNotExist"):
        memory_adapter.DoesNotExist  # noqa: B018
    assert set(dir(memory_adapter)) == set(memory_adapter.__all__)
