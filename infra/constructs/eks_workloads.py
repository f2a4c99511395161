"""HindsightOnEks: Hindsight's API and workers on the customer's existing EKS cluster (``hindsight.platform=eks``).

The cluster is imported (never created): CloudFormation's kubectl function (the kubectl layer from PyPI, in the
VPC, through the cluster's security group and the EKS endpoint; its provider framework outside the VPC) assumes
``eks.kubectl_role_arn``, checks the VPC CNI's settings (:mod:`infra.constructs.eks_preflight`) and applies the
manifests of :mod:`infra.constructs.eks_manifests`. The pods' AWS role (IRSA or EKS Pod Identity) gets exactly the
grants a Fargate task's roles get for the same job: the extension object, the Bedrock models
(:func:`~infra.constructs.hindsight_task.grant_bedrock`), the secrets and parameters Hindsight reads at start, the
login's decrypt. Pulling the image and shipping logs are the nodes' (their role and log agent), as on any EKS cluster.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import Aws, CfnResource, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk.lambda_layer_kubectl_v34 import KubectlV34Layer
from constructs import Construct, IConstruct

from infra.config import EksConfig, HindsightConfig
from infra.constructs.database import VectorDatabase
from infra.constructs.eks_manifests import (
    API_NAME,
    MAINTENANCE_SERVICE_ACCOUNT,
    RESTARTED_AT_ANNOTATION,
    RESTARTER_GROUP,
    SERVICE_ACCOUNT,
    WORKER_NAME,
    ManifestInputs,
    hindsight_manifests,
)
from infra.constructs.eks_preflight import CniPreflight
from infra.constructs.foundation import Foundation
from infra.constructs.functions import FUNCTIONS_DIR, own_helper_function_logs, python_function, settings_code
from infra.constructs.hindsight_task import (
    WORKER_COMMAND,
    WORKER_HTTP_PORT,
    api_command,
    extension_environment,
    extension_read_statement,
    grant_bedrock,
)
from infra.constructs.redeploy_on_rotation import RestartTrigger
from infra.constructs.secret_source import SecretSource
from infra.functions.eks_restart.index import RestartSettings
from infra.permissions import EKS_DESCRIBE_ACTIONS, grant_bedrock_invoke

#: The DNS port CoreDNS answers on (pods with their own security group reach it through the cluster's group).
DNS_PORT = 53
KUBELET_HTTPS = 443


@dataclass(frozen=True)
class HindsightPodsProps:
    """What the pods are built from (the memory service's EKS half builds it once), the same facts a Fargate task
    gets in :class:`~infra.constructs.hindsight_task.HindsightTaskParts`.

    Args:
        eks: The ``eks`` section (the customer's cluster).
        foundation: The VPC, the log groups' key, the alarms' topic.
        database: Hindsight's PostgreSQL (the pods decrypt its login).
        image: The image's URI (mirrored into ECR, or pulled).
        environment: Every process's plain environment.
        secrets: What Hindsight reads at start, by variable (the same sources the ECS tasks' secrets are).
        extension_sha256: The extension's digest (a new extension restarts the pods).
        security_group: The pods' group (security groups for pods), which the database and the load balancer admit.
        target_group_arn: The load balancer's target group the API pods are registered in.
        restart_triggers: The events after which the pods must restart (as ECS's ``RedeployOnRotation``).
    """

    config: HindsightConfig
    eks: EksConfig
    foundation: Foundation
    database: VectorDatabase
    image: str
    environment: Mapping[str, str]
    secrets: Mapping[str, SecretSource]
    extension: s3_assets.Asset
    extension_sha256: str
    security_group: ec2.SecurityGroup
    target_group_arn: str
    restart_triggers: Sequence[RestartTrigger]


class HindsightOnEks(Construct):
    """Exposes ``cluster``, ``namespace``, ``workload_role``, ``maintenance_role``, ``manifest``, ``preflight`` (the
    CNI check the manifests wait for), ``pod_identity_associations``, ``kubectl_security_group``, ``kubectl_path``,
    ``restart_function`` and ``restart_failing_alarm``."""

    def __init__(self, scope: Construct, construct_id: str, props: HindsightPodsProps) -> None:
        super().__init__(scope, construct_id)
        config, eks_config, network = props.config, props.eks, props.foundation.network
        security_group, secrets, extension = props.security_group, props.secrets, props.extension
        self.namespace = eks_config.namespace
        assert eks_config.cluster_name is not None  # the rules require all three with platform=eks
        assert eks_config.kubectl_role_arn is not None
        assert eks_config.cluster_security_group_id is not None
        cluster_group = ec2.SecurityGroup.from_security_group_id(
            self, "ClusterSecurityGroup", eks_config.cluster_security_group_id, mutable=True
        )
        # The kubectl function reaches the cluster's private API endpoint (and the EKS and STS endpoints).
        self.kubectl_security_group = network.workload_security_group(
            self, "KubectlSecurityGroup", description="The kubectl function: HTTPS to the cluster API and endpoints"
        )
        existing = {child.node.id for child in cluster_group.node.children}
        cluster_group.add_ingress_rule(
            self.kubectl_security_group, ec2.Port.tcp(KUBELET_HTTPS), "The Hindsight stack's kubectl function"
        )
        #: What every kubectl call needs before it runs (and keeps until the manifests are deleted): the cluster
        #: API's rule for the kubectl function and the EKS endpoint its kubeconfig comes from.
        self.kubectl_path: list[IConstruct] = [c for c in cluster_group.node.children if c.node.id not in existing]
        endpoint = network.add_endpoint(self, "Eks")
        if endpoint is not None:
            self.kubectl_path.append(endpoint)
        if eks_config.pod_identity:
            network.add_endpoint(self, "EksAuth")
        provider = (
            iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(self, "Oidc", eks_config.oidc_provider_arn)
            if eks_config.oidc_provider_arn
            else None
        )
        self.cluster = eks.Cluster.from_cluster_attributes(
            self,
            "Cluster",
            cluster_name=eks_config.cluster_name,
            kubectl_role_arn=eks_config.kubectl_role_arn,
            kubectl_layer=KubectlV34Layer(self, "KubectlLayer"),
            vpc=network.vpc,
            kubectl_private_subnet_ids=network.subnet_ids,
            kubectl_security_group_id=self.kubectl_security_group.security_group_id,
            cluster_security_group_id=eks_config.cluster_security_group_id,
            open_id_connect_provider=provider,
            prune=True,
        )
        # The pods' own group: the kubelet's probes come from the nodes (the cluster's group), names resolve
        # through CoreDNS (pods in the cluster's group).
        security_group.add_ingress_rule(cluster_group, ec2.Port.tcp(config.port), "Kubelet probes of the API")
        security_group.add_ingress_rule(cluster_group, ec2.Port.tcp(WORKER_HTTP_PORT), "Kubelet probes of the workers")
        for protocol in (ec2.Port.udp(DNS_PORT), ec2.Port.tcp(DNS_PORT)):
            security_group.add_egress_rule(cluster_group, protocol, "DNS through CoreDNS")
        self.workload_role = self._role("WorkloadRole", eks_config, SERVICE_ACCOUNT, provider)
        self.maintenance_role = self._role("MaintenanceRole", eks_config, MAINTENANCE_SERVICE_ACCOUNT, provider)
        for role in (self.workload_role, self.maintenance_role):
            role.add_to_principal_policy(extension_read_statement(extension))
            grant_bedrock(self, role, config)
            for source in secrets.values():
                source.grant_read(role)
            props.database.grant_login_decrypt(role)
        if config.maintenance_embeddings_model is not None:  # the model a re-embedding moves to
            grant_bedrock_invoke(
                self, self.maintenance_role, [config.maintenance_embeddings_model.removeprefix("bedrock/")]
            )
        secret_environment: dict[str, str] = {"AWS_REGION": Aws.REGION}
        for name, source in secrets.items():
            secret_environment.update(source.pod_environment(name))
        irsa = provider is not None
        # With Pod Identity, EKS gives a pod credentials only if its association exists when the pod is created.
        self.pod_identity_associations = (
            []
            if irsa
            else [
                eks.CfnPodIdentityAssociation(
                    self,
                    association_id,
                    cluster_name=eks_config.cluster_name,
                    namespace=eks_config.namespace,
                    service_account=account,
                    role_arn=role.role_arn,
                )
                for association_id, account, role in (
                    ("PodIdentity", SERVICE_ACCOUNT, self.workload_role),
                    ("MaintenancePodIdentity", MAINTENANCE_SERVICE_ACCOUNT, self.maintenance_role),
                )
            ]
        )
        manifests = hindsight_manifests(
            config,
            eks_config,
            ManifestInputs(
                image=props.image,
                environment=props.environment,
                secret_environment=secret_environment,
                extension_environment=extension_environment(extension, props.extension_sha256),
                workload_role_arn=self.workload_role.role_arn if irsa else None,
                maintenance_role_arn=self.maintenance_role.role_arn if irsa else None,
                pod_security_group_id=security_group.security_group_id,
                target_group_arn=props.target_group_arn,
                api_command=api_command(config),
                worker_command=WORKER_COMMAND,
            ),
        )
        # Every deploy that changes the pods starts new ones: it reads the CNI's settings again first.
        pods = json.dumps(Stack.of(self).resolve(manifests), sort_keys=True)
        self.preflight = CniPreflight(self, "Preflight", cluster=self.cluster, pod_identity=not irsa, pods=pods)
        self.manifest = self.cluster.add_manifest("Hindsight", *manifests)
        # Created with kubectl apply, not create (KubernetesManifest's overwrite, which add_manifest does not take):
        # objects a failed delete left behind (a platform switched to ECS and back, a rollback) are taken over.
        cfn = self.manifest.node.default_child
        assert isinstance(cfn, CfnResource)
        cfn.add_property_override("Overwrite", True)
        for dependency in self.kubectl_path:
            self.preflight.value.node.add_dependency(dependency)
            self.manifest.node.add_dependency(dependency)
        self.manifest.node.add_dependency(self.preflight.check, *self.pod_identity_associations)
        self._place_kubectl_provider(props.foundation.logs_key)
        self._restart_on(props, cluster_group)

    def _place_kubectl_provider(self, logs_key: kms.IKey) -> None:
        """CDK's kubectl provider (a nested stack) puts its provider framework in the VPC with the kubectl handler.
        Only the handler needs the VPC (the cluster's private endpoint); the framework calls the Lambda API (no
        endpoint in the VPC) and answers CloudFormation's pre-signed S3 URL, so in a VPC without egress it would hang
        until the custom resource times out, and the rollback with it (aws/aws-cdk#12608). It runs outside the VPC,
        as every other provider framework of the stack does, without the VPC access policy; both functions log to
        groups with the logs key and the functions' retention."""
        provider = eks.KubectlProvider.get_or_create(self, self.cluster)
        framework = provider.node.find_child("Provider").node.find_child("framework-onEvent")
        assert isinstance(framework, lambda_.Function)
        function = framework.node.default_child
        assert isinstance(function, lambda_.CfnFunction)
        function.vpc_config = None
        role = framework.node.find_child("ServiceRole").node.default_child
        assert isinstance(role, iam.CfnRole)
        role.managed_policy_arns = [
            iam.ManagedPolicy.from_aws_managed_policy_name(
                "service-role/AWSLambdaBasicExecutionRole"
            ).managed_policy_arn
        ]
        assert isinstance(provider, Stack)
        own_helper_function_logs(provider, logs_key)

    def _restart_on(self, props: HindsightPodsProps, cluster_group: ec2.ISecurityGroup) -> None:
        """The function that restarts the pods after a trigger (``infra/functions/eks_restart``), in the VPC: it
        calls the cluster's private endpoint as a member of :data:`RESTARTER_GROUP` (an access entry; the cluster's
        authentication mode must include the EKS API)."""
        eks_config, network = props.eks, props.foundation.network
        group = network.workload_security_group(
            self,
            "RestartSecurityGroup",
            description="The Hindsight pods restart function: HTTPS to the cluster API",
            rules_in_group=True,
        )
        cluster_group.add_ingress_rule(group, ec2.Port.tcp(KUBELET_HTTPS), "The Hindsight pods' restart function")
        self.restart_function = python_function(
            self,
            "RestartPods",
            log_group_id="RestartPodsLogs",
            source=FUNCTIONS_DIR / "eks_restart",
            description="Restarts the Hindsight pods after their database secret rotated",
            timeout=Duration.seconds(30),
            logs_key=props.foundation.logs_key,
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            security_groups=[group],
            code=settings_code(FUNCTIONS_DIR / "eks_restart"),
            environment=RestartSettings(
                cluster_name=self.cluster.cluster_name,
                namespace=eks_config.namespace,
                workloads=(f"deployments/{API_NAME}", f"statefulsets/{WORKER_NAME}"),
                annotation=RESTARTED_AT_ANNOTATION,
            ).to_env(),
        )
        role = self.restart_function.role
        assert role is not None
        self.restart_function.add_to_role_policy(
            iam.PolicyStatement(actions=list(EKS_DESCRIBE_ACTIONS), resources=[self.cluster.cluster_arn])
        )
        eks.CfnAccessEntry(
            self,
            "RestartAccess",
            cluster_name=self.cluster.cluster_name,
            principal_arn=role.role_arn,
            kubernetes_groups=[RESTARTER_GROUP],
            type="STANDARD",
        )
        for trigger in props.restart_triggers:
            rule = events.Rule(
                self, trigger.construct_id, description=trigger.description, event_pattern=trigger.pattern
            )
            rule.add_target(targets.LambdaFunction(self.restart_function, retry_attempts=2))
        self.restart_failing_alarm = props.foundation.alerts.watch(
            cloudwatch.Alarm(
                self,
                "RestartFailing",
                alarm_description="Restarting the Hindsight pods after a credential or key change failed: run "
                f"kubectl -n {eks_config.namespace} rollout restart deployment/{API_NAME} statefulset/{WORKER_NAME}",
                metric=self.restart_function.metric_errors(period=Duration.minutes(5)),
                threshold=1,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )

    def _role(
        self,
        construct_id: str,
        eks_config: EksConfig,
        service_account: str,
        provider: iam.IOpenIdConnectProvider | None,
    ) -> iam.Role:
        """A role only the one service account of the namespace can assume: IRSA's token subject, or (Pod
        Identity) this cluster's agent, for the association that names the service account."""
        subject = f"system:serviceaccount:{eks_config.namespace}:{service_account}"
        if provider is not None:
            assert eks_config.oidc_provider_arn is not None
            issuer = eks_config.oidc_provider_arn.split(":oidc-provider/", 1)[1]
            principal: iam.IPrincipal = iam.OpenIdConnectPrincipal(
                provider, conditions={"StringEquals": {f"{issuer}:sub": subject, f"{issuer}:aud": "sts.amazonaws.com"}}
            )
        else:
            principal = iam.SessionTagsPrincipal(
                iam.ServicePrincipal("pods.eks.amazonaws.com").with_conditions(
                    {
                        "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                        "ArnEquals": {"aws:SourceArn": self.cluster.cluster_arn},
                    }
                )
            )
        return iam.Role(
            self,
            construct_id,
            assumed_by=principal,
            description=f"Hindsight pods of {subject} (EKS)",
        )
