"""HindsightSecrets: the credentials the memory service owns, under its own KMS key.

- ``operator_key``: administers every bank; only the Hindsight tasks and the memory admin functions
  (:meth:`HindsightSecrets.grant_operator_key_read`) ever read it.
- ``agent_key`` (``auth.mode=iam`` only): this deployment's agent, limited to its own banks; the agent reads it with
  :meth:`HindsightSecrets.grant_agent_key_read`.
- ``llm_api_key`` (``hindsight.llm_provider=openai`` only): the external provider's key, created empty to be filled,
  or the configured secret.
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import AuthMode, LlmProvider
from infra.constructs.memory_props import MemoryProps
from infra.constructs.part import Part
from infra.constructs.secret_source import SecretSource
from infra.isolation_env import ENV_AGENT_KEY, ENV_OPERATOR_KEY
from infra.permissions import SECRET_READ_ACTIONS

#: Hindsight's variable for the external LLM's key (``hindsight_api.config``).
ENV_LLM_API_KEY = "HINDSIGHT_API_LLM_API_KEY"


class HindsightSecrets(Part):
    """Exposes ``key``, ``operator_key``, ``agent_key`` and ``llm_api_key``; ``credential_sources()`` and
    ``llm_sources()`` (the processes' variables), ``grant_agent_key_read(grantee)``,
    ``grant_operator_key_read(grantee)``."""

    def __init__(self, scope: Construct, construct_id: str, props: MemoryProps) -> None:
        """Built from its memory service's props: the LLM provider and its key (``hindsight``), the auth mode."""
        super().__init__(scope, construct_id)
        config = props.config
        self.key = kms.Key(self, "Key", description="Hindsight service secrets", enable_key_rotation=True)
        self.operator_key = self._generated(
            "OperatorKey", "Hindsight operator credential: administers every bank; never the agent's"
        )
        self.agent_key: secretsmanager.Secret | None = (
            self._generated("AgentKey", "Per-deployment agent credential (IAM runtimes): this deployment's banks only")
            if props.auth.mode is AuthMode.IAM
            else None
        )
        self.llm_api_key: secretsmanager.ISecret | None = None
        if config.llm_provider is LlmProvider.OPENAI:
            self.llm_api_key = (
                secretsmanager.Secret.from_secret_complete_arn(self, "LlmApiKey", config.llm_api_key_secret_arn)
                if config.llm_api_key_secret_arn
                else secretsmanager.Secret(
                    self,
                    "LlmApiKey",
                    description="External LLM API key for Hindsight: put the real key here",
                    encryption_key=self.key,
                )
            )

    @property
    def agent_key_secret_arn(self) -> str | None:
        """The agent key's ARN (what the agent's environment names), or None outside IAM mode."""
        return self.agent_key.secret_arn if self.agent_key is not None else None

    def credential_sources(self) -> dict[str, SecretSource]:
        """The isolation extension's keys, by the variable each becomes."""
        sources = {ENV_OPERATOR_KEY: SecretSource(secret=self.operator_key)}
        if self.agent_key is not None:
            sources[ENV_AGENT_KEY] = SecretSource(secret=self.agent_key)
        return sources

    def llm_sources(self) -> dict[str, SecretSource]:
        """The external LLM's key, by its variable (none with Bedrock)."""
        if self.llm_api_key is None:
            return {}
        return {ENV_LLM_API_KEY: SecretSource(secret=self.llm_api_key)}

    def grant_agent_key_read(self, grantee: iam.IGrantable) -> None:
        """Let grantee (the agent, in another stack) read the agent key, and only it.

        By ARN plus a decrypt grant on the key, so this stack's key policy never names the grantee's role (which
        would make this stack depend on the grantee's). Nothing outside IAM mode (there is no agent key).
        """
        if self.agent_key is None:
            return
        iam.Grant.add_to_principal(
            grantee=grantee, actions=list(SECRET_READ_ACTIONS), resource_arns=[self.agent_key.secret_arn]
        )
        self.key.grant_decrypt(grantee)

    def grant_operator_key_read(self, grantee: iam.IGrantable) -> None:
        """Let grantee (the memory admin functions, in a later stack) read the operator key, and only it; by ARN
        plus a decrypt grant, like :meth:`grant_agent_key_read`."""
        iam.Grant.add_to_principal(
            grantee=grantee, actions=list(SECRET_READ_ACTIONS), resource_arns=[self.operator_key.secret_arn]
        )
        self.key.grant_decrypt(grantee)

    def _generated(self, construct_id: str, description: str) -> secretsmanager.Secret:
        return secretsmanager.Secret(
            self,
            construct_id,
            description=description,
            encryption_key=self.key,
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=48, exclude_punctuation=True, include_space=False
            ),
        )
