"""A scripted Hindsight for the memory tools' unit tests: the routes they use, over a bank of three facts."""

from __future__ import annotations

import urllib.parse

from memory_adapter.exceptions import HindsightUnavailableError
from memory_adapter.testing import MockTransport
from memory_adapter.transport import HttpRequest, HttpResponse

EMAIL_ID = "11111111-1111-1111-1111-111111111111"
TEA_ID = "22222222-2222-2222-2222-222222222222"
CODE_ID = "33333333-3333-3333-3333-333333333333"


class ScriptedHindsight(MockTransport):
    """Answers the tools' requests from a small bank: two documents, ``turn-1`` (email) and ``turn-2`` (tea, code);
    every request recorded (:class:`~memory_adapter.testing.MockTransport`), none answered while ``down``."""

    def __init__(self) -> None:
        super().__init__(self._answer)
        self.facts = {
            EMAIL_ID: {"id": EMAIL_ID, "text": "I prefer email over phone.", "type": "world", "document_id": "turn-1"},
            TEA_ID: {"id": TEA_ID, "text": "I prefer tea.", "type": "world", "document_id": "turn-2"},
            CODE_ID: {"id": CODE_ID, "text": "My locker code is 4711.", "type": "world", "document_id": "turn-2"},
        }
        self.down = False

    def _answer(self, request: HttpRequest) -> HttpResponse:
        if self.down:
            raise HindsightUnavailableError("cannot reach Hindsight")
        method, path = request.method, request.path
        route = path.split("/", 5)[5] if path.count("/") >= 5 else ""
        parsed = urllib.parse.urlsplit("/" + route)
        query = urllib.parse.parse_qs(parsed.query)
        if parsed.path == "/operations":
            return HttpResponse(200, {"operations": []})
        if parsed.path == "/memories/recall":
            return HttpResponse(200, {"results": list(self.facts.values())})
        if parsed.path == "/memories/list":
            items = [f for f in self.facts.values() if f["document_id"] in query.get("document_id", [f["document_id"]])]
            return HttpResponse(200, {"items": items})
        if parsed.path.startswith("/memories/") and method == "GET":
            fact = self.facts.get(parsed.path.rsplit("/", 1)[1])
            return HttpResponse(200, fact) if fact else HttpResponse(404, {"detail": "not found"})
        if parsed.path.startswith("/memories/") and method == "PATCH":
            return HttpResponse(200, self.facts.pop(parsed.path.rsplit("/", 1)[1]))
        if parsed.path.startswith("/documents/") and method == "DELETE":
            document = urllib.parse.unquote(parsed.path.rsplit("/", 1)[1])
            self.facts = {k: f for k, f in self.facts.items() if f["document_id"] != document}
            return HttpResponse(200, {"success": True})
        if parsed.path == "/memories" and method == "POST":
            return HttpResponse(200, {"success": True})
        if parsed.path == "/reflect":
            return HttpResponse(200, {"text": "You prefer email."})
        return HttpResponse(404, {"detail": "no route"})
