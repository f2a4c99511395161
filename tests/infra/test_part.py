"""Part: grouping a job's resources in their own construct changes no logical id."""

from __future__ import annotations

import pytest
from aws_cdk import App, CfnElement, Stack
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.part import HIDDEN_ID, Part, PartAwareStack, make_unique_id
from infra.constructs.props import PropsError


class _CheckingStack(PartAwareStack):
    """Records, for every element outside a part, CDK's own logical id next to make_unique_id's."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        self.pairs: list[tuple[str, str]] = []
        super().__init__(scope, construct_id)

    def _allocate_logical_id(self, cfn_element: CfnElement) -> str:
        allocated = super()._allocate_logical_id(cfn_element)
        if not any(isinstance(s, Part) for s in cfn_element.node.scopes):
            path = [s.node.id for s in cfn_element.node.scopes[len(self.node.scopes) :]]
            self.pairs.append((allocated, make_unique_id(path)))
        return allocated


def _ids(stack: Stack) -> set[str]:
    return set(App.of(stack).synth().get_stack_by_name(stack.stack_name).template["Resources"])  # type: ignore[union-attr]


def test_make_unique_id_is_cdks_algorithm() -> None:
    # GIVEN resources at several depths, with repeated, hidden and non-alphanumeric ids
    app = App()
    stack = _CheckingStack(app, "Checked")
    outer = Construct(stack, "Memory-Service")
    sqs.Queue(outer, "Queue")
    sqs.Queue(Construct(outer, "Memory"), "Memory")
    sqs.Queue(Construct(outer, HIDDEN_ID), "Hidden")
    sqs.Queue(stack, "TopLevel")
    # WHEN CDK allocates their logical ids
    app.synth()
    # THEN ours are the same for every one of them
    assert len(set(stack.pairs)) == 6  # the four queues and the bootstrap version check (each allocated often)
    assert all(cdk == ours for cdk, ours in stack.pairs), stack.pairs


def test_a_part_keeps_the_logical_ids_of_its_homes_children() -> None:
    # GIVEN the same queues, once as children of "Memory" and once grouped in parts (one homed two levels up)
    flat_app, parted_app = App(), App()
    flat = PartAwareStack(flat_app, "S")
    memory = Construct(flat, "Memory")
    sqs.Queue(memory, "Key")
    sqs.Queue(memory, "Rule")
    parted = PartAwareStack(parted_app, "S")
    memory = Construct(parted, "Memory")
    sqs.Queue(Part(memory, "Secrets"), "Key")
    inner = Construct(memory, "Redeploy")
    sqs.Queue(Part(inner, "Parts", home=memory), "Rule")
    # THEN both synthesize the same logical ids
    assert _ids(flat) == _ids(parted)
    assert len(_ids(parted)) == 2


def test_a_part_is_homed_only_in_its_own_ancestry_within_its_stack() -> None:
    app = App()
    stack = PartAwareStack(app, "S")
    memory = Construct(stack, "Memory")
    other = Construct(stack, "Other")
    with pytest.raises(PropsError, match="home must be S/Memory or one of its parents"):
        Part(memory, "Elsewhere", home=other)
    with pytest.raises(PropsError, match="home must be in the part's own stack"):
        Part(memory, "AboveTheStack", home=app)


def test_redeploy_on_rotation_lists_every_bad_prop_at_once() -> None:
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs
    from aws_cdk import aws_events as events
    from aws_cdk import aws_kms as kms

    from infra.constructs.alerts import Alerts
    from infra.constructs.redeploy_on_rotation import RedeployOnRotation, RedeployProps, RestartTrigger

    stack = PartAwareStack(App(), "S")
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", nat_gateways=0))
    pattern = events.EventPattern(source=["aws.ssm"])
    with pytest.raises(PropsError) as err:
        RedeployOnRotation(
            stack,
            "Redeploy",
            RedeployProps(
                cluster=cluster,
                services=(),
                triggers=(RestartTrigger("Same", "a", pattern), RestartTrigger("Same", "b", pattern)),
                logs_key=kms.Key(stack, "Key"),
                alerts=Alerts(stack, "Alerts", email=None),
            ),
        )
    assert len(err.value.problems) == 2
    assert "services must name at least one service" in str(err.value)
    assert "trigger ids must be distinct" in str(err.value)
