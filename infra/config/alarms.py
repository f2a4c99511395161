"""The ``alarms`` section: where the stacks' alarms notify."""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.config.checks import require


@dataclass(frozen=True)
class AlarmsConfig:
    """Where the stacks' alarms notify (an SNS topic is always created; the e-mail subscription is optional)."""

    email: str | None


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.IGNORECASE)


def alarms_problems(a: AlarmsConfig) -> list[str]:
    """Where the alarms notify."""
    errors: list[str] = []
    require(errors, a.email is None or bool(_EMAIL.match(a.email)), "alarms.email must be an e-mail address (or null)")
    return errors
