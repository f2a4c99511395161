"""MemoryAdapterLayer: ``memory_adapter`` and its dependencies as a Lambda layer (arm64, Python 3.12+), shareable.

:func:`adapter_layer_version` is the layer's one definition. The ``-Agent`` stack publishes it for reuse (its ARN
in SSM); a stack whose own functions run on it (``-Operations``) creates its version from the same build, because
importing the ARN across stacks would be an export that changes with every release of the layer, which
CloudFormation refuses to update while another stack imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import CfnOutput, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.config import LayerConfig

#: The runtime the layer is built for (``infra.build.TARGET_PYTHON``: its bytecode and compiled wheels); functions
#: that use the layer run on it.
RUNTIME = lambda_.Runtime.PYTHON_3_12


def adapter_layer_version(scope: Construct, construct_id: str, *, path: Path) -> lambda_.LayerVersion:
    """A version of the layer built by ``make build`` into ``path`` (``build/layer``, holding ``python/``)."""
    return lambda_.LayerVersion(
        scope,
        construct_id,
        code=lambda_.Code.from_asset(str(path)),
        compatible_architectures=[lambda_.Architecture.ARM_64],
        compatible_runtimes=[RUNTIME, lambda_.Runtime.PYTHON_3_13],
        description="memory_adapter: durable, isolated agent memory on self-hosted Hindsight (arm64, py3.12+)",
        removal_policy=RemovalPolicy.RETAIN,  # functions in other stacks and accounts may still use old versions
    )


@dataclass(frozen=True)
class MemoryLayerProps:
    """What the published layer is built from: the ``layer`` section, and the SSM name publishing its ARN unless
    ``layer.parameter_name`` is set."""

    config: LayerConfig
    parameter_name: str


class MemoryAdapterLayer(Construct):
    """The layer built by ``make build`` into ``build/layer/python``; its ARN is published to SSM for reuse."""

    def __init__(self, scope: Construct, construct_id: str, props: MemoryLayerProps) -> None:
        super().__init__(scope, construct_id)
        self.layer = adapter_layer_version(self, "Layer", path=Path(props.config.path))
        self.parameter = ssm.StringParameter(
            self,
            "ArnParameter",
            parameter_name=props.config.parameter_name or props.parameter_name,
            description="ARN of the latest memory_adapter layer version",
            string_value=self.layer.layer_version_arn,
        )
        CfnOutput(self, "LayerArn", value=self.layer.layer_version_arn, description="memory_adapter layer version ARN")
        CfnOutput(self, "LayerArnParameter", value=self.parameter.parameter_name, description="SSM name holding it")
