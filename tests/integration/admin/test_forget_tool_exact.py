"""Issue 31 item 5, the model's side: the ``forget`` tool selects by the operator's rule (one implementation,
``memory_adapter.tools.forgetting.select``) and takes only the memory asked for; the other statements of the same
sentence stay recallable. Real local Hindsight, the user's own token."""

from __future__ import annotations

import pytest

from memory_adapter.identity.caller import Caller
from memory_adapter.tools import MemoryTools
from memory_adapter.transport import HttpTransport
from tests.integration.admin.conftest import Users

pytestmark = pytest.mark.integration

BERLIN_JOB = "I live in Berlin and work as a data engineer."
BERLIN, JOB = "I live in Berlin.", "I work as a data engineer."
PIXEL = "My dog is called Pixel."
PEANUTS = "I'm allergic to peanuts."


def test_the_forget_tool_takes_only_what_the_user_means(users: Users, local_hindsight: object) -> None:
    # GIVEN a user's turns, one of them a sentence of two statements
    for text in (BERLIN_JOB, PIXEL, PEANUTS):
        users.retain("uma", text)
    name = users.name("uma")
    caller = Caller.of(user=name, agent="support", credential=users.mint(name, ttl=900))
    tools = MemoryTools(HttpTransport(users.url), settle_s=0.0)

    def forget(query: str) -> list[tuple[str, str]]:
        data = tools.call(caller, "forget", {"query": query}).data
        return [(f["text"], f["how"]) for f in data["forgotten"]]

    # WHEN the user asks to forget something no memory is about, THEN nothing is forgotten
    assert forget("my cat's name") == []
    # WHEN the user says "forget that I live in Berlin"
    # THEN only that statement goes (out of recall); the job, said in the same sentence, stays recallable
    assert forget("that I live in Berlin") == [(BERLIN, "invalidated")]
    assert JOB in users.recall("uma", "What is my job?")
    assert BERLIN not in users.recall("uma", "Where do I live?")
    # WHEN the user describes memories in other words, THEN each is the one forgotten (its own turn deleted)
    assert forget("my dog's name") == [(PIXEL, "deleted")]
    assert forget("peanut allergy") == [(PEANUTS, "deleted")]
    assert PIXEL not in users.recall("uma", "What is my dog called?")
    assert PEANUTS not in users.recall("uma", "Am I allergic to anything?")
    assert JOB in users.recall("uma", "What is my job?")
