"""The Availability Zone ids in which AgentCore Runtime accepts VPC subnets, per region: one table, one source.

Source: Amazon Bedrock AgentCore Developer Guide, "Configure Amazon Bedrock AgentCore Runtime and tools for VPC",
section "Supported Availability Zones"
(https://docs.aws.amazon.com/bedrock-agentcore/latest/devguide/agentcore-vpc.html). A subnet in any other zone makes
the runtime's creation fail and the stack roll back, so the configuration refuses it before synthesis.

Only regions whose list this project has checked against that page are listed. For a region added later (or a
list that grew), set ``network.supported_az_ids`` to the ids the page lists for your region: it replaces this
table's entry.
"""

from __future__ import annotations

from collections.abc import Mapping

SOURCE = "https://docs.aws.amazon.com/bedrock-agentcore/latest/devguide/agentcore-vpc.html"

SUPPORTED_AZ_IDS: Mapping[str, frozenset[str]] = {
    "us-east-1": frozenset({"use1-az1", "use1-az2", "use1-az4"}),
}


def supported_az_ids(region: str, override: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The AZ ids AgentCore supports in region (the override wins), or None when neither knows the region."""
    if override:
        return frozenset(override)
    return SUPPORTED_AZ_IDS.get(region)
