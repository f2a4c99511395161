"""The ``database`` section: Hindsight's PostgreSQL (pgvector)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from infra.config.checks import CRON, bounded, require


class DatabaseEngine(StrEnum):
    """The PostgreSQL flavour."""

    POSTGRES = "postgres"  # RDS for PostgreSQL instance
    AURORA_SERVERLESS = "aurora-serverless"  # Aurora PostgreSQL Serverless v2, for larger fleets


@dataclass(frozen=True)
class DatabaseConfig:
    """Hindsight's PostgreSQL (pgvector)."""

    engine: DatabaseEngine
    instance_type: str
    allocated_storage_gb: int
    max_allocated_storage_gb: int
    multi_az: bool
    min_capacity_acu: float
    max_capacity_acu: float
    backup_retention_days: int
    backup_plan_schedule: str
    backup_plan_retention_days: int
    rotation_days: int
    port: int
    provisioning_path: Path


_INSTANCE_TYPE = re.compile(r"^[a-z0-9]+\.[a-z0-9]+$")


def database_problems(d: DatabaseConfig) -> list[str]:
    """Hindsight's PostgreSQL."""
    errors: list[str] = []
    require(errors, bool(_INSTANCE_TYPE.match(d.instance_type)), "database.instance_type must be like t4g.medium")
    bounded(errors, "database.allocated_storage_gb", d.allocated_storage_gb, low=20, high=65536)
    require(
        errors,
        d.allocated_storage_gb <= d.max_allocated_storage_gb <= 65536,
        "database.max_allocated_storage_gb must be between allocated_storage_gb and 65536",
    )
    require(
        errors,
        0 <= d.min_capacity_acu <= d.max_capacity_acu <= 256,
        "database.min_capacity_acu/max_capacity_acu must satisfy 0 <= min <= max <= 256",
    )
    require(errors, d.max_capacity_acu >= 1, "database.max_capacity_acu must be at least 1")
    bounded(errors, "database.backup_retention_days", d.backup_retention_days, low=1, high=35)
    require(
        errors,
        bool(CRON.match(d.backup_plan_schedule)),
        "database.backup_plan_schedule must be an AWS Backup cron expression like cron(0 5 * * ? *) (UTC)",
    )
    bounded(errors, "database.backup_plan_retention_days", d.backup_plan_retention_days, low=1, high=36500)
    bounded(errors, "database.rotation_days", d.rotation_days, low=1, high=365)
    bounded(errors, "database.port", d.port, low=1150, high=65535)
    return errors
