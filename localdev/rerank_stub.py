"""The stand-in's Bedrock rerank (``POST /rerank``, the Bedrock Agent Runtime ``Rerank`` API's body and answer), so
the deployed reranker path (Hindsight's ``litellm-sdk`` provider with a ``bedrock/<model ARN>`` model, which LiteLLM
sends SigV4-signed to ``<api base>/rerank``) runs locally end to end.

The score is lexical and deterministic: the share of the query's words (three letters or more) a document contains.
It stands for a real model's judgement only in that the document sharing the most of the query ranks first; it
measures nothing about a real reranker's quality.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["rerank_response"]

_WORD = re.compile(r"[a-z0-9]{3,}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def rerank_response(body: dict[str, Any]) -> dict[str, Any]:
    """Bedrock's answer to a ``Rerank`` body: every source's ``index`` and ``relevanceScore`` in [0, 1], best first,
    at most ``numberOfResults``."""
    query = " ".join(str((q.get("textQuery") or {}).get("text", "")) for q in body.get("queries") or [])
    wanted = _words(query)
    sources = body.get("sources") or []
    texts = [str(((s.get("inlineDocumentSource") or {}).get("textDocument") or {}).get("text", "")) for s in sources]
    scores = [len(wanted & _words(t)) / len(wanted) if wanted else 0.0 for t in texts]
    config = (body.get("rerankingConfiguration") or {}).get("bedrockRerankingConfiguration") or {}
    limit = int(config.get("numberOfResults") or len(texts))
    ranked = sorted(range(len(texts)), key=lambda i: (-scores[i], i))[:limit]
    return {"results": [{"index": i, "relevanceScore": round(scores[i], 6)} for i in ranked]}
