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
