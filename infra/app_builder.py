"""Compose the stacks for one configuration; ``app.py`` and the infra tests both call :func:`build_stacks`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import App, Aws, Environment, Tags
from aws_cdk import aws_cloudwatch as cloudwatch

from infra.config import AppConfig, AuthMode
from infra.constructs.admin_bucket import admin_bucket_name, admin_bucket_pattern
from infra.constructs.agent_runtime import AgentRuntimeProps, GatewayAccess, make_runtime_name
from infra.constructs.creation import creation_id
from infra.constructs.external_memory import ExternalMemory
from infra.constructs.functions import own_helper_function_logs
from infra.constructs.identity import IdentityProps
from infra.constructs.memory_gateway import MemoryGatewayProps
from infra.constructs.memory_props import ExternalMemoryProps, MemoryServiceProps
from infra.constructs.memory_service import MemoryService
from infra.constructs.network import NetworkProps
from infra.stacks.agent_stack import AgentStack, AgentStackProps
from infra.stacks.data_stack import DataStack, DataStackProps
from infra.stacks.external_memory_stack import ExternalMemoryStack
from infra.stacks.gateway_stack import GatewayStack
from infra.stacks.identity_stack import IdentityStack
from infra.stacks.network_stack import NetworkStack, NetworkStackProps
from infra.stacks.operations_stack import OperationsStack, OperationsStackProps
from infra.stacks.removal import removal_policy
from infra.stacks.service_stack import MemoryServiceStack

AnyStack = (
    NetworkStack
    | DataStack
    | IdentityStack
    | MemoryServiceStack
    | ExternalMemoryStack
    | AgentStack
    | GatewayStack
    | OperationsStack
)


@dataclass(frozen=True)
class Stacks:
    """The stacks of one deployment, in deploy order."""

    network: NetworkStack
    data: DataStack | None
    identity: IdentityStack | None
    memory: MemoryServiceStack | None
    agent: AgentStack
    operations: OperationsStack
    gateway: GatewayStack | None = None
    #: ``hindsight.mode=external``: instead of ``data`` and ``memory``.
    external: ExternalMemoryStack | None = None

    def all(self) -> list[AnyStack]:
        """Every stack that exists in this configuration, in deploy order."""
        stacks = [
            self.network,
            self.data,
            self.identity,
            self.memory,
            self.external,
            self.agent,
            self.gateway,
            self.operations,
        ]
        return [s for s in stacks if s is not None]


def build_stacks(app: App, config: AppConfig) -> Stacks:
    """Network -> Data -> (Identity) -> MemoryService -> Agent -> (Gateway) -> Operations; each gets its own section
    and the objects it uses."""
    # Region always (AZ ids and load balancer logs are regional); account only if configured, so synthesis never
    # needs credentials or lookups.
    env = Environment(account=config.account, region=config.region)
    prefix = config.stack_prefix
    # Named before it exists, so the network (created first) lets its S3 gateway reach exactly this account's buckets
    # of its pattern; the name ends in the -Operations stack's creation id (a redeploy after cdk destroy, which
    # retains the bucket, gets another name).
    bucket_account = config.account or Aws.ACCOUNT_ID
    bucket_name = admin_bucket_name(prefix, account=bucket_account, region=config.region, creation=creation_id())
    bucket_pattern = admin_bucket_pattern(prefix, account=bucket_account, region=config.region)
    network_props = NetworkStackProps(
        network=NetworkProps(config=config.network, auth_mode=config.auth.mode, gateway_buckets=(bucket_pattern,)),
        alarm_email=config.alarms.email,
    )
    network = NetworkStack(app, f"{prefix}-Network", props=network_props, env=env)
    foundation = network.foundation
    external = config.hindsight.external  # the customer's Hindsight: no -Data, no -MemoryService
    data = None
    if not external:
        data_props = DataStackProps(
            config=config.database,
            removal=config.removal,
            parameter_prefix=config.parameter_prefix,
            foundation=foundation,
            events=config.events,
        )
        data = DataStack(app, f"{prefix}-Data", props=data_props, env=env)
    identity = None
    if config.auth.mode is not AuthMode.IAM:
        identity_props = IdentityProps(
            config=config.auth,
            foundation=foundation,
            removal_policy=removal_policy(config.removal, snapshots=False),  # a user pool cannot be snapshotted
            parameter_prefix=config.parameter_prefix,
        )
        identity = IdentityStack(app, f"{prefix}-Identity", props=identity_props, env=env)
    mission = config.missions.for_agent(config.agent.name)
    memory_stack: MemoryServiceStack | ExternalMemoryStack
    if data is not None:
        service_props = MemoryServiceProps(
            config=config.hindsight,
            auth=config.auth,
            agent_name=config.agent.name,
            foundation=foundation,
            database=data.database,
            identity=identity.identity if identity else None,
            eks=config.eks,
            parameter_prefix=config.parameter_prefix,
            events=data.events,
            fading=config.fading,
            mission=mission,
        )
        memory_stack = service = MemoryServiceStack(app, f"{prefix}-MemoryService", props=service_props, env=env)
        memory: MemoryService | ExternalMemory = service.memory
    else:
        external_props = ExternalMemoryProps(
            config=config.hindsight,
            auth=config.auth,
            agent_name=config.agent.name,
            foundation=foundation,
            layer=config.layer,
        )
        memory_stack = ExternalMemoryStack(app, f"{prefix}-ExternalMemory", props=external_props, env=env)
        memory = memory_stack.memory
    gateway_url_parameter = f"{config.parameter_prefix}/gateway/mcp-url"
    # The gateway deploys after the agent: the agent finds its URL by the parameter's name, never through a reference
    # to the later stack.
    gateway_access = (
        GatewayAccess(url_parameter=gateway_url_parameter, target_name=config.gateway.target_name)
        if config.agent.tools_via_gateway
        else None
    )
    runtime_props = AgentRuntimeProps(
        config=config.agent,
        auth=config.auth,
        foundation=foundation,
        memory=memory,
        identity=identity.identity if identity else None,
        runtime_name=make_runtime_name(config.prefix, config.env_name, config.agent.name),
        gateway=gateway_access,
        mission=mission,
    )
    agent_props = AgentStackProps(
        runtime=runtime_props,
        layer=config.layer,
        retain_queue=config.retain_queue,
        removal=config.removal,
        layer_parameter_name=f"{config.parameter_prefix}/memory-adapter-layer-arn",
    )
    agent = AgentStack(app, f"{prefix}-Agent", props=agent_props, env=env)
    gateway = None
    if config.gateway_enabled:
        assert identity is not None  # the rules refuse a gateway with auth.mode=iam
        gateway_props = MemoryGatewayProps(
            config=config.gateway,
            agent_name=config.agent.name,
            recall_settings=config.agent.recall_settings,
            url_parameter_name=gateway_url_parameter,
            private_access=config.agent.tools_via_gateway,
            foundation=foundation,
            memory=memory,
            identity=identity.identity,
            layer_path=Path(config.layer.path),
        )
        gateway = GatewayStack(app, f"{prefix}-Gateway", props=gateway_props, env=env)
        gateway.add_stack_dependency(agent, "deploys after the agent, which finds it by its URL parameter at run time")
    other_alarms = memory_alarms(memory, data)
    if identity is not None:
        other_alarms.append(identity.identity.mirror_alarm)
    if gateway is not None:
        other_alarms.extend(gateway.gateway.alarms)
    operations_props = OperationsStackProps(
        config=config.operations,
        retention=config.retention,
        layer=config.layer,
        removal=config.removal,
        bucket_name=bucket_name,
        agent_name=config.agent.name,
        recall_settings=config.agent.recall_settings,
        dashboard_name=prefix,
        foundation=foundation,
        database=data.database if data is not None else None,
        memory=memory,
        retain_queue=agent.retain_queue,
        retain_replay=agent.retain_replay,
        other_alarms=tuple(other_alarms),
        memory_events=data.events if data is not None else None,
    )
    operations = OperationsStack(app, f"{prefix}-Operations", props=operations_props, env=env)
    operations.add_stack_dependency(agent, "watches the agent and runs last: cdk deploy --all keeps the stacks' order")
    if gateway is not None:
        operations.add_stack_dependency(gateway, "shows the gateway's alarms and runs last")
    if isinstance(memory_stack, ExternalMemoryStack):
        for consumer in (agent, gateway, operations):
            if consumer is not None:
                consumer.add_stack_dependency(memory_stack, "the isolation probe passes before Hindsight is used")
    # -- deploy-safety (issue 21): every log group the stacks cause has retention and the logs key --
    for stack in (network, data, identity, memory_stack, agent, gateway, operations):
        if stack is not None:
            own_helper_function_logs(stack, foundation.logs_key)
    # -- end deploy-safety --
    for key, value in config.tags.items():
        Tags.of(app).add(key, value)
    Tags.of(app).add("environment", config.env_name)
    return Stacks(
        network=network,
        data=data,
        identity=identity,
        memory=memory_stack if isinstance(memory_stack, MemoryServiceStack) else None,
        agent=agent,
        operations=operations,
        gateway=gateway,
        external=memory_stack if isinstance(memory_stack, ExternalMemoryStack) else None,
    )


def memory_alarms(memory: MemoryService | ExternalMemory, data: DataStack | None) -> list[cloudwatch.IAlarm]:
    """The alarms of Hindsight's own stacks, shown on the dashboard: the backup plan's and the load balancer's where
    this app runs it; the isolation probe's with an external server."""
    if isinstance(memory, ExternalMemory):
        return [memory.probe.alarm]
    assert data is not None
    # The restarts' alarm differs by platform: -Operations reads it by handoff (MemoryService.restart_alarm_in).
    return [data.backup_plan.failed_alarm, memory.load_balancing.unhealthy_alarm]
