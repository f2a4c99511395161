"""SecretSource: one value a Hindsight process reads at start from Secrets Manager (a secret, or one JSON field of
it) or from an SSM parameter, defined once for both platforms.

ECS injects it as a container secret (:meth:`SecretSource.ecs_secret`; the execution role reads it); on EKS the
pod's own role reads it in an init step (:meth:`SecretSource.pod_environment`, :meth:`SecretSource.grant_read`), so
no value is ever in a manifest, a template or a plain environment variable.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_ssm as ssm

#: Prefixes of the init step's variables naming what to read (``infra.constructs.eks_manifests.FETCH_SECRETS``).
SECRET_ARN_PREFIX = "SECRET_ARN_"  # noqa: S105 (a variable-name prefix, not a secret)
SECRET_FIELD_PREFIX = "SECRET_FIELD_"  # noqa: S105
PARAMETER_PREFIX = "PARAMETER_NAME_"


@dataclass(frozen=True)
class SecretSource:
    """Exactly one of ``secret`` (with an optional JSON ``field``) and ``parameter``."""

    secret: secretsmanager.ISecret | None = None
    field: str | None = None
    parameter: ssm.IParameter | None = None

    def __post_init__(self) -> None:
        if (self.secret is None) == (self.parameter is None) or (self.field is not None and self.secret is None):
            raise ValueError("a SecretSource is a secret (optionally one field of it) or a parameter, not both")

    def ecs_secret(self) -> ecs.Secret:
        """The ECS container secret (ECS grants the execution role read)."""
        if self.parameter is not None:
            return ecs.Secret.from_ssm_parameter(self.parameter)
        assert self.secret is not None
        return ecs.Secret.from_secrets_manager(self.secret, self.field)

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """What ECS grants the execution role for :meth:`ecs_secret`, granted to grantee (the pod's role)."""
        if self.parameter is not None:
            return self.parameter.grant_read(grantee)
        assert self.secret is not None
        return self.secret.grant_read(grantee)

    def pod_environment(self, name: str) -> dict[str, str]:
        """The init step's variables that say where the value of ``name`` is (ARNs and names, never values)."""
        if self.parameter is not None:
            return {PARAMETER_PREFIX + name: self.parameter.parameter_name}
        assert self.secret is not None
        env = {SECRET_ARN_PREFIX + name: self.secret.secret_arn}
        if self.field is not None:
            env[SECRET_FIELD_PREFIX + name] = self.field
        return env
