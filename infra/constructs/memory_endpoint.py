"""MemoryEndpoint: what every client of Hindsight needs from it, whoever runs the server.

:class:`~infra.constructs.memory_service.MemoryService` (this app's Hindsight) and
:class:`~infra.constructs.external_memory.ExternalMemory` (``hindsight.mode=external``) both provide it; the agent,
the gateway target, the retain replay function and the memory admin functions take nothing else.
"""

from __future__ import annotations

from typing import Protocol

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct


class ConnectableConstruct(Protocol):
    """A construct with security groups (the agent runtime)."""

    @property
    def connections(self) -> ec2.Connections:
        """The construct's security groups."""


class MemoryEndpoint(Protocol):
    """Hindsight as its clients see it."""

    @property
    def ca_bundle(self) -> str | None:
        """The PEM of the private CA every client trusts besides the default store (each client's settings field
        ``ca_bundle``, ``HINDSIGHT_CA_BUNDLE``), or None."""

    @property
    def operator_key_secret_arn(self) -> str:
        """The operator key's ARN (the admin functions' environment)."""

    @property
    def agent_key_secret_arn(self) -> str | None:
        """The agent key's ARN (IAM mode), else None."""

    def url_in(self, scope: Construct) -> str:
        """Hindsight's URL as scope's stack reads it."""

    def allow_from(self, peer: ConnectableConstruct) -> None:
        """Let peer reach Hindsight."""

    def grant_agent_key_read(self, grantee: iam.IGrantable) -> None:
        """Let grantee read the agent key (IAM mode; nothing otherwise)."""

    def grant_operator_key_read(self, grantee: iam.IGrantable) -> None:
        """Let grantee (never the agent) read the operator key."""
