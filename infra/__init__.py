"""CDK infrastructure: typed configuration, constructs and the stacks that deploy the memory service and agent."""
