"""RdsCaBundle: the region's RDS certificate bundle in an SSM parameter a deploy-time function owns.

``verify-full`` TLS to the database needs the CA that signs RDS's server certificates; the stock Hindsight image
and the Lambda runtime do not ship it, and the VPC cannot download it. A function outside the VPC fetches it at
deploy time (``infra/functions/rds_ca``) and owns the parameter, so CloudFormation never resets its value; a rollback
puts back the last bundle from the parameter's history instead of downloading again (``owned_parameter``).
"""

from __future__ import annotations

from aws_cdk import CustomResource, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.constructs.functions import FUNCTIONS_DIR
from infra.constructs.owned_parameter import owned_parameter_digest, owned_parameter_function
from infra.permissions import SSM_READ_ACTIONS

FUNCTION_DIR = FUNCTIONS_DIR / "rds_ca"
#: Where the containers write the bundle before connecting (``/tmp`` is the tasks' writable volume).
CA_FILE = "/tmp/rds-ca.pem"  # noqa: S108 (a task-scoped volume)


def bundle_url(region: str) -> str:
    """AWS's per-region RDS certificate bundle (RDS User Guide, "Certificate bundles for specific AWS Regions")."""
    return f"https://truststore.pki.rds.amazonaws.com/{region}/{region}-bundle.pem"


class RdsCaBundle(Construct):
    """Exposes ``parameter`` (the PEM bundle) and ``function``; ``grant_read(grantee)``."""

    def __init__(self, scope: Construct, construct_id: str, *, parameter_name: str, logs_key: kms.IKey) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.function = owned_parameter_function(
            self,
            "Function",
            log_group_id="Logs",
            source=FUNCTION_DIR,
            parameter_name=parameter_name,
            description="Copies the region's RDS certificate bundle into SSM at deploy time (verify-full TLS)",
            timeout=Duration.seconds(30),
            logs_key=logs_key,
        )
        bundle = CustomResource(
            self,
            "Bundle",
            service_token=self.function.function_arn,
            resource_type="Custom::RdsCaBundle",
            properties={
                "BundleUrl": bundle_url(stack.region),
                "ParameterName": parameter_name,
                "HandlerSha256": owned_parameter_digest(FUNCTION_DIR),
            },
        )
        bundle.node.add_dependency(self.function.role or self.function)
        self.parameter = ssm.StringParameter.from_string_parameter_attributes(
            self, "Parameter", parameter_name=bundle.get_att_string("ParameterName"), simple_name=False
        )

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let grantee read the bundle (a plain String parameter: no KMS key involved), GetParameter only."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=list(SSM_READ_ACTIONS), resource_arns=[self.parameter.parameter_arn]
        )
