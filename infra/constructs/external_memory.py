"""ExternalMemory: the customer's own Hindsight (``hindsight.mode=external``), used exactly as :class:`MemoryService`.

The agent, the gateway target, the retain replay function and the memory admin functions reach Hindsight only
through ``url_in(scope)``, ``ca_bundle``, ``allow_from(peer)``, the two key ARNs and the two grants
(:class:`~infra.constructs.memory_endpoint.MemoryEndpoint`); this construct answers them for a server this app does
not build: the configured URL (known at synthesis, so no handoff), the given secrets (grants on exactly those ARNs,
and decrypt on their key only through Secrets Manager), and egress to the endpoint's CIDRs on its port.

Its :class:`IsolationProbe` runs at every create and update: a function in the isolated subnets that proves the
server refuses foreign identities the canary bank of another agent (``memory_adapter.isolation_probe``) and fails the
deploy (``hindsight.external_probe=fail``) or warns (``warn``: an ERROR log line, a metric and an alarm).
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from pathlib import Path

from aws_cdk import CfnOutput, CustomResource, Duration, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.config import AuthMode
from infra.constructs.functions import FUNCTIONS_DIR, handler_sha256, provider_framework, python_function
from infra.constructs.memory_endpoint import ConnectableConstruct
from infra.constructs.memory_layer import RUNTIME as LAYER_RUNTIME
from infra.constructs.memory_layer import adapter_layer_version
from infra.constructs.memory_props import ExternalMemoryProps
from infra.functions.isolation_probe import index as probe_index
from infra.permissions import SECRET_READ_ACTIONS
from memory_adapter import _hindsight_api, hindsight_routes, isolation_probe, transport

PROBE_DIR = FUNCTIONS_DIR / "isolation_probe"
#: The port each scheme implies when the URL names none.
_DEFAULT_PORTS = {"https": 443, "http": 80}


class ExternalMemory(Construct):
    """The customer's Hindsight; exposes ``url``, ``port``, ``probe`` and the :class:`MemoryEndpoint` methods."""

    def __init__(self, scope: Construct, construct_id: str, props: ExternalMemoryProps) -> None:
        super().__init__(scope, construct_id)
        config, auth, network = props.config, props.auth, props.foundation.network
        assert config.external_url is not None
        assert config.external_operator_key_secret_arn is not None
        self.config = config
        self.url = config.external_url.rstrip("/")
        parts = urllib.parse.urlsplit(self.url)
        self.port = parts.port or _DEFAULT_PORTS[parts.scheme]
        self._cidrs = list(config.external_egress_cidrs) or [network.vpc.vpc_cidr_block]
        self.operator_key_secret_arn = config.external_operator_key_secret_arn
        self.agent_key_secret_arn = config.external_agent_key_secret_arn if auth.mode is AuthMode.IAM else None
        self.probe = IsolationProbe(self, "IsolationProbe", props, memory=self)

    def url_in(self, scope: Construct) -> str:
        """The configured URL (the same in every stack: nothing to hand off)."""
        return self.url

    @property
    def ca_bundle(self) -> str | None:
        """The PEM of ``hindsight.ca_bundle`` (the server's private CA) every client trusts, or None."""
        return (
            None if self.config.ca_bundle is None else self.config.ca_bundle.read_text(encoding="ascii").strip() + "\n"
        )

    def allow_from(self, peer: ConnectableConstruct) -> None:
        """Let peer reach the endpoint's port at its CIDRs (workload groups already reach 443 anywhere)."""
        if self.port == 443:
            return
        for cidr in self._cidrs:
            peer.connections.allow_to(ec2.Peer.ipv4(cidr), ec2.Port.tcp(self.port), "To the external Hindsight")

    def grant_agent_key_read(self, grantee: iam.IGrantable) -> None:
        """Let grantee read the given agent key (IAM mode; nothing otherwise)."""
        if self.agent_key_secret_arn is not None:
            self._grant_secret(grantee, self.agent_key_secret_arn)

    def grant_operator_key_read(self, grantee: iam.IGrantable) -> None:
        """Let grantee (the admin functions and the probe, never the agent) read the given operator key."""
        self._grant_secret(grantee, self.operator_key_secret_arn)

    def _grant_secret(self, grantee: iam.IGrantable, arn: str) -> None:
        iam.Grant.add_to_principal(grantee=grantee, actions=list(SECRET_READ_ACTIONS), resource_arns=[arn])
        key = self.config.external_secrets_key_arn
        if key is not None:  # a customer-managed key: decrypt through Secrets Manager only
            iam.Grant.add_to_principal(
                grantee=grantee,
                actions=["kms:Decrypt"],
                resource_arns=[key],
                conditions={
                    "StringEquals": {"kms:ViaService": f"secretsmanager.{Stack.of(self).region}.amazonaws.com"}
                },
            )


