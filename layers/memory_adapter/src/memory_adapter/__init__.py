"""Durable agent memory for Amazon Bedrock AgentCore Runtime on self-hosted Hindsight."""
