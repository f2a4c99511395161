"""ImageMirror: the pinned Hindsight image copied into this stack's ECR at deploy time, and pulled by digest.

Fargate in a VPC without egress can pull only from ECR, so ``cdk-ecr-deployment`` copies the public image at deploy
time (a Lambda outside the VPC, no Docker on the deploying machine). Two things make repeated deploys safe:

- The copy may run again with the same destination (an update of the copy's properties, or a rollback re-applying
  the previous ones); pushing an existing tag into an IMMUTABLE repository fails (cdklabs/cdk-ecr-deployment#207).
  The one tag the mirror writes is therefore excluded from tag immutability, and a configured source digest gives
  every digest its own tag.
- What runs is pinned by digest, not by tag: after the copy the destination's digest is read back and the task
  definitions reference ``<repository>@sha256:...``, so nothing pushed later under a tag changes a running service.

The copy's role may push to this one repository only (``ecr:GetAuthorizationToken`` has no resource scope);
``cdk-ecr-deployment``'s own statements (push and ``s3:GetObject`` on ``*``) never reach it.
"""

from __future__ import annotations

import cdk_ecr_deployment as ecr_deployment
from aws_cdk import RemovalPolicy
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.config import HindsightConfig, ImageSource
from infra.permissions import ECR_PUSH_ACTIONS

ARCHITECTURE = "arm64"


def mirror_tag(image_tag: str, digest: str | None) -> str:
    """The tag the mirror writes: the version, plus the digest's prefix when the source is pinned by digest."""
    return image_tag if digest is None else f"{image_tag}-{digest.removeprefix('sha256:')[:12]}"


class ImageMirror(Construct):
    """Exposes ``repository``, ``image`` (by digest), ``digest``, ``copy`` and ``role``; ``grant_pull(role)``,
    ``grant_task_pull(task)``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        source_repository: str,
        image_tag: str,
        digest: str | None,
        key: kms.IKey,
    ) -> None:
        super().__init__(scope, construct_id)
        self.tag = mirror_tag(image_tag, digest)
        source = f"{source_repository}@{digest}" if digest else f"{source_repository}:{image_tag}"
        self.repository = ecr.Repository(
            self,
            "Repository",
            image_scan_on_push=True,
            # Immutable, except the one tag this mirror (re)writes: a repeated copy of the same image must not
            # fail the deploy or its rollback. Tasks pull by digest, so no tag decides what runs.
            image_tag_mutability=ecr.TagMutability.IMMUTABLE_WITH_EXCLUSION,
            image_tag_mutability_exclusion_filters=[ecr.ImageTagMutabilityExclusionFilter.wildcard(self.tag)],
            encryption=ecr.RepositoryEncryption.KMS,
            encryption_key=key,
            removal_policy=RemovalPolicy.DESTROY,
            empty_on_delete=True,
        )
        self.role = iam.Role(
            self,
            "CopyRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Copies the pinned Hindsight image into its one ECR repository at deploy time",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AWSLambdaBasicExecutionRole")
            ],
        )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=list(ECR_PUSH_ACTIONS), resources=[self.repository.repository_arn])
        )
        self.role.add_to_policy(iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"]))
        self.copy = ecr_deployment.ECRDeployment(
            self,
            "Copy",
            src=ecr_deployment.DockerImageName(source),
            dest=ecr_deployment.DockerImageName(f"{self.repository.repository_uri}:{self.tag}"),
            image_arch=[ARCHITECTURE],
            # The library adds push and s3:GetObject on "*" to whatever role it gets; an immutable view of the role
            # keeps those statements out, so the role holds only the scoped statements above.
            role=self.role.without_policy_updates(),
        )
        self.copy.node.add_dependency(self.role)
        lookup = cr.AwsCustomResource(
            self,
            "Digest",
            on_update=cr.AwsSdkCall(  # runs on create too
                service="ECR",
                action="describeImages",
                parameters={"repositoryName": self.repository.repository_name, "imageIds": [{"imageTag": self.tag}]},
                physical_resource_id=cr.PhysicalResourceId.from_response("imageDetails.0.imageDigest"),
                output_paths=["imageDetails.0.imageDigest"],
            ),
            policy=cr.AwsCustomResourcePolicy.from_sdk_calls(resources=[self.repository.repository_arn]),
            install_latest_aws_sdk=False,
        )
        lookup.node.add_dependency(self.copy)
        self.lookup = lookup
        self.digest = lookup.get_response_field("imageDetails.0.imageDigest")
        self.image = ecs.ContainerImage.from_registry(f"{self.repository.repository_uri}@{self.digest}")

    def grant_pull(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let a task's execution role pull the mirrored image (``from_registry`` grants nothing by itself)."""
        return self.repository.grant_pull(grantee)

    def grant_task_pull(self, task: ecs.TaskDefinition) -> iam.Grant:
        """:meth:`grant_pull` to task's execution role."""
        return self.grant_pull(task.obtain_execution_role())


def hindsight_image(
    scope: Construct, config: HindsightConfig, *, key: kms.IKey
) -> tuple[ecs.ContainerImage, ImageMirror | None]:
    """The image the tasks run (``hindsight.image_source``), and the mirror when this stack copies it."""
    digest = config.image_digest
    if config.image_source is ImageSource.REGISTRY:
        return ecs.ContainerImage.from_registry(
            config.image_repository + (f"@{digest}" if digest else f":{config.image_tag}")
        ), None
    if config.image_source is ImageSource.ECR:
        assert config.ecr_repository_arn is not None
        repo = ecr.Repository.from_repository_arn(scope, "Repository", config.ecr_repository_arn)
        return ecs.ContainerImage.from_ecr_repository(repo, digest or config.image_tag), None
    mirror = ImageMirror(
        scope, "Mirror", source_repository=config.image_repository, image_tag=config.image_tag, digest=digest, key=key
    )
    return mirror.image, mirror


def hindsight_image_uri(scope: Construct, config: HindsightConfig, *, key: kms.IKey) -> tuple[str, ImageMirror | None]:
    """The image's URI for a Kubernetes pod (``hindsight.image_source``, as :func:`hindsight_image`), and the mirror
    when this stack copies it (the nodes' role pulls it)."""
    digest = config.image_digest
    if config.image_source is ImageSource.REGISTRY:
        return config.image_repository + (f"@{digest}" if digest else f":{config.image_tag}"), None
    if config.image_source is ImageSource.ECR:
        assert config.ecr_repository_arn is not None
        repo = ecr.Repository.from_repository_arn(scope, "Repository", config.ecr_repository_arn)
        return repo.repository_uri_for_tag_or_digest(digest or config.image_tag), None
    mirror = ImageMirror(
        scope, "Mirror", source_repository=config.image_repository, image_tag=config.image_tag, digest=digest, key=key
    )
    return f"{mirror.repository.repository_uri}@{mirror.digest}", mirror
