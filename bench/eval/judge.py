"""Scoring answers, LoCoMo's way: a model answers each question from the injected memories, a model judges it.

The answer prompt gives the model our injected block exactly as the agent would and asks for a short answer; the
judge prompt (the protocol of LoCoMo's LLM-judge evaluations, as mem0 and Hindsight's harness use it) compares it
with the gold answer, generous on wording and dates in other formats, and replies ``CORRECT`` or ``WRONG``.

Two backends behind one :class:`LLM` interface: :class:`BedrockLLM` (the Converse API, credentials from the boto3
chain) for a deployment, and :class:`OpenAICompatibleLLM` for any ``/v1/chat/completions`` endpoint, which is how
the tests drive this path with the local stand-in (``localdev.llm_stub``).
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["LLM", "BedrockLLM", "Judge", "OpenAICompatibleLLM", "make_llm"]

DEFAULT_BEDROCK_MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"

_ANSWER_PROMPT = """You are answering a question about a long conversation, using only the memories below.
{memories}

Question: {question}
Answer in at most a short sentence. If the memories do not say, answer "unknown"."""

_JUDGE_PROMPT = """Your task is to label an answer to a question as CORRECT or WRONG.
You are given a question, a gold (ground truth) answer, and a generated answer.
Be generous: if the generated answer refers to the same thing as the gold answer, even in other words or with more
detail, it is CORRECT. For time questions, a date or period in another format that means the same time is CORRECT.
Question: {question}
Gold answer: {gold}
Generated answer: {answer}
Reply with one JSON object: {{"label": "CORRECT"}} or {{"label": "WRONG"}}."""


class LLM(Protocol):
    """Anything that completes one prompt with text."""

    name: str

    def complete(self, prompt: str) -> str:
        """The model's reply to ``prompt``."""
        ...


@dataclass
class BedrockLLM:
    """A Bedrock model through the Converse API (temperature 0)."""

    name: str = DEFAULT_BEDROCK_MODEL
    region: str | None = None

    def complete(self, prompt: str) -> str:
        import boto3

        client = boto3.client("bedrock-runtime", region_name=self.region)
        response = client.converse(
            modelId=self.name,
            messages=[{"role": "user", "content": [{"text": prompt}]}],
            inferenceConfig={"temperature": 0.0, "maxTokens": 200},
        )
        parts = response["output"]["message"]["content"]
        return "".join(str(p.get("text", "")) for p in parts)


@dataclass
class OpenAICompatibleLLM:
    """Any OpenAI-compatible chat endpoint (``<base_url>/chat/completions``)."""

    base_url: str
    name: str = "stub"
    api_key: str | None = None

    def complete(self, prompt: str) -> str:
        body = {"model": self.name, "temperature": 0, "messages": [{"role": "user", "content": prompt}]}
        request = urllib.request.Request(  # noqa: S310 (a configured endpoint)
            f"{self.base_url.rstrip('/')}/chat/completions", data=json.dumps(body).encode(), method="POST"
        )
        request.add_header("Content-Type", "application/json")
        if self.api_key:
            request.add_header("Authorization", f"Bearer {self.api_key}")
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310
            answer: dict[str, Any] = json.loads(response.read())
        return str(answer["choices"][0]["message"].get("content") or "")


def make_llm(kind: str, *, model: str | None = None, base_url: str | None = None) -> LLM:
    """The ``--judge`` backend: ``bedrock`` or ``openai`` (which needs ``base_url``)."""
    if kind == "bedrock":
        return BedrockLLM(model or DEFAULT_BEDROCK_MODEL)
    if not base_url:
        raise SystemExit("--judge openai needs --judge-url (an OpenAI-compatible base URL ending in /v1)")
    return OpenAICompatibleLLM(base_url, model or "stub")


class Judge:
    """Answers from the injected block, then labels the answer against the gold one."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def answer(self, question: str, memories: str) -> str:
        return self.llm.complete(_ANSWER_PROMPT.format(memories=memories or "(no memories)", question=question))

    def correct(self, question: str, gold: str, answer: str) -> bool:
        """True when the judge labels ``answer`` CORRECT (anything unparseable counts as WRONG)."""
        reply = self.llm.complete(_JUDGE_PROMPT.format(question=question, gold=gold, answer=answer))
        start, end = reply.find("{"), reply.rfind("}")
        try:
            label = json.loads(reply[start : end + 1]).get("label") if start >= 0 < end else reply
        except ValueError:
            label = reply
        return str(label).strip().upper() == "CORRECT"
