"""What a memory construct is built from: Hindsight run by this app (:class:`MemoryServiceProps`) or the customer's
(:class:`ExternalMemoryProps`); each stack passes its construct's props whole."""

from __future__ import annotations

from dataclasses import dataclass

from infra.config import AuthConfig, EksConfig, FadingConfig, HindsightConfig, LayerConfig
from infra.constructs.database import VectorDatabase
from infra.constructs.foundation import Foundation
from infra.constructs.identity import Identity
from infra.constructs.memory_events import MemoryEvents
from memory_adapter.missions import Mission


@dataclass(frozen=True)
class MemoryProps:
    """What both kinds of Hindsight need.

    Args:
        auth: How callers authenticate (the isolation extension, or the probe, checks their tokens as the agent does).
        agent_name: The agent whose banks an IAM-mode agent key opens (the probe's canary is another agent's).
    """

    config: HindsightConfig
    auth: AuthConfig
    agent_name: str
    foundation: Foundation


@dataclass(frozen=True)
class MemoryServiceProps(MemoryProps):
    """Hindsight on ECS Fargate or EKS, its data in the -Data stack.

    Args:
        database: Hindsight's PostgreSQL.
        identity: The token issuer's mirrored keys (user-token modes; ``None`` with ``auth.mode=iam``).
        parameter_prefix: Where the service publishes its URL for the later stacks (SSM).
        eks: The customer's cluster (``hindsight.platform=eks``).
        events: The -Data stack's memory events (``events.enabled``): every task's extension sends to its queue.
        fading: Fading and reinforcement of memories (the ``fading`` section), applied by every task's extension.
        mission: What the agent's memory keeps (``missions.<agent name>``), applied by every task's extension to
            the agent's banks (a user's token may set no bank setting).
    """

    database: VectorDatabase
    identity: Identity | None
    parameter_prefix: str
    eks: EksConfig | None = None
    events: MemoryEvents | None = None
    fading: FadingConfig | None = None
    mission: Mission | None = None


@dataclass(frozen=True)
class ExternalMemoryProps(MemoryProps):
    """The customer's Hindsight (``hindsight.mode=external``) and the probe that checks it at deploy time.

    Args:
        layer: The memory adapter layer the probe runs on.
    """

    layer: LayerConfig
