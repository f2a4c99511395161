"""Props checked in the constructor: every problem of one construct's props is collected, then raised once."""

from __future__ import annotations

from collections.abc import Sequence


class PropsError(ValueError):
    """A construct was given props it cannot be built from; ``problems`` lists every reason (so does the message)."""

    def __init__(self, construct_path: str, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__(f"{construct_path}: invalid props: " + "; ".join(self.problems))


def raise_if_invalid(construct_path: str, problems: Sequence[str]) -> None:
    """Raise :class:`PropsError` when ``problems`` is not empty."""
    if problems:
        raise PropsError(construct_path, problems)


def raise_if_any(construct_path: str, *checks: tuple[str, bool]) -> None:
    """Raise :class:`PropsError` naming the problem of each ``(problem, bad)`` check that is bad."""
    raise_if_invalid(construct_path, [problem for problem, bad in checks if bad])
