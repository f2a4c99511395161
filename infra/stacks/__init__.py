"""The deployable stacks: network, data (stateful), identity, memory service and agent."""
