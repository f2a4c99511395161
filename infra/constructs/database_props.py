"""What Hindsight's database is built from (:class:`DatabaseProps`): the -Data stack passes it whole to
:class:`~infra.constructs.database.VectorDatabase`, which hands it on to its login (in
:class:`~infra.constructs.database_login.DatabaseLoginProps`)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import RemovalPolicy

from infra.config import DatabaseConfig
from infra.constructs.foundation import Foundation


@dataclass(frozen=True)
class DatabaseProps:
    """The database section and what the database builds on.

    Args:
        removal_policy: What deleting the stack does to the database (the ``removal`` section's).
        parameter_prefix: Where the RDS CA bundle is published (``<prefix>/database/rds-ca-bundle``).
    """

    config: DatabaseConfig
    foundation: Foundation
    removal_policy: RemovalPolicy
    parameter_prefix: str
