"""The LLM stand-in's answers (:mod:`localdev.llm_stub`): a ``/v1/chat/completions`` or ``/v1/embeddings`` request in,
its deterministic response out. What each kind of request gets is in :mod:`localdev.llm_stub`'s docstring; fact
extraction is :mod:`localdev.stub_extraction`.

Standard library only (see :mod:`localdev.llm_stub`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import struct
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from localdev.stub_extraction import JSON, WORD, event_date, extract_facts
from localdev.stub_missions import mission_of

__all__ = [
    "DEFAULT_EMBEDDING_DIMENSIONS",
    "chat_completion",
    "classify",
    "embeddings_response",
    "hashed_embedding",
    "minimal_instance",
    "reflect_answer",
]

DEFAULT_EMBEDDING_DIMENSIONS = 384
_SCHEMA_MARKER = "You must respond with valid JSON matching this schema:"
_CONTENT_MARKER = "Content:\n"
_RETRIEVAL_TOOLS = ("recall", "search_observations", "search_mental_models")

# --- request analysis ---------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """The text of a message, whether a string or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _messages(body: Mapping[str, Any]) -> list[JSON]:
    msgs = body.get("messages")
    return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []


def _response_schema(body: Mapping[str, Any]) -> JSON | None:
    """The JSON schema the caller wants back: strict ``json_schema`` mode or the soft in-prompt form."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = fmt.get("json_schema", {}).get("schema")
        if isinstance(schema, dict):
            return schema
    for message in _messages(body):
        text = _text_of(message.get("content"))
        at = text.find(_SCHEMA_MARKER)
        if at < 0:
            continue
        start = text.find("{", at)
        try:
            schema, _ = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(schema, dict):
            return schema
    return None


def _retain_content(body: Mapping[str, Any]) -> str | None:
    """The chunk a fact-extraction request carries after ``Content:``, or None for other requests."""
    for message in _messages(body):
        if message.get("role") != "user":
            continue
        text = _text_of(message.get("content"))
        at = text.rfind(_CONTENT_MARKER)
        if at >= 0:
            return text[at + len(_CONTENT_MARKER) :]
    return None


def _event_date_of(body: Mapping[str, Any]) -> datetime | None:
    """The turn's time from the extraction request's user message (``Event Date: ... (<iso>)``)."""
    for message in _messages(body):
        if message.get("role") == "user":
            found = event_date(_text_of(message.get("content")))
            if found is not None:
                return found
    return None


def _mission_of(body: Mapping[str, Any]) -> str | None:
    """The bank's retain mission Hindsight put in the extraction request's user message, if any."""
    for message in _messages(body):
        if message.get("role") == "user" and (found := mission_of(_text_of(message.get("content")))) is not None:
            return found
    return None


def _last_user_text(body: Mapping[str, Any]) -> str:
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            text = _text_of(message.get("content")).strip()
            if text:
                return text
    return ""


# --- deterministic answers ------------------------------------------------------------------------


# --- deterministic answers ------------------------------------------------------------------------


def _resolve(schema: JSON, root: JSON) -> JSON:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return node if isinstance(node, dict) else {}
    return schema


def minimal_instance(schema: JSON, root: JSON | None = None, depth: int = 0) -> Any:
    """The smallest value that satisfies ``schema`` (required fields only, first enum option)."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if depth > 20:
        return None
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            if key != "allOf" and any(_resolve(o, root).get("type") == "null" for o in options):
                return None
            return minimal_instance(options[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else (kind[0] if kind else None)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = schema.get("required", [])
        return {name: minimal_instance(props.get(name, {}), root, depth + 1) for name in required}
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [minimal_instance(schema.get("items", {}), root, depth + 1) for _ in range(count)]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def _memory_texts(messages: list[JSON]) -> tuple[list[str], list[str]]:
    """Texts and ids of the memories that tool results (role ``tool``) handed back."""
    texts: list[str] = []
    ids: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            text = node.get("text")
            if isinstance(text, str) and text.strip():
                texts.append(text.strip())
                if isinstance(node.get("id"), str):
                    ids.append(node["id"])
            for value in node.values():
                if isinstance(value, dict | list):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for message in messages:
        if message.get("role") != "tool":
            continue
        content = _text_of(message.get("content"))
        try:
            walk(json.loads(content))
        except ValueError:
            continue
    return list(dict.fromkeys(texts)), list(dict.fromkeys(ids))


def reflect_answer(texts: list[str]) -> str:
    """The deterministic reflect answer: the memories retrieved, quoted in order."""
    if not texts:
        return "I have no memories about that."
    return "From memory: " + " ".join(t if t.endswith((".", "!", "?")) else t + "." for t in texts)


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
            names.append(str(tool["function"].get("name", "")))
    return names


def _tool_params(body: Mapping[str, Any], name: str) -> JSON:
    for tool in body.get("tools") or []:
        fn = tool.get("function", {}) if isinstance(tool, dict) else {}
        if fn.get("name") == name and isinstance(fn.get("parameters"), dict):
            params: JSON = fn["parameters"]
            return params
    return {"type": "object", "properties": {}}


def _called_tools(messages: list[JSON]) -> set[str]:
    called = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                called.add(str(call["function"].get("name")))
    return called


def _first_user_text(body: Mapping[str, Any]) -> str:
    for message in _messages(body):
        if message.get("role") == "user":
            text = _text_of(message.get("content")).strip()
            if text:
                return text
    return ""


def _pick_tool(body: Mapping[str, Any], names: list[str]) -> str | None:
    """The tool a compliant model calls next: a forced one, else search once, else finish."""
    choice = body.get("tool_choice")
    if choice == "none" or not names:
        return None
    if isinstance(choice, dict):
        forced = choice.get("function", {}).get("name")
        if isinstance(forced, str) and forced in names:
            return forced
    messages = _messages(body)
    called = _called_tools(messages)
    searched = any(m.get("role") == "tool" for m in messages)
    retrieval = [n for n in _RETRIEVAL_TOOLS if n in names and n not in called]
    finish = [n for n in ("done", "answer_ready") if n in names]
    if not searched and retrieval:
        return retrieval[0]
    if finish:
        return finish[0]
    if choice == "required":
        return retrieval[0] if retrieval else names[0]
    return None


def _tool_call(body: Mapping[str, Any]) -> tuple[str, JSON] | None:
    """Which tool to call next, and with what arguments (None: answer in text)."""
    name = _pick_tool(body, _tool_names(body))
    if name is None:
        return None
    texts, ids = _memory_texts(_messages(body))
    args = minimal_instance(_tool_params(body, name))
    args = args if isinstance(args, dict) else {}
    if "reason" in args:
        args["reason"] = "deterministic stub"
    if "query" in args:
        args["query"] = _first_user_text(body)[:500] or "memories"
    if name in ("done", "answer_ready"):
        args["answer_found"] = bool(texts)
        if name == "done":
            args["answer"] = reflect_answer(texts)
            args["memory_ids"] = ids
    return name, args


def _usage(body: Mapping[str, Any], output: str) -> JSON:
    prompt = sum(len(_text_of(m.get("content"))) for m in _messages(body)) // 4 + 1
    completion = len(output) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def classify(body: Mapping[str, Any]) -> str:
    """A short label for the kind of request (used in the request log and by tests)."""
    if body.get("tools"):
        return "tools"
    if _retain_content(body) is not None:
        return "retain"
    schema = _response_schema(body)
    if schema is not None:
        return "consolidation" if "creates" in schema.get("properties", {}) else "structured"
    return "text"


def chat_completion(body: Mapping[str, Any]) -> JSON:
    """The full ``/v1/chat/completions`` response for ``body``."""
    model = str(body.get("model") or "stub")
    message: JSON = {"role": "assistant", "content": None}
    finish = "stop"
    kind = classify(body)
    call = _tool_call(body) if kind == "tools" else None
    if call is not None:
        name, args = call
        digest = hashlib.sha256(json.dumps([name, args], sort_keys=True).encode()).hexdigest()[:16]
        message["tool_calls"] = [
            {"id": f"call_{digest}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        ]
        finish = "tool_calls"
        output = json.dumps(args)
    elif kind == "retain":
        facts = extract_facts(_retain_content(body) or "", _event_date_of(body), mission=_mission_of(body))
        output = json.dumps({"facts": facts})
    elif kind == "consolidation":
        output = json.dumps({"creates": [], "updates": [], "deletes": []})
    elif kind == "structured":
        output = json.dumps(minimal_instance(_response_schema(body) or {}))
    elif kind == "tools":
        output = reflect_answer(_memory_texts(_messages(body))[0])
    elif isinstance(body.get("response_format"), dict) and body["response_format"].get("type") == "json_object":
        output = "{}"
    else:
        output = "ok"
    if message.get("tool_calls") is None:
        message["content"] = output
    return {
        "id": "chatcmpl-" + hashlib.sha256(output.encode()).hexdigest()[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage(body, output),
    }


def hashed_embedding(text: str, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> list[float]:
    """A bag-of-hashed-words vector, L2-normalised: equal words give close vectors, synonyms do not."""
    vector = [0.0] * dimensions
    for word in WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dimensions
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


def embeddings_response(body: Mapping[str, Any]) -> JSON:
    """The ``/v1/embeddings`` response (float lists, or base64 little-endian float32 when asked)."""
    inputs = body.get("input", [])
    texts = [inputs] if isinstance(inputs, str) else [str(i) for i in inputs]
    dimensions = int(body.get("dimensions") or DEFAULT_EMBEDDING_DIMENSIONS)
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = hashed_embedding(text, dimensions)
        encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    tokens = sum(len(t) // 4 + 1 for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": str(body.get("model") or "hashed"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
