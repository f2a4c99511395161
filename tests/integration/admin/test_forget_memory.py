"""The operator's forget-memory selects only what matches (the ``forget`` tool's rule) and never removes a memory the
operator did not select, also when memories share a source turn; through ``run_action`` and through the CLI.

Real local Hindsight; the LLM stand-in makes each sentence a user states one fact, so a turn of two sentences is one
source document holding two memories.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_adapter.admin import AdminDeps, InvalidRequestError, run_action
from memory_adapter.admin.cli import main
from tests.integration.admin.conftest import Users

pytestmark = pytest.mark.integration

TEAL_PIXEL = "My favourite colour is teal and my dog is called Pixel."
BLUEBIRD = "My project codename is Bluebird."
PLATFORM = "My train leaves from platform 9."


def _texts(deps: AdminDeps, bank: str) -> set[str]:
    return {m["text"] for m in deps.client.memories(bank)}


def _forget(deps: AdminDeps, user: str, **arguments: Any) -> dict[str, Any]:
    return run_action({"action": "forget-memory", "user": user, **arguments}, deps=deps, principal="test")


def _seed(users: Users, who: str) -> dict[str, str]:
    return {text: users.retain(who, text) for text in (TEAL_PIXEL, BLUEBIRD, PLATFORM)}


def test_a_description_that_matches_nothing_removes_nothing(users: Users, deps: AdminDeps) -> None:
    # GIVEN three retained turns, none about a name of a dog or an allergy
    docs = _seed(users, "hal")
    bank, hal = users.bank("hal"), users.name("hal")
    before = _texts(deps, bank)
    # WHEN the operator previews and confirms descriptions whose every significant word no memory holds
    for query, limit in (("my dog's name", 5), ("peanut allergy", 1)):
        preview = _forget(deps, hal, query=query, limit=limit)
        # THEN nothing is selected, and confirming removes nothing
        assert preview["matched"] == []
        assert preview["documents"] == []
        assert preview["invalidations"] == []
        assert preview["summary"].startswith("nothing matched")
        done = _forget(deps, hal, query=query, limit=limit, confirm=preview["confirmation"])
        assert done["facts_deleted"] == 0
    assert _texts(deps, bank) == before
    assert all(deps.client.document(bank, doc) is not None for doc in docs.values())


def test_a_match_deletes_its_own_turn_only(users: Users, deps: AdminDeps) -> None:
    # GIVEN the three turns
    docs = _seed(users, "ida")
    bank, ida = users.bank("ida"), users.name("ida")
    # WHEN the operator forgets "my dog" (the tool's rule: "dog" must appear)
    preview = _forget(deps, ida, query="my dog")
    # THEN exactly the teal/Pixel memory is selected and its turn is the one deleted
    assert [m["text"] for m in preview["matched"]] == [TEAL_PIXEL]
    assert [d["document_id"] for d in preview["documents"]] == [docs[TEAL_PIXEL]]
    assert preview["shared"] == []
    _forget(deps, ida, query="my dog", confirm=preview["confirmation"])
    assert _texts(deps, bank) == {BLUEBIRD, PLATFORM}


def test_a_memory_sharing_its_turn_is_never_taken_with_it(users: Users, deps: AdminDeps) -> None:
    # GIVEN one turn holding two memories (teal, Pixel) and an unrelated turn
    shared_doc = users.retain("jan", "My favourite colour is teal. My dog is called Pixel.")
    other_doc = users.retain("jan", BLUEBIRD)
    bank, jan = users.bank("jan"), users.name("jan")
    (teal,) = [m for m in deps.client.memories(bank) if "teal" in m["text"]]
    # WHEN the operator previews forgetting the dog
    preview = _forget(deps, jan, query="dog Pixel")
    # THEN the preview names the memory that shares the turn, deletes no document, and says it would refuse
    assert [m["text"] for m in preview["matched"]] == ["My dog is called Pixel."]
    assert preview["documents"] == []
    assert [(s["document_id"], [o["id"] for o in s["others"]]) for s in preview["shared"]] == [
        (shared_doc, [teal["id"]])
    ]
    assert "REFUSED" in preview["summary"]
    assert teal["id"] in preview["summary"]
    # WHEN it is confirmed anyway, THEN it is refused, naming the other memory, and nothing is removed
    with pytest.raises(InvalidRequestError, match=teal["id"]):
        _forget(deps, jan, query="dog Pixel", confirm=preview["confirmation"])
    assert _texts(deps, bank) == {"My favourite colour is teal.", "My dog is called Pixel.", BLUEBIRD}
    # WHEN the operator asks to invalidate instead, THEN only the dog memory leaves; teal and the turn stay
    invalidating = _forget(deps, jan, query="dog Pixel", invalidate=True)
    assert [i["text"] for i in invalidating["invalidations"]] == ["My dog is called Pixel."]
    done = _forget(deps, jan, query="dog Pixel", invalidate=True, confirm=invalidating["confirmation"])
    assert done["invalidated"] == 1
    assert _texts(deps, bank) == {"My favourite colour is teal.", BLUEBIRD}
    assert not any("Pixel" in text for text in users.recall("jan", "dog Pixel"))
    assert deps.client.document(bank, shared_doc) is not None
    assert deps.client.document(bank, other_doc) is not None


def test_selecting_every_memory_of_a_turn_by_id_deletes_the_turn(users: Users, deps: AdminDeps) -> None:
    # GIVEN a turn of two memories and an unrelated turn
    doc = users.retain("kim", "My favourite colour is teal. My dog is called Pixel.")
    users.retain("kim", BLUEBIRD)
    bank, kim = users.bank("kim"), users.name("kim")
    ids = [m["id"] for m in deps.client.memories(bank, document_id=doc)]
    assert len(ids) == 2
    # WHEN the operator selects both by id
    preview = _forget(deps, kim, memory_ids=ids)
    # THEN the turn is deleted whole, and the other turn stays
    assert [d["document_id"] for d in preview["documents"]] == [doc]
    assert preview["shared"] == []
    done = _forget(deps, kim, memory_ids=ids, confirm=preview["confirmation"])
    assert done["facts_deleted"] == 2
    assert _texts(deps, bank) == {BLUEBIRD}


def _cli(capsys: pytest.CaptureFixture[str], key_file: Path, url: str, *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["forget-memory", "--local", "--url", url, "--operator-key-file", str(key_file), *argv])
    out = capsys.readouterr().out
    return code, json.loads(out) if code == 0 else {}


def test_the_cli_takes_local_after_the_action_and_forgets_only_what_matches(
    users: Users, local_hindsight: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the three turns and the operator key in a file
    _seed(users, "lou")
    bank, lou = users.bank("lou"), users.name("lou")
    key_file = tmp_path / "operator-key"
    key_file.write_text(local_hindsight.operator_key)
    url = local_hindsight.url
    # WHEN "peanut allergy" --limit 1 is previewed and confirmed, THEN nothing goes
    code, preview = _cli(capsys, key_file, url, "--user", lou, "--query", "peanut allergy", "--limit", "1")
    assert code == 0
    assert preview["matched"] == []
    code, _ = _cli(capsys, key_file, url, "--user", lou, "--query", "peanut allergy", "--limit", "1", "--confirm",
                   preview["confirmation"])  # fmt: skip
    assert code == 0
    # WHEN "my dog" is previewed and confirmed, THEN only the teal/Pixel turn goes
    code, preview = _cli(capsys, key_file, url, "--user", lou, "--query", "my dog")
    assert [m["text"] for m in preview["matched"]] == [TEAL_PIXEL]
    code, _ = _cli(capsys, key_file, url, "--user", lou, "--query", "my dog", "--confirm", preview["confirmation"])
    assert code == 0
    assert {m["text"] for m in users_memories(local_hindsight, bank)} == {BLUEBIRD, PLATFORM}


def users_memories(local_hindsight: Any, bank: str) -> list[dict[str, Any]]:
    from memory_adapter.admin import OperatorClient

    return list(OperatorClient(local_hindsight.url, local_hindsight.operator_key).memories(bank))


def test_a_cli_preview_ends_with_the_command_that_carries_it_out(
    users: Users, local_hindsight: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the three turns
    _seed(users, "mo")
    bank, mo = users.bank("mo"), users.name("mo")
    key_file = tmp_path / "operator-key"
    key_file.write_text(local_hindsight.operator_key)
    connection = ["--local", "--url", local_hindsight.url, "--operator-key-file", str(key_file)]
    argv = ["forget-memory", *connection, "--out", str(tmp_path / "admin"), "--user", mo, "--query", "my dog"]
    # WHEN the operator previews
    assert main(argv) == 0
    shown = capsys.readouterr()
    preview = json.loads(shown.out)
    # THEN the preview ends with the exact command that confirms it, and that command forgets what was previewed
    intro, command = shown.err.splitlines()
    assert intro == "to forget exactly this, run:"
    words = shlex.split(command)
    assert Path(words[0]).resolve() == Path(sys.executable).resolve()
    assert words[1:] == ["-m", "memory_adapter.admin", *argv, "--confirm", preview["confirmation"]]
    assert main(words[3:]) == 0
    assert {m["text"] for m in users_memories(local_hindsight, bank)} == {BLUEBIRD, PLATFORM}
