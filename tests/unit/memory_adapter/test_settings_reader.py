"""The shared settings reader: typed values from strings or JSON, every problem recorded, names as users write them."""

from __future__ import annotations

from enum import StrEnum

import pytest

from memory_adapter.settings_reader import Naming, SettingsReader, out_of_range


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


def test_values_parse_from_strings_and_blank_means_unset() -> None:
    get = SettingsReader(
        {"A": " x ", "B": "a, b,,", "C": "yes", "D": "2.5", "E": "7", "F": "BLUE", "G": "  ", "H": '{"k": 1}'}
    )
    assert (get.text("A"), get.csv("B"), get.flag("C"), get.number("D", 0.0), get.integer("E", 0)) == (
        "x",
        ("a", "b"),
        True,
        2.5,
        7,
    )
    assert get.choice("F", Colour, None) is Colour.BLUE
    assert (get.text("G"), get.given("G"), get.csv("missing"), get.flag("missing", True)) == (None, False, (), True)
    assert get.json_object("H") == {"k": 1}
    assert get.problems == []


def test_typed_values_are_accepted_as_they_are() -> None:
    get = SettingsReader({"list": ["a", " b "], "flag": False, "int": 3, "float": 1, "obj": {"keys": []}})
    assert (get.csv("list"), get.flag("flag", True), get.integer("int", 0), get.number("float", 0.0)) == (
        ("a", "b"),
        False,
        3,
        1.0,
    )
    assert get.json_object("obj") == {"keys": []}
    assert get.problems == []


def test_every_problem_is_recorded_with_the_default_returned() -> None:
    get = SettingsReader(
        {"n": "soon", "i": "1.5", "f": "maybe", "c": "green", "r": "500", "t": 3, "l": [1], "j": "[]", "b": True},
        Naming(shown_prefix="PREFIX_", shown_upper=True),
    )
    assert get.number("n", 1.0) == 1.0
    assert get.integer("i", 2) == 2
    assert get.flag("f") is False
    assert get.choice("c", Colour, Colour.RED) is Colour.RED
    assert get.number("r", 30.0, low=0, high=300) == 30.0
    assert get.text("t") is None
    assert get.csv("l") == ()
    assert get.json_object("j", what="a JWKS") is None
    assert get.integer("b", 4) == 4
    assert get.problems == [
        "PREFIX_N must be a number, got 'soon'",
        "PREFIX_I must be an integer, got '1.5'",
        "PREFIX_F must be true or false, got 'maybe'",
        "PREFIX_C must be one of: red, blue; got 'green'",
        "PREFIX_R must be between 0 and 300, got 500.0",
        "PREFIX_T must be text, got int",
        "PREFIX_L must be a comma-separated list of names, got list",
        "PREFIX_J must be a JWKS",
        "PREFIX_B must be an integer, got bool",
    ]


def test_unknown_keys_are_named_as_users_write_them() -> None:
    get = SettingsReader(
        {"jwt_issuer": "x", "jwt_isuer": "y"}, Naming(shown_prefix="HINDSIGHT_API_TENANT_", shown_upper=True)
    )
    assert get.unknown({"jwt_issuer"}) == ["HINDSIGHT_API_TENANT_JWT_ISUER"]


@pytest.mark.parametrize(
    ("naming", "key"),
    [
        (Naming(prefix="JWT_", upper=True, seconds="_SECONDS"), "JWT_LEEWAY_SECONDS"),
        (Naming(prefix="jwt_"), "jwt_leeway_s"),
        (Naming(seconds="_seconds"), "leeway_seconds"),
    ],
)
def test_one_field_name_spelled_per_component(naming: Naming, key: str) -> None:
    assert naming.key("leeway_s") == key
    assert naming.key("allowed_clients").lower().endswith("allowed_clients")


def test_out_of_range_names_the_bounds() -> None:
    assert out_of_range("x", 1, low=0) is None
    assert out_of_range("x", -1, low=0) == "x must be at least 0, got -1"
    assert out_of_range("x", 0, above=0) == "x must be greater than 0, got 0"
    assert out_of_range("x", float("inf"), high=5) == "x must be at most 5, got inf"
