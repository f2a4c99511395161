"""The Deploying page (docs/deploying.md) keeps up with the configuration and names what a first deploy needs."""

from __future__ import annotations

import json

from tests.infra.conftest import ROOT

DEPLOYING = (ROOT / "docs" / "deploying.md").read_text()


def test_every_setting_is_in_the_configuration_reference() -> None:
    defaults = json.loads((ROOT / "cdk.json").read_text())["context"]["defaults"]
    settings = [k for k, v in defaults.items() if not isinstance(v, dict) or k == "tags"]
    settings += [
        f"{section}.{key}"
        for section, values in defaults.items()
        if isinstance(values, dict) and section != "tags"
        for key in values
    ]
    missing = [s for s in settings if f"`{s}`" not in DEPLOYING and f"`{s}`," not in DEPLOYING]
    assert missing == []


def test_the_prerequisites_say_how_to_check_or_enable_each() -> None:
    for command in (
        "aws iam create-service-linked-role --aws-service-name network.bedrock-agentcore.amazonaws.com",
        "aws xray update-trace-segment-destination --destination CloudWatchLogs",
        "aws ec2 describe-availability-zones",
        "npx cdk bootstrap",
        "make smoke",
    ):
        assert command in DEPLOYING, command


def test_the_infra_map_names_every_construct_module() -> None:
    # A newcomer finds each AWS resource in one step: every construct module has its row (or mention) there.
    infra_map = (ROOT / "infra" / "README.md").read_text()
    modules = sorted(p.name for p in (ROOT / "infra" / "constructs").glob("*.py") if p.name != "__init__.py")
    missing = [m for m in modules if f"constructs/{m}" not in infra_map and f"`{m}`" not in infra_map]
    assert missing == []


def test_every_c_option_the_docs_show_names_a_setting() -> None:
    """A ``-c key=value`` a reader copies from the docs must name a setting: the app refuses any other key."""
    import re

    from infra.config.loader import SECTIONS, TOP_LEVEL, section_keys

    known = {"env", *TOP_LEVEL, *(f"{s}.{key}" for s, cls in SECTIONS.items() for key in section_keys(cls))}
    pages = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "examples").glob("*/README.md")),
    ]
    shown = {
        f"{page.relative_to(ROOT)}: {key}"
        for page in pages
        for key in re.findall(r"(?<![\w-])-c ([a-z_]+(?:\.[a-z_]+)?)=", page.read_text())
        # the syntax's own placeholders, and PostgreSQL's -c in docs/local.md (pg_ctl's, not ours)
        if key not in known and key not in ("key", "section.key", "listen_addresses")
    }
    assert shown == set()
