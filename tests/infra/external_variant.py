"""The external-Hindsight variants (``hindsight.mode=external``) the external-mode tests synthesize: IAM mode with an
agent key, a customer-managed secrets key and a non-443 port reached through a peered CIDR; and a
Cognito deployment (no agent key) on 443."""

from __future__ import annotations

OPERATOR_KEY_ARN = "arn:aws:secretsmanager:us-east-1:111122223333:secret:hindsight/operator-key-AbC123"
AGENT_KEY_ARN = "arn:aws:secretsmanager:us-east-1:111122223333:secret:hindsight/agent-key-XyZ789"
SECRETS_KEY_ARN = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
PEERED_CIDR = "10.60.0.0/16"

EXTERNAL_IAM: dict[str, str] = {
    "auth.mode": "iam",
    "hindsight.mode": "external",
    "hindsight.external_url": "https://memory.corp.example.com:8443",
    "hindsight.external_operator_key_secret_arn": OPERATOR_KEY_ARN,
    "hindsight.external_agent_key_secret_arn": AGENT_KEY_ARN,
    "hindsight.external_secrets_key_arn": SECRETS_KEY_ARN,
    "hindsight.external_egress_cidrs": PEERED_CIDR,
}

EXTERNAL_COGNITO: dict[str, str] = {
    "env": "prod",
    "hindsight.mode": "external",
    "hindsight.external_url": "https://memory.corp.example.com",
    "hindsight.external_operator_key_secret_arn": OPERATOR_KEY_ARN,
    "hindsight.external_probe": "warn",
}
