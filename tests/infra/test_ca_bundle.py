"""``hindsight.ca_bundle``: the private CA of Hindsight's certificate reaches every client's environment (the agent,
the replay function, the admin functions, the gateway target) as ``HINDSIGHT_CA_BUNDLE``; a bad bundle is refused
before synthesis with a clear message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.config.hindsight import MAX_CA_BUNDLE_BYTES
from memory_adapter.constants import CA_BUNDLE_ENV
from tests.infra.conftest import VARIANTS, resources, synthesize
from tests.unit.private_ca import make_private_ca


def test_every_client_of_hindsight_gets_the_private_ca(tmp_path: Path) -> None:
    ca = make_private_ca(tmp_path)
    synth = synthesize(tmp_path / "out", {**VARIANTS["jwt-import"], "hindsight.ca_bundle": str(ca.ca_file)}, nag=False)
    clients: list[tuple[str, dict[str, Any]]] = []
    for stack, template in synth.templates.items():
        for logical_id, function in resources(template, "AWS::Lambda::Function").items():
            env = function["Properties"].get("Environment", {}).get("Variables", {})
            if "HINDSIGHT_API_URL" in env:
                clients.append((f"{stack}/{logical_id}", env))
        for logical_id, runtime in resources(template, "AWS::BedrockAgentCore::Runtime").items():
            clients.append((f"{stack}/{logical_id}", runtime["Properties"]["EnvironmentVariables"]))
    names = " ".join(name for name, _ in clients)
    for part in ("RetainReplay", "Target", "Runtime"):  # the replay function, the gateway target, the agent
        assert part in names, names
    assert len(clients) >= 5  # ... and the admin functions
    for name, env in clients:
        assert env.get(CA_BUNDLE_ENV) == ca.ca_pem.strip() + "\n", name


def test_without_the_setting_no_client_gets_a_bundle(default: Any) -> None:
    for template in default.templates.values():
        for function in resources(template, "AWS::Lambda::Function").values():
            assert CA_BUNDLE_ENV not in function["Properties"].get("Environment", {}).get("Variables", {})


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("hello", "is not a PEM certificate file"),
        ("-----BEGIN CERTIFICATE-----\n" + "A" * MAX_CA_BUNDLE_BYTES, "give the root CA certificate only"),
    ],
)
def test_a_bundle_that_cannot_reach_the_clients_is_refused(tmp_path: Path, content: str | None, message: str) -> None:
    from infra.config import load_config_from_cdk_json

    bundle = tmp_path / "ca.pem"
    if content is not None:
        bundle.write_text(content)
    with pytest.raises(Exception, match=message):
        load_config_from_cdk_json({**VARIANTS["jwt-import"], "hindsight.ca_bundle": str(bundle)})
    with pytest.raises(Exception, match=r"hindsight\.ca_bundle goes with certificate_arn"):
        load_config_from_cdk_json({"hindsight.ca_bundle": str(make_private_ca(tmp_path).ca_file)})
