"""The knowledge-update set is generated the same way every time, says each change later than the fact it changes, and
its scoring tells current-first from stale-first."""

from __future__ import annotations

from bench.eval.updates import CHANGES, Change, judge, scenario


def test_the_set_is_deterministic_and_every_change_comes_after_its_fact() -> None:
    users = scenario(users=3, seed=5)
    assert [u.sessions for u in users] == [u.sessions for u in scenario(users=3, seed=5)]
    for user in users:
        assert [c.kind for c in user.changes] == [kind for kind, *_ in CHANGES]
        said = [text for session in user.sessions for text in session]
        for change in user.changes:
            assert change.before != change.after
            assert said.index(change.before) < said.index(change.after)
            assert change.after in user.sessions[-1]


def test_scoring_tells_current_first_from_stale_first() -> None:
    change = Change("moved", "I live in Berlin.", "I moved from Berlin to Lisbon.", "Where do I live?")
    block = (
        "- I moved from Berlin to Lisbon. [world]\n- I live in Berlin. [world] (2026-03-02) (superseded on 2026-05-04)"
    )
    assert judge(["I moved from Berlin to Lisbon.", "I live in Berlin."], change, block) == {
        "current_found": True,
        "current_first": True,
        "stale_found": True,
        "stale_marked": True,
    }
    assert judge(["I live in Berlin.", "I moved from Berlin to Lisbon."], change)["current_first"] is False
    assert judge(["I moved from Berlin to Lisbon."], change)["current_first"] is True
    assert judge(["I live in Berlin."], change)["current_found"] is False
    unmarked = "- I moved from Berlin to Lisbon. [world] (superseded on 2026-05-04)\n- I live in Berlin. [world]"
    assert judge(["I moved from Berlin to Lisbon.", "I live in Berlin."], change, unmarked)["stale_marked"] is False
