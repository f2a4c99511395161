"""The route sweep's machinery, shared by the isolation tests that walk the live OpenAPI document.

A victim bank with one of everything (real ids of each kind of object), and for any route a request with those ids
in its path, a minimal valid body and its required query parameters.
"""

from __future__ import annotations

import io
import re
import uuid
import zipfile
from dataclasses import dataclass
from typing import Any

from memory_adapter.identity import format_bank_id
from tests.integration.isolation.support import Server

_WEBHOOK = {"url": "https://hooks.example.com/hook", "event_types": ["memory_defense.triggered"]}
#: Bodies for routes that check their input before they authorize (the minimal schema instance is not enough).
BODY_OVERRIDES: dict[str, dict[str, Any]] = {
    "POST /v1/default/banks/{bank_id}/webhooks": _WEBHOOK,
    "PATCH /v1/default/banks/{bank_id}/webhooks/{webhook_id}": {"enabled": False},
    "PATCH /v1/default/banks/{bank_id}/knowledge-base/nodes/{node_id}": {"name": "renamed"},
}


@dataclass
class Victim:
    bank: str
    ids: dict[str, str]


def _first(items: list[dict[str, Any]], key: str = "id") -> str:
    assert items, "expected at least one item"
    return str(items[0][key])


def make_victim(iso: Server) -> Victim:
    """Bob's bank with one of everything, created through Bob's own token (and the operator for webhooks)."""
    user = f"bob-sweep-{uuid.uuid4().hex[:8]}"
    bob = iso.api(iso.mint(user, ttl=3600))
    operator = iso.api(iso.operator_key)
    bank = format_bank_id(user=user, agent="support")
    base = f"/v1/default/banks/{bank}"

    def ok(response: Any) -> dict[str, Any]:
        assert response.status_code < 300, response.text
        return response.json() if response.content else {}

    ok(bob.retain(bank, "Bob's sister Carol lives in Lisbon and works at Acme.", document_id="doc-1"))
    queued = ok(
        bob.call("POST", f"{base}/memories", json={"items": [{"content": "Bob owns a red bike."}], "async": True})
    )
    bob.wait_operation(bank, queued["operation_id"])
    ids: dict[str, str] = {"operation_id": queued["operation_id"], "document_id": "doc-1"}
    ids["memory_id"] = _first(ok(bob.call("GET", f"{base}/memories/list"))["items"])
    entities = ok(bob.call("GET", f"{base}/entities"))["items"]
    ids["entity_id"] = _first(entities) if entities else str(uuid.uuid4())
    ids["chunk_id"] = _first(ok(bob.call("GET", f"{base}/documents/doc-1/chunks"))["items"], "chunk_id")
    model = ok(bob.call("POST", f"{base}/mental-models", json={"name": "family", "source_query": "Who is Carol?"}))
    ids["mental_model_id"] = model["mental_model_id"]
    ids["directive_id"] = ok(bob.call("POST", f"{base}/directives", json={"name": "tone", "content": "Be brief."}))[
        "id"
    ]
    page = ok(bob.call("POST", f"{base}/knowledge-base/pages", json={"name": "notes", "source_query": "Bob?"}))
    ids["page_id"] = ids["node_id"] = page["page_id"]
    webhook = ok(operator.call("POST", f"{base}/webhooks", json=_WEBHOOK))
    ids["webhook_id"] = str(webhook["id"])
    export = ok(bob.call("POST", f"{base}/transfer/export"))
    done = bob.wait_operation(bank, export["operation_id"])
    metadata = done.get("result_metadata") or {}
    ids["key"] = str(metadata.get("storage_key") or f"banks/{bank}/missing")
    return Victim(bank=bank, ids=ids)


def tiny_archive() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", "{}")
    return buffer.getvalue()


def sweep_request(
    method: str, path: str, op: dict[str, Any], victim: Victim, spec: dict[str, Any], *, caller: str
) -> dict[str, Any]:
    """Arguments for one call: real ids in the path, a minimal valid body, required query parameters.

    A target bank (clone, restore) is a fresh bank of the caller's own, so only the victim's bank stands between
    the caller and the operation.
    """
    ids = {**victim.ids, "bank_id": victim.bank, "alias": "some-alias"}

    def fill(match: re.Match[str]) -> str:
        name = match.group(1).split(":")[0]
        return ids.get(name, str(uuid.uuid4()))

    kwargs: dict[str, Any] = {"path": re.sub(r"\{([^}]+)\}", fill, path), "method": method}
    params = {}
    for parameter in op.get("parameters", []):
        if parameter.get("in") == "query" and parameter.get("required"):
            params[parameter["name"]] = example(parameter.get("schema", {}), spec)
    if "target_bank_id" in {p.get("name") for p in op.get("parameters", [])}:
        params["target_bank_id"] = format_bank_id(user=caller, agent=uuid.uuid4().hex[:6])
    kwargs["params"] = params
    content = (op.get("requestBody") or {}).get("content", {})
    if f"{method} {path}" in BODY_OVERRIDES:
        kwargs["json"] = BODY_OVERRIDES[f"{method} {path}"]
    elif "application/json" in content:
        kwargs["json"] = example(content["application/json"].get("schema", {}), spec)
    elif "multipart/form-data" in content:
        kwargs["files"] = {"file": ("archive.zip", tiny_archive(), "application/zip")}
        kwargs["data"] = {"request": "{}"}
    return kwargs


def example(schema: dict[str, Any], spec: dict[str, Any], depth: int = 0) -> Any:
    """A minimal instance of ``schema``: required fields only, first enum value, schema examples where given."""
    components = spec.get("components", {}).get("schemas", {})
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    if depth > 6:
        return None
    if "example" in schema:
        return schema["example"]
    if schema.get("default") is not None:
        return schema["default"]
    if "enum" in schema:
        return schema["enum"][0]
    for union in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(union, []) if o.get("type") != "null"]
        if options:
            return example(options[0], spec, depth + 1)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        required = set(schema.get("required", []))
        return {k: example(v, spec, depth + 1) for k, v in schema.get("properties", {}).items() if k in required}
    if kind == "array":
        return [example(schema["items"], spec, depth + 1)] if schema.get("minItems") and "items" in schema else []
    return {"string": "x", "integer": 1, "number": 1, "boolean": False}.get(str(kind), "x")


def openapi_routes(iso: Server) -> tuple[dict[str, Any], list[tuple[str, str, dict[str, Any]]]]:
    spec: dict[str, Any] = iso.api(iso.operator_key).call("GET", "/openapi.json").json()
    routes = [
        (method.upper(), path, op)
        for path, item in sorted(spec["paths"].items())
        for method, op in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    ]
    return spec, routes
