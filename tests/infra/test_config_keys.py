"""Configuration keys: a key that is no setting (a typo in cdk.json or a -c option) is refused with the closest
setting's name, CDK's own context keys are left alone, and a section that is not an object is one problem."""

from __future__ import annotations

import pytest

from infra.config import ConfigError, load_config_from_cdk_json
from tests.infra.config_helpers import load_config_from_cdk_json_with_section_key


def _load(**overrides: str):
    return load_config_from_cdk_json(overrides)


def test_unknown_settings_are_named_and_null_unsets_an_optional_one() -> None:
    with pytest.raises(ConfigError, match=r"auth\.mod is not a setting"):
        load_config_from_cdk_json_with_section_key("auth", "mod", "jwt")
    cfg = _load(**{"hindsight.image_digest": "null", "alarms.email": "null"})
    assert cfg.hindsight.image_digest is None
    assert cfg.alarms.email is None


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (
            "hindsight.cpuu",
            "hindsight.cpuu is not a setting: did you mean hindsight.cpu? Otherwise remove the -c option",
        ),
        ("databse.port", "databse.port is not a setting: did you mean database.port?"),
        ("regin", "regin is not a setting: did you mean region?"),
        ("colour", "colour is not a setting: check its spelling or remove the -c option"),
        ("missions.assistant", "missions.assistant is not a setting"),  # missions are set in cdk.json only
        ("hindsight", "hindsight is a section, not a setting: set one of its keys with -c hindsight.<key>=<value>"),
    ],
)
def test_a_mistyped_command_line_key_is_refused_not_ignored(option: str, expected: str) -> None:
    # GIVEN a -c option whose key is no setting (a typo, or a section): WHEN the configuration loads
    with pytest.raises(ConfigError) as err:
        _load(**{option: "2048"})
    # THEN it is refused, named, with the setting it was probably meant to be (before: silently ignored)
    assert [e for e in err.value.errors if e.startswith(expected)], err.value.errors


def test_the_keys_cdk_itself_puts_in_context_are_not_settings_to_check() -> None:
    # GIVEN the context the CDK CLI adds (feature flags, its own aws:cdk: keys, cached lookups) and the env's name
    cfg = _load(
        **{
            "aws:cdk:enable-path-metadata": "true",
            "@aws-cdk/core:bootstrapQualifier": "abc",
            "availability-zones:account=123456789012:region=us-east-1": "[]",
            "env": "prod",
            "hindsight.certificate_arn": "arn:aws:acm:us-east-1:123456789012:certificate/abc",
            "hindsight.domain_name": "memory.internal.example.com",
        }
    )
    assert cfg.env_name == "prod"


def test_a_section_that_is_no_object_in_cdk_json_is_named_once() -> None:
    # GIVEN cdk.json's defaults.hindsight replaced by a number (the dev env still overlays two of its keys)
    with pytest.raises(ConfigError) as err:
        load_config_from_cdk_json_with_section_key("hindsight", None, 3)
    # THEN the one problem says so (before: 25 "hindsight.<key> is required" lines, and not the cause)
    assert err.value.errors == ["hindsight must be a section (a JSON object) in cdk.json context.defaults, got int"]