class IsolationProbe(Construct):
    """The deploy-time isolation probe: a function in the isolated subnets behind CDK's provider framework (which
    answers CloudFormation from outside the VPC); exposes ``function``, ``resource``, ``result`` and ``alarm``."""

    def __init__(
        self, scope: Construct, construct_id: str, props: ExternalMemoryProps, *, memory: ExternalMemory
    ) -> None:
        super().__init__(scope, construct_id)
        config, auth, agent_name, layer = memory.config, props.auth, props.agent_name, props.layer
        network, logs_key, alerts = props.foundation.network, props.foundation.logs_key, props.foundation.alerts
        #: What the probe checks: the resource's properties, and its environment for ``python -m smoke``'s direct
        #: invocation (``RequestType: Probe``).
        settings = probe_index.ProbeSettings(
            hindsight_api_url=memory.url,
            ca_bundle=memory.ca_bundle,
            operator_key_secret_arn=memory.operator_key_secret_arn,
            agent_key_secret_arn=memory.agent_key_secret_arn,
            agent_name=agent_name,
            tenant_id=auth.tenant_id or None,
            on_leak=config.external_probe.value,
        ).to_env()
        self.security_group = network.workload_security_group(
            self, "SecurityGroup", description="Isolation probe: to the external Hindsight and AWS endpoints only"
        )
        self.connections = self.security_group.connections
        memory.allow_from(self)
        self.function = python_function(
            self,
            "Function",
            log_group_id="Logs",
            source=PROBE_DIR,
            layers=[adapter_layer_version(self, "MemoryAdapterLayer", path=layer.path)],
            runtime=LAYER_RUNTIME,
            description="Deploy-time probe: the external Hindsight must refuse foreign identities another's bank",
            timeout=Duration.minutes(2),
            memory_size=256,
            logs_key=logs_key,
            json_logs=True,
            environment=settings,
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            security_groups=[self.security_group],
        )
        memory.grant_operator_key_read(self.function)
        memory.grant_agent_key_read(self.function)
        self.provider = provider_framework(self, "Provider", on_event_handler=self.function, logs_key=logs_key)
        # Changed settings or probe code (the handler, or the probe and the wire it speaks on the layer) run it again
        # at the next deploy, as a new resource (its id ends in their digest): a probe that fails is a failed Create,
        # which the rollback deletes (a no-op), never an Update, whose rollback would probe the same server again and
        # fail the same way (UPDATE_ROLLBACK_FAILED). The probe of the last deploy is deleted once the update succeeded.
        probe_code = b"".join(
            Path(str(m.__file__)).read_bytes() for m in (isolation_probe, _hindsight_api, hindsight_routes, transport)
        )
        properties = {
            **settings,
            "HandlerSha256": handler_sha256(PROBE_DIR),
            "ProbeSha256": hashlib.sha256(probe_code).hexdigest(),
        }
        assert not any(Token.is_unresolved(v) for v in properties.values())  # settings, known at synthesis
        digest = hashlib.sha256(json.dumps(properties, sort_keys=True).encode()).hexdigest()[:8]
        self.resource = CustomResource(
            self,
            f"Probe{digest}",
            service_token=self.provider.service_token,
            resource_type="Custom::HindsightIsolationProbe",
            properties=properties,
        )
        self.resource.node.add_dependency(self.function.role or self.function)
        #: The probe's one-line verdict (a stack output, so ``cdk deploy`` prints it).
        self.result = self.resource.get_att_string(probe_index.ATTR_RESULT)
        CfnOutput(self, "Result", value=self.result, description="The deploy-time isolation probe's verdict")
        CfnOutput(
            self,
            "FunctionName",
            value=self.function.function_name,
            description="python -m smoke invokes it to probe again (with a real user's token where there is one)",
        )
        self.alarm = alerts.watch(
            cloudwatch.Alarm(
                self,
                "LeakAlarm",
                alarm_description="The external Hindsight let a foreign identity read another's bank at the last "
                "deploy (hindsight.external_probe=warn): it does not run the hindsight_isolation extension; see "
                "docs/deploying.md 'Bring your own Hindsight'",
                metric=cloudwatch.Metric(
                    namespace=probe_index.METRICS_NAMESPACE,
                    metric_name=probe_index.METRIC_LEAKS,
                    period=Duration.hours(1),
                    statistic="Maximum",
                ),
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": probe_index.METRICS_NAMESPACE}},
            )
        )
