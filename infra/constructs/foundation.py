"""What every stack after ``-Network`` builds on, handed to the constructs as one object."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_kms as kms

from infra.constructs.alerts import Alerts
from infra.constructs.network import Network


@dataclass(frozen=True)
class Foundation:
    """What every later stack builds on: the network, the key of every log group, the topic every alarm notifies."""

    network: Network
    logs_key: kms.IKey
    alerts: Alerts
