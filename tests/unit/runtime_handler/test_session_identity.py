"""A session id is never identity: a second user presenting another user's session id (AgentCore lets the caller
choose it) gets neither that user's conversation (working memory) nor their long-term memory. Real HTTP, the real
adapter on the fake Hindsight, the echo model (which repeats what it was given)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.issuers import LoopbackIssuer

from .fakes import owners
from .test_app import SESSION, _settings, running


def test_another_users_session_id_opens_nothing_of_theirs(loopback_issuer: LoopbackIssuer, tmp_path: Path) -> None:
    alex, bob = loopback_issuer.mint("user-alex"), loopback_issuer.mint("user-bob")
    with running(_settings(loopback_issuer), tmp_path / "spool") as agent:
        assert agent.invoke({"prompt": "My codename is Bluebird."}, token=alex, session=SESSION).status_code == 200
        agent.settle()
        # WHEN bob sends his turns in alex's session
        answer = agent.invoke({"prompt": "What is my codename?"}, token=bob, session=SESSION)
        again = agent.invoke({"prompt": "What did I say earlier?"}, token=bob, session=SESSION)
        agent.settle()
        # THEN he sees only his own turn of that session, and his turns went to his own bank
        assert answer.status_code == again.status_code == 200
        assert "Bluebird" not in answer.text + again.text
        assert "What is my codename?" in again.text  # his own earlier turn in the session is there
        assert {owner.user for owner in owners(agent.hindsight)} == {"user-alex", "user-bob"}
        # AND alex, back in the session, still has his conversation without bob's turns
        mine = agent.invoke({"prompt": "What did I say earlier?"}, token=alex, session=SESSION)
        assert "Bluebird" in mine.text
        assert "What is my codename?" not in mine.text
