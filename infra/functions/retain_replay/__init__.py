"""Lambda function: delivers the retain queue (the agent's durable spool) to Hindsight."""
