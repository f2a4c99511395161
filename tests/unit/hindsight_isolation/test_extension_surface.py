"""The extension classes against the installed Hindsight's extension interfaces (run in the server's virtualenv).

These guard upgrades: if Hindsight adds a validation hook we do not override, its accept-everything default would
silently open an operation, so the test fails until the hook is mapped (or consciously listed as inherited).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from hindsight_isolation.settings import (
    ENV_HTTP_EXTENSION,
    ENV_OPERATION_VALIDATOR_EXTENSION,
    SERVER_REQUIRED_ENV,
)

REPO = Path(__file__).resolve().parents[3]
HINDSIGHT_PYTHON = Path(os.environ.get("HINDSIGHT_VENV", REPO / ".venv-hindsight")) / "bin" / "python"

#: Hooks of the base class we deliberately leave to its default, and why.
INHERITED = {
    "resolve_tag_scope": "no read scoping: a whole bank belongs to one owner (reads are refused by the hooks)",
}

_PROBE = textwrap.dedent(
    """
    import inspect, json, os, sys
    from hindsight_api.extensions.operation_validator import OperationValidatorExtension
    from hindsight_api.extensions.tenant import TenantExtension
    from hindsight_isolation.validator import IsolationOperationValidator
    from hindsight_isolation.tenant import IsolationTenantExtension

    def hooks(base):
        return sorted(
            name for name, fn in inspect.getmembers(base, inspect.iscoroutinefunction)
            if not name.startswith(("on_", "_")) or name.startswith(("on_startup",))
        )

    overridden = lambda cls, base: sorted(
        n for n in hooks(base) if getattr(cls, n) is not getattr(base, n)
    )
    result = {
        "validator_hooks": hooks(OperationValidatorExtension),
        "validator_overridden": overridden(IsolationOperationValidator, OperationValidatorExtension),
        "tenant_overridden": overridden(IsolationTenantExtension, TenantExtension),
    }
    errors = {}
    for name, env in json.loads(sys.argv[1]).items():
        os.environ.clear(); os.environ.update(env)
        try:
            IsolationTenantExtension({"jwt_issuer": "https://i", "jwt_jwks_url": "https://i/jwks",
                                      "jwt_allowed_clients": "app"})
            errors[name] = None
        except ValueError as exc:
            errors[name] = str(exc)
    result["startup"] = errors
    print(json.dumps(result))
    """
)

_REQUIRED = dict(SERVER_REQUIRED_ENV)


@pytest.fixture(scope="module")
def surface() -> dict[str, object]:
    if not HINDSIGHT_PYTHON.exists():
        pytest.fail(f"the Hindsight virtualenv is missing ({HINDSIGHT_PYTHON}): run `make hindsight-venv`")
    cases = {
        "ok": dict(_REQUIRED),
        "no_validator": {k: v for k, v in _REQUIRED.items() if k != ENV_OPERATION_VALIDATOR_EXTENSION},
        "no_guard": {k: v for k, v in _REQUIRED.items() if k != ENV_HTTP_EXTENSION},
        "mcp_token": {**_REQUIRED, "HINDSIGHT_API_MCP_AUTH_TOKEN": "legacy"},
        "metrics_bank_ids": {**_REQUIRED, "HINDSIGHT_API_METRICS_INCLUDE_BANK_ID": "true"},
    }
    base_env = {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "layers/memory_adapter/src")])}
    for env in cases.values():
        env.update(base_env)
    completed = subprocess.run(
        [str(HINDSIGHT_PYTHON), "-c", _PROBE, json.dumps(cases)],
        capture_output=True,
        text=True,
        check=False,
        env={**base_env, "PATH": os.environ.get("PATH", "")},
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    parsed: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return parsed


def test_every_validation_hook_is_overridden_or_consciously_inherited(surface: dict[str, object]) -> None:
    hooks = set(surface["validator_hooks"])  # type: ignore[call-overload]
    overridden = set(surface["validator_overridden"])  # type: ignore[call-overload]
    missing = hooks - overridden - set(INHERITED) - {"on_startup"}
    assert not missing, f"Hindsight hooks this package does not handle: {sorted(missing)}"
    assert {"precheck", "validate_retain", "validate_bank_read", "filter_bank_list", "filter_mcp_tools"} <= overridden


def test_tenant_extension_authenticates_both_transports(surface: dict[str, object]) -> None:
    overridden = set(surface["tenant_overridden"])  # type: ignore[call-overload]
    assert {"authenticate", "authenticate_mcp", "list_tenants"} <= overridden


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("no_validator", "HINDSIGHT_API_OPERATION_VALIDATOR_EXTENSION must be"),
        ("no_guard", "HINDSIGHT_API_HTTP_EXTENSION must be"),
        ("mcp_token", "HINDSIGHT_API_MCP_AUTH_TOKEN must be unset"),
        ("metrics_bank_ids", "HINDSIGHT_API_METRICS_INCLUDE_BANK_ID must be off"),
    ],
)
def test_server_settings_that_undo_isolation_stop_start_up(surface: dict[str, object], case: str, message: str) -> None:
    startup = surface["startup"]
    assert isinstance(startup, dict)
    assert startup["ok"] is None
    assert message in startup[case]
