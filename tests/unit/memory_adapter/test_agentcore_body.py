"""The agent's body guard says which way a body is no JSON text: not UTF-8, or not JSON (issue 33 item 10: both got
"the request body must be a JSON object", which is true of neither)."""

from __future__ import annotations

from memory_adapter.agentcore.app import body_problem


def test_a_body_that_is_not_utf8_is_told_so() -> None:
    assert body_problem(b'{"prompt": "caf\xe9"}') == (
        "the request body is not UTF-8 text (at byte offset 15): send JSON encoded as UTF-8"
    )


def test_a_body_that_is_not_json_is_told_so() -> None:
    assert body_problem(b"{not json") == (
        "the request body is not JSON (Expecting property name enclosed in double quotes): send a JSON object"
    )
    assert body_problem(b"") == "the request body is not JSON (Expecting value): send a JSON object"


def test_json_text_passes_whatever_its_shape() -> None:
    assert body_problem('{"prompt": "café"}'.encode()) is None
    assert body_problem(b"[]") is None  # the payload rule refuses it, with its own message


def test_a_number_too_long_to_read_is_told_so_without_the_interpreters_advice() -> None:
    # json.loads raises a bare ValueError here, whose text advised the caller to call sys.set_int_max_str_digits()
    message = body_problem(b'{"prompt": "hi", "n": 1' + b"0" * 5000 + b"}")
    assert message == "the request body holds a number of more than 4300 digits: send a JSON object"
