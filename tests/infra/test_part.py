"""Part: grouping a job's resources in their own construct changes no logical id."""

from __future__ import annotations

from aws_cdk import App, CfnElement, Stack
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.part import HIDDEN_ID, Part, PartAwareStack, make_unique_id


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
