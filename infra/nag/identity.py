"""The ``-Identity`` stack's acknowledgements: the quick-start user pool and the signing-key mirror."""

from __future__ import annotations

from infra.nag import common
from infra.stacks.identity_stack import IdentityStack


def acknowledge(stack: IdentityStack) -> None:
    """The user pool (cognito) and the JWKS mirror."""
    identity = stack.identity
    if identity.user_pool is not None:
        common.ack(
            identity.user_pool,
            "AwsSolutions-COG2",
            "quick-start pool: MFA is optional (TOTP) so administrator-"
            "created users can sign in from the CLI; enterprises bring their own IdP with auth.mode=jwt",
        )
        common.ack(
            identity.user_pool,
            "AwsSolutions-COG8",
            "the Plus feature plan (threat protection) is a per-user cost "
            "the quick start does not impose; enable it on the pool if wanted",
        )
    mirror = identity.mirror_function
    common.lambda_outside_vpc(mirror, "it must reach the token issuer's public JWKS URL, which the isolated VPC cannot")
