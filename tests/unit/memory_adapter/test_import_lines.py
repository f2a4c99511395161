"""Import history: each JSONL line is checked (with its line number) before anything is sent; ids are stable."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memory_adapter.admin.errors import InvalidRequestError
from memory_adapter.admin.importer import import_turns, read_turns
from memory_adapter.identity import format_bank_id


def line(**fields) -> str:
    base = {"user": "user-alex", "agent": "support", "time": "2024-05-08T13:56:00+02:00", "user_text": "I moved."}
    return json.dumps({**base, **fields})


def test_a_valid_line_names_its_bank_and_keeps_its_time_in_utc():
    (turn,) = read_turns([line(tenant="acme", agent_text="Noted.", session="crm-1")])
    assert turn.caller.bank_id == format_bank_id(user="user-alex", agent="support", tenant="acme")
    assert turn.occurred_at == datetime(2024, 5, 8, 11, 56, tzinfo=UTC)
    assert (turn.agent_text, turn.session, turn.line) == ("Noted.", "crm-1", 1)


def test_the_document_id_is_stable_and_depends_on_bank_and_content():
    (a,) = read_turns([line()])
    (again,) = read_turns([line()])
    (other_user,) = read_turns([line(user="user-bo")])
    (other_text,) = read_turns([line(user_text="I moved again.")])
    assert a.document_id == again.document_id
    assert len({a.document_id, other_user.document_id, other_text.document_id}) == 3


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "line 2: not JSON"),
        ("[1, 2]", "line 2: not a JSON object"),
        (line(user=""), "line 2: missing user"),
        (
            line(time="2024-05-08T13:56:00"),
            "line 2: time '2024-05-08T13:56:00' has no UTC offset: write it with one, e.g. 2024-05-08T13:56:00+00:00",
        ),
        (line(time="yesterday"), "line 2: time 'yesterday' is not ISO 8601"),
        (line(time="2999-01-01T00:00:00+00:00"), "in the future"),
        (line(user_text=5), "line 2: user_text must be a string"),
        (line(role="user"), "line 2: unknown field(s) role"),
        (line(user_text="   "), "line 2: user_text is blank"),
        (line(user="x" * 5000), "line 2: identity"),
    ],
)
def test_a_bad_line_is_reported_with_its_number_and_nothing_is_read(raw, message):
    with pytest.raises(InvalidRequestError, match="nothing was imported") as caught:
        read_turns([line(), raw, "", line(user_text="fine")])
    assert message in str(caught.value)
    assert "1 bad line(s)" in str(caught.value)


def test_every_bad_line_is_listed_in_one_message():
    with pytest.raises(InvalidRequestError, match=r"2 bad line\(s\).*line 1: .*line 3: "):
        read_turns(["{", line(), "[]"])


def test_turns_already_stored_or_repeated_in_the_file_are_not_sent_again():
    turns = read_turns([line(), line(), line(user_text="New."), line(user="user-bo")])
    stored = {turns[0].caller.bank_id: [turns[0].document_id]}
    sent: list[int] = []

    def retain(turn) -> bool:
        sent.append(turn.line)
        return True

    summary = import_turns(turns, stored=lambda bank: stored.get(bank, []), retain=retain)
    assert sent == [3, 4]
    assert (summary["imported"], summary["skipped"], summary["failed"], summary["banks"]) == (2, 2, 0, 2)


def test_a_dry_run_sends_nothing_and_a_failed_turn_is_counted_with_its_line():
    turns = read_turns([line(), line(user_text="Other.")])
    dry = import_turns(turns, stored=lambda _b: [], retain=lambda _t: pytest.fail("sent"), dry_run=True)
    assert (dry["would_import"], dry["skipped"]) == (2, 0)
    wet = import_turns(turns, stored=lambda _b: [], retain=lambda t: t.line == 1)
    assert (wet["imported"], wet["failed"], wet["failed_lines"]) == (1, 1, [2])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "line 2: not JSON (nested too deeply)"),
        (line(user_text="a\ud800b"), "line 2: user_text is not valid Unicode text"),
        (line(agent_text="\udfff"), "line 2: agent_text is not valid Unicode text"),
        (line(session="s\ud800"), "line 2: session is not valid Unicode text"),
        (line(session="s\x00"), "line 2: session must not contain NUL"),
        (line(user="user-\x00alex"), "line 2: user must not contain NUL"),
        (line(time="0001-01-01T00:00:00+23:59"), "line 2: time 0001-01-01T00:00:00+23:59 is out of range"),
        (
            line().replace('"user": "user-alex"', '"user": "user-alex", "user": "user-bo"'),
            "line 2: field user given twice",
        ),
    ],
)
def test_a_crafted_line_is_a_reported_bad_line_not_a_crash(raw, message):
    # a crash here (or, for a turn in a later bank, in the middle of the import) left a traceback and half a file
    with pytest.raises(InvalidRequestError, match="nothing was imported") as caught:
        read_turns([line(), raw, line(user_text="fine")])
    assert message in str(caught.value)
