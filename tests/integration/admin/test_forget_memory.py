"""The operator's forget-memory selects only what matches and removes only what was selected, by the ``forget`` tool's
rule: other memories of the same source turn stay recallable; through ``run_action`` and through the CLI.

Real local Hindsight; the LLM stand-in makes each statement a user makes one fact, so a turn of two statements is one
source document holding two memories.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_adapter.admin import AdminDeps, run_action
from memory_adapter.admin.cli import main
from tests.integration.admin.conftest import Users

pytestmark = pytest.mark.integration

TEAL_PIXEL = "My favourite colour is teal and my dog is called Pixel."
TEAL, PIXEL = "My favourite colour is teal.", "My dog is called Pixel."
BLUEBIRD = "My project codename is Bluebird."
PLATFORM = "My train leaves from platform 9."
PEANUTS = "I'm allergic to peanuts."
BERLIN_JOB = "I live in Berlin and work as a data engineer."
BERLIN, JOB = "I live in Berlin.", "I work as a data engineer."


def _texts(deps: AdminDeps, bank: str) -> set[str]:
    return {m["text"] for m in deps.client.memories(bank)}


def _forget(deps: AdminDeps, user: str, **arguments: Any) -> dict[str, Any]:
    return run_action({"action": "forget-memory", "user": user, **arguments}, deps=deps, principal="test")


def _seed(users: Users, who: str) -> dict[str, str]:
    return {text: users.retain(who, text) for text in (TEAL_PIXEL, BLUEBIRD, PLATFORM, PEANUTS, BERLIN_JOB)}


def test_a_description_that_matches_nothing_removes_nothing(users: Users, deps: AdminDeps) -> None:
    # GIVEN retained turns, none about a cat's name or a tax number
    docs = _seed(users, "hal")
    bank, hal = users.bank("hal"), users.name("hal")
    before = _texts(deps, bank)
    # WHEN the operator previews and confirms descriptions that mean none of them (though recall returns its nearest)
    for query, limit in (("my cat's name", 5), ("my tax number", 1)):
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


def test_a_natural_description_finds_the_memory_it_means_and_only_that_goes(users: Users, deps: AdminDeps) -> None:
    # GIVEN the turns (the teal/Pixel and Berlin/job sentences each hold two memories)
    docs = _seed(users, "ida")
    bank, ida = users.bank("ida"), users.name("ida")
    assert _texts(deps, bank) == {TEAL, PIXEL, BLUEBIRD, PLATFORM, PEANUTS, BERLIN, JOB}
    # WHEN the operator previews "peanut allergy" (no memory holds "allergy"; one says "allergic to peanuts")
    preview = _forget(deps, ida, query="peanut allergy", limit=1)
    # THEN that memory is selected, and its turn, which holds nothing else, is the one deleted
    assert [m["text"] for m in preview["matched"]] == [PEANUTS]
    assert [d["document_id"] for d in preview["documents"]] == [docs[PEANUTS]]
    _forget(deps, ida, query="peanut allergy", limit=1, confirm=preview["confirmation"])
    # WHEN it previews "my dog's name" and "where I live"
    for query, chosen, other in (("my dog's name", PIXEL, TEAL), ("where I live", BERLIN, JOB)):
        preview = _forget(deps, ida, query=query)
        # THEN the memory meant is selected, and the preview names what else its turn holds (kept)
        assert [m["text"] for m in preview["matched"]] == [chosen], query
        assert [[o["text"] for o in s["others"]] for s in preview["shared"]] == [[other]], query
        assert preview["documents"] == []
        done = _forget(deps, ida, query=query, confirm=preview["confirmation"])
        assert done["invalidated"] == 1
    # AND only the selected memories are gone: the others of the same sentences stay, and stay recallable
    assert _texts(deps, bank) == {TEAL, BLUEBIRD, PLATFORM, JOB}
    assert JOB in users.recall("ida", "What is my job?")
    assert TEAL in users.recall("ida", "favourite colour")
    assert BERLIN not in users.recall("ida", "Where do I live?")


def test_a_memory_sharing_its_turn_goes_alone_as_with_the_forget_tool(users: Users, deps: AdminDeps) -> None:
    # GIVEN one turn holding two memories (teal, Pixel) and an unrelated turn
    shared_doc = users.retain("jan", "My favourite colour is teal. My dog is called Pixel.")
    other_doc = users.retain("jan", BLUEBIRD)
    bank, jan = users.bank("jan"), users.name("jan")
    (teal,) = [m for m in deps.client.memories(bank) if "teal" in m["text"]]
    # WHEN the operator previews forgetting the dog
    preview = _forget(deps, jan, query="dog Pixel")
    # THEN the preview invalidates the dog memory only, deletes no document, and names the memory that stays
    assert [m["text"] for m in preview["matched"]] == ["My dog is called Pixel."]
    assert [i["text"] for i in preview["invalidations"]] == ["My dog is called Pixel."]
    assert preview["documents"] == []
    assert [(s["document_id"], [o["id"] for o in s["others"]]) for s in preview["shared"]] == [
        (shared_doc, [teal["id"]])
    ]
    assert "1 other memory(ies) of the same source turn(s) stay" in preview["summary"]
    # WHEN it is confirmed (no extra flag: the rule the model's forget tool follows)
    done = _forget(deps, jan, query="dog Pixel", confirm=preview["confirmation"])
    # THEN only the dog memory leaves; teal stays recallable, and both turns stay
    assert done["invalidated"] == 1
    assert _texts(deps, bank) == {"My favourite colour is teal.", BLUEBIRD}
    assert not any("Pixel" in text for text in users.recall("jan", "dog Pixel"))
    assert "My favourite colour is teal." in users.recall("jan", "favourite colour")
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
    # WHEN "my cat's name" --limit 1 is previewed and confirmed, THEN nothing goes
    code, preview = _cli(capsys, key_file, url, "--user", lou, "--query", "my cat's name", "--limit", "1")
    assert code == 0
    assert preview["matched"] == []
    code, _ = _cli(capsys, key_file, url, "--user", lou, "--query", "my cat's name", "--limit", "1", "--confirm",
                   preview["confirmation"])  # fmt: skip
    assert code == 0
    # WHEN "peanut allergy" is previewed and confirmed, THEN only the peanut turn goes
    code, preview = _cli(capsys, key_file, url, "--user", lou, "--query", "peanut allergy")
    assert [m["text"] for m in preview["matched"]] == [PEANUTS]
    code, _ = _cli(capsys, key_file, url, "--user", lou, "--query", "peanut allergy", "--confirm",
                   preview["confirmation"])  # fmt: skip
    assert code == 0
    assert {m["text"] for m in users_memories(local_hindsight, bank)} == {TEAL, PIXEL, BLUEBIRD, PLATFORM, BERLIN, JOB}


def users_memories(local_hindsight: Any, bank: str) -> list[dict[str, Any]]:
    from memory_adapter.admin import OperatorClient

    return list(OperatorClient(local_hindsight.url, local_hindsight.operator_key).memories(bank))


def test_a_cli_preview_ends_with_the_command_that_carries_it_out(
    users: Users, local_hindsight: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the turns
    _seed(users, "mo")
    bank, mo = users.bank("mo"), users.name("mo")
    key_file = tmp_path / "operator-key"
    key_file.write_text(local_hindsight.operator_key)
    connection = ["--local", "--url", local_hindsight.url, "--operator-key-file", str(key_file)]
    argv = ["forget-memory", *connection, "--out", str(tmp_path / "admin"), "--user", mo, "--query", "peanut allergy"]
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
    assert {m["text"] for m in users_memories(local_hindsight, bank)} == {TEAL, PIXEL, BLUEBIRD, PLATFORM, BERLIN, JOB}
