"""A recalled memory that a later statement supersedes follows it, marked with the day it was superseded."""

from __future__ import annotations

from memory_adapter.currency import Statement, current_first, statement_of
from memory_adapter.formatting import RecalledMemory, format_memories_as_data


def _m(text: str, day: int) -> RecalledMemory:
    return RecalledMemory(text, "world", f"2026-03-{day:02d}T10:00:00+00:00", id=text)


def test_statements_of_one_attribute_are_read_in_the_first_and_the_third_person() -> None:
    assert statement_of("I live in Berlin.") == Statement("i", "lives in", "berlin")
    assert statement_of("I moved from Berlin to Lisbon.") == Statement("i", "lives in", "lisbon")
    assert statement_of("Maria moved to Lisbon. | When: 01 May 2023") == Statement("maria", "lives in", "lisbon")
    assert statement_of("I started a new job as a teacher.") == Statement("i", "works as", "a teacher")
    assert statement_of("Actually, my phone number is 555-0199.") == Statement("i", "phone number", "555-0199")
    assert statement_of("My favourite colour is now green.") == Statement("i", "favourite colour", "green")
    assert statement_of("I no longer live in Berlin.") == Statement("i", "lives in", None)
    # a being has many attributes at once, and a statement of no such form is none
    assert statement_of("My sister is a nurse.") is None
    assert statement_of("My sister is visiting next week.") is None
    assert statement_of("Anna loves hiking.") is None
    # a preference in a context, and any statement of the user's own that a negation ends
    assert statement_of("These days I prefer black coffee in the morning.") == Statement(
        "i", "prefers in the morning", "black coffee"
    )
    assert statement_of("I volunteer at the library.") == Statement("i", "volunteer at the library", "yes")
    assert statement_of("I no longer volunteer at the library.") == Statement("i", "volunteer at the library", None)


def test_the_current_statement_comes_first_and_the_stale_one_follows_it_marked() -> None:
    # GIVEN recall ranked the stale residence first, an unrelated memory, then the move
    berlin, tea, lisbon = _m("I live in Berlin.", 1), _m("I like tea.", 2), _m("I moved to Lisbon.", 20)
    ordered = current_first([berlin, tea, lisbon])
    # THEN the move takes the stale one's rank, the stale one follows it marked, the rest keeps its order
    assert [m.text for m in ordered] == ["I moved to Lisbon.", "I live in Berlin.", "I like tea."]
    assert [m.superseded_on for m in ordered] == [None, "2026-03-20", None]
    block = format_memories_as_data(ordered)
    assert "- I live in Berlin. [world] (2026-03-01 10:00) (superseded on 2026-03-20)" in block
    assert block.index("Lisbon") < block.index("Berlin")


def test_nothing_moves_without_two_values_of_one_attribute() -> None:
    same = [_m("I live in Berlin.", 1), _m("I like tea.", 2), _m("I live in Berlin.", 9)]
    assert current_first(same) == same  # a repetition supersedes nothing
    others = [_m("My sister is a nurse.", 1), _m("My sister is in Rome.", 5), _m("Maria lives in Oslo.", 6)]
    assert current_first(others) == others
    assert current_first([_m("My phone number is 1.", 3), _m("Anna's phone number is 2.", 5)])[0].superseded_on is None


def test_a_correction_and_a_negation_supersede_too() -> None:
    ordered = current_first([_m("My phone number is 0151 1.", 1), _m("Actually, my phone number is 0160 2.", 2)])
    assert [(m.text[-7:], m.superseded_on) for m in ordered] == [("0160 2.", None), ("0151 1.", "2026-03-02")]
    ordered = current_first([_m("I work at Acme.", 1), _m("I don't work at Acme anymore.", 4)])
    assert ordered[1].superseded_on == "2026-03-04"


def test_a_later_statement_said_in_other_words_is_searched_for_and_added() -> None:
    from memory_adapter.currency import CHANGE_QUERIES, follow_up_queries, with_later

    acme, tea = _m("I work at Acme.", 1), _m("I like tea.", 2)
    # GIVEN the question's search found the old employer only: one more search, for how a change of employer is said
    assert follow_up_queries([acme, tea]) == [CHANGE_QUERIES["works at"]]
    assert follow_up_queries([tea, _m("My phone number is 1.", 3)]) == []  # said in the same words: found already
    # WHEN it finds the later statement (and unrelated ones), THEN only that is added, and current_first places it
    globex, cello = _m("I joined Globex this month.", 20), _m("I am learning the cello.", 9)
    merged = with_later([acme, tea], [globex, cello, acme])
    assert merged == [acme, tea, globex]
    assert [m.text for m in current_first(merged)][:2] == ["I joined Globex this month.", "I work at Acme."]
