"""Small HTTP and MCP clients for the isolation tests (raw, so every status code and body is visible)."""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

FORBIDDEN = {"detail": "forbidden"}
UNAUTHORIZED = {"detail": "Authentication failed: unauthorized"}


@dataclass
class Server:
    """A running Hindsight with the isolation extension, and how to get credentials for it."""

    url: str
    operator_key: str
    mint: Callable[..., str]
    server_log: Path | None = None
    agent_key: str | None = None
    agent_name: str | None = None
    agent_tenant: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def api(self, credential: str | None) -> Api:
        return Api(self.url, credential)

    def log_text(self) -> str:
        return self.server_log.read_text(errors="replace") if self.server_log else ""


class Api:
    """Raw REST calls with one credential."""

    def __init__(self, url: str, credential: str | None) -> None:
        headers = {"Authorization": f"Bearer {credential}"} if credential else {}
        self._client = httpx.Client(base_url=url, headers=headers, timeout=120)

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self._client.request(method, path, **kwargs)

    def retain(self, bank: str, text: str, **item: Any) -> httpx.Response:
        return self.call("POST", f"/v1/default/banks/{bank}/memories", json={"items": [{"content": text, **item}]})

    def recall(self, bank: str, query: str) -> httpx.Response:
        return self.call("POST", f"/v1/default/banks/{bank}/memories/recall", json={"query": query})

    def texts(self, bank: str, query: str) -> list[str]:
        response = self.recall(bank, query)
        assert response.status_code == 200, response.text
        return [r["text"] for r in response.json()["results"]]

    def listed(self, bank: str) -> list[str]:
        """Every stored memory's text (no relevance ranking involved)."""
        response = self.call("GET", f"/v1/default/banks/{bank}/memories/list", params={"limit": 1000})
        assert response.status_code == 200, response.text
        return [item["text"] for item in response.json()["items"]]

    def bank_ids(self) -> list[str]:
        response = self.call("GET", "/v1/default/banks", params={"limit": 1000})
        assert response.status_code == 200, response.text
        return [b["bank_id"] for b in response.json()["banks"]]

    def wait_operation(self, bank: str, operation_id: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            response = self.call("GET", f"/v1/default/banks/{bank}/operations/{operation_id}")
            assert response.status_code == 200, response.text
            body: dict[str, Any] = response.json()
            if body.get("status") in ("completed", "failed", "cancelled"):
                return body
            assert time.monotonic() < deadline, f"operation {operation_id} still {body.get('status')}"
            time.sleep(0.25)


class Mcp:
    """A minimal MCP streamable-HTTP client (initialize, tools/list, tools/call)."""

    def __init__(self, url: str, credential: str | None, *, bank: str | None = None, header_bank: str | None = None):
        self._url = url.rstrip("/") + "/mcp/" + (f"{bank}/" if bank else "")
        self._headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if credential:
            self._headers["Authorization"] = f"Bearer {credential}"
        if header_bank:
            self._headers["X-Bank-Id"] = header_bank
        self._client = httpx.Client(timeout=120)
        self._id = 0

    def _post(self, message: dict[str, Any]) -> tuple[int, Any]:
        response = self._client.post(self._url, headers=self._headers, json=message)
        if "mcp-session-id" in response.headers:
            self._headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        if response.status_code >= 400 or not response.text:
            return response.status_code, response.json() if response.text else None
        body = response.text
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
            body = data[-1] if data else "null"
        return response.status_code, json.loads(body)

    def initialize(self) -> int:
        self._id += 1
        status, _ = self._post(
            {
                "jsonrpc": "2.0",
                "id": self._id,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-03-26",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
        )
        if status < 400:
            self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return status

    def tools(self) -> set[str]:
        self._id += 1
        status, body = self._post({"jsonrpc": "2.0", "id": self._id, "method": "tools/list", "params": {}})
        assert status == 200, body
        return {tool["name"] for tool in body["result"]["tools"]}

    def call(self, tool: str, **arguments: Any) -> str:
        """The tool's text output (errors included: MCP reports them in-band)."""
        self._id += 1
        status, body = self._post(
            {"jsonrpc": "2.0", "id": self._id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        )
        assert status == 200, body
        if "error" in body:
            return json.dumps(body["error"])
        return "\n".join(part.get("text", "") for part in body["result"]["content"])


def forged_token(issuer: str, kid: str, user: str, client_id: str) -> str:
    """A well-formed token naming the real issuer and key id, signed with a key the issuer never published."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    claims = {"iss": issuer, "sub": user, "client_id": client_id, "token_use": "access", "iat": now, "exp": now + 300}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


def export_archive(api: Api, bank: str, **params: Any) -> bytes:
    """A genuine transfer archive of ``bank`` (exported through ``api``, which must be allowed to)."""
    submitted = api.call("POST", f"/v1/default/banks/{bank}/transfer/export", params=params)
    assert submitted.status_code == 202, submitted.text
    done = api.wait_operation(bank, submitted.json()["operation_id"])
    assert done["status"] == "completed", done
    archive = api.call("GET", f"/v1/default/files/download/{done['result_metadata']['storage_key']}")
    assert archive.status_code == 200, archive.text
    return archive.content


def crafted_archive(genuine: bytes, *, source: str, tables: dict[str, list[dict[str, Any]]]) -> bytes:
    """``genuine`` with its manifest naming ``source`` and the given bank-settings tables replaced (``banks``,
    ``directives``, ``webhooks``): rows that name any bank, or none, as an attacker would write them."""
    original = zipfile.ZipFile(io.BytesIO(genuine))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for name in original.namelist():
            data = original.read(name)
            if name == "manifest.json":
                manifest = json.loads(data)
                manifest["source_bank_id"] = source
                manifest.update({f"{table.rstrip('s')}_count": len(rows) for table, rows in tables.items()})
                data = json.dumps(manifest).encode()
            elif name.removesuffix(".json") in tables:
                data = json.dumps(tables[name.removesuffix(".json")]).encode()
            out.writestr(name, data)
    return buffer.getvalue()


def archive_rows(archive: bytes, table: str) -> list[dict[str, Any]]:
    """The rows of ``table`` (``banks``, ``webhooks``, ...) in a transfer archive."""
    rows: list[dict[str, Any]] = json.loads(zipfile.ZipFile(io.BytesIO(archive)).read(f"{table}.json"))
    return rows
