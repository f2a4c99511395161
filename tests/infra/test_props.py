"""infra.constructs.props: a construct's bad props are all named in one error."""

from __future__ import annotations

import pytest

from infra.constructs.props import PropsError, raise_if_any


def test_every_bad_check_is_named_and_only_those() -> None:
    with pytest.raises(PropsError) as err:
        raise_if_any("Stack/Plan", ("schedule is bad", True), ("retention is fine", False), ("window is bad", True))
    assert err.value.problems == ["schedule is bad", "window is bad"]
    assert str(err.value) == "Stack/Plan: invalid props: schedule is bad; window is bad"


def test_no_bad_check_raises_nothing() -> None:
    raise_if_any("Stack/Plan", ("schedule is bad", False))
    raise_if_any("Stack/Plan")
