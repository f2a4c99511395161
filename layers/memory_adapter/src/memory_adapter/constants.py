"""Names of the environment variables the memory adapter reads, in one place (README "Settings" lists them all).

Every other setting ``name`` of :class:`~memory_adapter.config.HindsightAgentCoreConfig` is read from
``HINDSIGHT_ADAPTER_`` + ``name`` upper-cased (:data:`memory_adapter.config.ENV_VARS`). The agent imports these names
instead of spelling them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = [
    "ADAPTER_ENV_PREFIX",
    "CA_BUNDLE_ENV",
    "DEFAULT_RECALL_BUDGET",
    "DEFAULT_RECALL_CANDIDATE_TOKENS",
    "DEFAULT_RECALL_MAX_TOKENS",
    "HINDSIGHT_API_KEY_ENV",
    "HINDSIGHT_API_KEY_SECRET_ARN_ENV",
    "HINDSIGHT_API_URL_ENV",
    "HINDSIGHT_OPERATOR_KEY_ENV",
    "LOG_HASH_SALT_ENV",
    "MAX_RECALL_CANDIDATE_TOKENS",
    "MEMORY_ACTOR_HEADER",
    "METRICS_NAMESPACE",
    "RECALL_BUDGETS",
    "RECALL_SERVER_SETTINGS",
    "RETAIN_DEAD_LETTER_QUEUE_URL_ENV",
    "RETAIN_DELIVERY_TIMEOUT_ENV",
    "RETAIN_SERVER_SETTINGS",
    "SPOOL_QUEUE_URL_ENV",
    "SQS_MAX_MESSAGE_BYTES",
]

#: Hindsight's base URL (the prior art's name).
HINDSIGHT_API_URL_ENV: Final = "HINDSIGHT_API_URL"
#: Bearer credential for turns without one of their own (the prior art's name; its second name,
#: ``HINDSIGHT_API_TOKEN``, lives in memory_adapter.compat).
HINDSIGHT_API_KEY_ENV: Final = "HINDSIGHT_API_KEY"
#: The Secrets Manager secret holding the IAM-mode agent key: the agent and the replay function read it (the queue
#: never carries it).
HINDSIGHT_API_KEY_SECRET_ARN_ENV: Final = "HINDSIGHT_API_KEY_SECRET_ARN"  # noqa: S105 (a variable name)
#: The private CA's certificates every HTTPS client of Hindsight trusts besides the default store: a PEM file's
#: path or the PEM itself (memory_adapter.tls).
CA_BUNDLE_ENV: Final = "HINDSIGHT_CA_BUNDLE"
#: Prefix of the adapter's own settings.
ADAPTER_ENV_PREFIX: Final = "HINDSIGHT_ADAPTER_"
#: Salt of the short hashes that stand for bank ids in logs.
LOG_HASH_SALT_ENV: Final = ADAPTER_ENV_PREFIX + "LOG_HASH_SALT"
#: The SQS queue of the durable spool (the adapter's ``spool_queue_url`` setting): set by the deployed stack.
SPOOL_QUEUE_URL_ENV: Final = ADAPTER_ENV_PREFIX + "SPOOL_QUEUE_URL"

# The replay function (memory_adapter.queue_replay) and the operator's redrive command (memory_adapter.redrive).
#: Where the replay function moves a record Hindsight refused for good, with the reason.
RETAIN_DEAD_LETTER_QUEUE_URL_ENV: Final = "RETAIN_DEAD_LETTER_QUEUE_URL"
#: Seconds the replay function waits for Hindsight per record.
RETAIN_DELIVERY_TIMEOUT_ENV: Final = "RETAIN_DELIVERY_TIMEOUT_SECONDS"
#: The redrive command's operator credential, when not read from Secrets Manager (never the agent's).
HINDSIGHT_OPERATOR_KEY_ENV: Final = "HINDSIGHT_OPERATOR_KEY"

#: Hindsight's recall search depths, and the one every recall path uses unless configured
#: (``HINDSIGHT_ADAPTER_RECALL_BUDGET``: the agent's recall, the memory tools, the operator's recall).
RECALL_BUDGETS: Final = ("low", "mid", "high")
DEFAULT_RECALL_BUDGET: Final = "mid"
#: Most tokens of memories one recall returns unless configured (``HINDSIGHT_ADAPTER_RECALL_MAX_TOKENS``).
DEFAULT_RECALL_MAX_TOKENS: Final = 1500
#: Tokens of candidates asked of Hindsight for the adapter's own re-ranking unless configured
#: (``HINDSIGHT_ADAPTER_RECALL_CANDIDATE_TOKENS``; :mod:`memory_adapter.rerank`): ~210 of the ~300 candidates at
#: budget ``mid``, as good as all of them on LoCoMo dev in every category, two runs (BENCHMARKS.md).
DEFAULT_RECALL_CANDIDATE_TOKENS: Final = 4000
#: The most ``recall_candidate_tokens`` may ask for: more than the whole candidate list at any budget (``high``:
#: Hindsight's 1,000 candidates, ~18 o200k tokens each on LoCoMo), so a larger value adds nothing but a typo's cost.
MAX_RECALL_CANDIDATE_TOKENS: Final = 32000

#: Largest SQS message (body and attributes): 1 MiB since 2025 (it was 256 KiB); the queue is created with it.
SQS_MAX_MESSAGE_BYTES: Final = 1_048_576

#: Hindsight recall settings the product runs with, locally and deployed (server-wide ``HINDSIGHT_API_*``), chosen by
#: ``make eval`` (BENCHMARKS.md, "Recall quality"): with the graph arm, Hindsight 1.1.0's unweighted RRF ranked
#: memories that the graph arm also listed (it leaves out its own semantic seeds, the best hits) above the best
#: semantic hits: on LoCoMo dev the injected block's evidence recall@10 was 0.42 with it and 0.58 without
#: (semantic arm alone 0.62, naive MiniLM RAG 0.50), in every category, at lower latency (p50 189 -> 142 ms).
RECALL_SERVER_SETTINGS: Final[Mapping[str, str]] = MappingProxyType({"HINDSIGHT_API_ENABLE_GRAPH_RETRIEVAL": "false"})
#: Hindsight 1.1.0's own retain lane (``hindsight_api.api.admission``), locally and deployed: retains are queued,
#: never refused for load (they have their own durable path; a 503 would only send them round the adapter's retries
#: and spool). Its bound on retains in flight stays (derived: 32 per core), so a burst of retains cannot take every
#: pooled connection the recalls need; its wait (2 s by default, then 503) is lifted above any caller's retain
#: timeout (the adapter's 15 s, the Python client's 300 s). A queued retain whose caller hangs up leaves the queue at
#: once (Hindsight's disconnect token), so the long wait holds no work nobody waits for.
RETAIN_SERVER_SETTINGS: Final[Mapping[str, str]] = MappingProxyType(
    {"HINDSIGHT_API_ADMISSION_RETAIN_MAX_WAIT_MS": "600000"}
)

#: The header the operator's tools send to say who (an operator principal) or what (``schedule:<rule>``) changes
#: memory; the isolation extension names it in the memory events it emits (honoured on operator requests only).
MEMORY_ACTOR_HEADER: Final = "x-memory-actor"

#: The CloudWatch namespace of the agent's, the retain replay's and the operator functions' metrics (one dashboard
#: shows them all): the stack sets it as ``POWERTOOLS_METRICS_NAMESPACE``, and each process falls back to it.
METRICS_NAMESPACE: Final = "AgentCoreHindsightMemory"
