"""Agent framework integrations: the same memory as the reference agent, for agents built with a framework.

* :mod:`memory_adapter.integrations.strands` (the ``[strands]`` extra): a Strands Agents
  ``HookProvider`` (recall before the invocation, retain after it) and the memory tools as Strands tools;
* :mod:`memory_adapter.integrations.langgraph` (the ``[langgraph]`` extra): LangGraph pre/post-model
  hooks and the memory tools as LangChain tools.

Both take the turn (:class:`memory_adapter.agentcore.MemoryTurn`) that
:class:`~memory_adapter.agentcore.AgentCoreMemory` built from verified identity, through the framework's server-side
run state (Strands' ``invocation_state``, LangGraph's run ``context``), never from the model or the payload.
Importing this package loads no framework; each module imports its framework when it is imported.
"""

from __future__ import annotations

__all__ = ["missing_extra"]


def missing_extra(module: str, framework: str, extra: str) -> ImportError:
    """The error an integration raises when its framework is not installed: which extra installs it, and how."""
    return ImportError(
        f"memory_adapter.integrations.{module} needs {framework}: install this package with its [{extra}] extra: "
        f"pip install -e 'layers/memory_adapter[{extra}]' from the repository root, or the wheel make wheel builds"
    )
