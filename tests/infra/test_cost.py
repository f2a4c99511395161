"""The lean dev option (``docs/deploying.md#what-it-costs``), priced by ``make cost`` from the synthesized templates."""

from __future__ import annotations

import re

import pytest

from infra.config import OPTIONAL_ENDPOINTS, ConfigError, load_config_from_cdk_json
from infra.constructs.network import INTERFACE_ENDPOINTS
from infra.cost.pricing import Estimate, estimate, load_prices
from tests.infra.conftest import Synth, resources, synthesize
from tests.infra.eks_variant import EKS_VARIANT
from tests.infra.external_variant import EXTERNAL_IAM

#: The lean dev option as the docs write it.
LEAN = {"network.endpoint_az_count": "1", "network.optional_endpoints": "false", "database.instance_type": "t4g.small"}


@pytest.fixture(scope="module")
def lean(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-lean"), LEAN, nag=False)


def _price(synth: Synth) -> Estimate:
    return estimate(synth.templates.values(), region=synth.config.region, prices=load_prices())


def _interface_endpoints(synth: Synth) -> list[dict[str, object]]:
    return [
        e["Properties"]
        for t in synth.templates.values()
        for e in resources(t, "AWS::EC2::VPCEndpoint").values()
        if e["Properties"].get("VpcEndpointType") == "Interface"
    ]


def test_the_lean_option_puts_the_endpoints_in_one_zone_without_the_optional_ones(lean: Synth) -> None:
    endpoints = _interface_endpoints(lean)
    assert all(len(e["SubnetIds"]) == 1 for e in endpoints)  # type: ignore[arg-type]
    services = {str(e["ServiceName"]).rsplit(".", 1)[-1] for e in endpoints}
    left_out = {INTERFACE_ENDPOINTS[name].short_name for name in OPTIONAL_ENDPOINTS if name in INTERFACE_ENDPOINTS}
    assert services.isdisjoint({s.rsplit(".", 1)[-1] for s in left_out})
    assert len(endpoints) == len(INTERFACE_ENDPOINTS) - len(left_out)
    # every workload still reaches what it calls: synthesize() ran tests/infra/reach_check.py on these templates


def test_the_lean_option_costs_about_190_a_month_against_315(default: Synth, lean: Synth) -> None:
    full, small = _price(default), _price(lean)
    assert full.idle_total == pytest.approx(315, abs=10)
    assert small.idle_total == pytest.approx(175, abs=10)  # the review estimated ~$190
    assert small.idle_total < full.idle_total - 120
    assert small.one_turn_sessions_total > 3 * small.turns_total  # short sessions pay the idle timeout each
    # the per-turn figure is the same deployment's: the endpoints and the database are idle costs
    assert small.turns_total == pytest.approx(full.turns_total)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"network.endpoint_az_count": "3"}, "network.endpoint_az_count must be null (every zone) or 1 to 2"),
        ({"network.endpoint_az_count": "0"}, "network.endpoint_az_count must be null (every zone) or 1 to 2"),
        (
            {**EXTERNAL_IAM, "network.optional_endpoints": "false"},
            "network.optional_endpoints=false applies to hindsight.mode=managed only",
        ),
        (
            {
                **{k: v for k, v in EKS_VARIANT.items() if k.startswith("network.")},
                "network.create_endpoints": "false",
                "network.endpoint_az_count": "1",
            },
            "network.endpoint_az_count and network.optional_endpoints apply only with create_endpoints=true",
        ),
    ],
)
def test_the_lean_settings_are_checked_before_synthesis(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config_from_cdk_json(overrides)
