"""Handoff: a value a stack hands to later stacks through an SSM parameter instead of a CloudFormation export.

CloudFormation refuses to change or remove an export that another stack imports, so a strong reference to a value
an ordinary setting change alters blocks ``cdk deploy --all`` at the producing stack: the load balancer's DNS name
(gone once ``hindsight.certificate_arn`` turns HTTPS on), a worker service (gone when ``hindsight.worker_count``
drops), the issuer (another one when the discovery URL changes). The producer writes such a value into an SSM
parameter of a fixed name; each consumer reads it at its own deploy (a template parameter of type
``AWS::SSM::Parameter::Value<String>``, which the CDK CLI always redeploys, so the new value arrives at the next
``cdk deploy --all``) and depends on the producer's stack explicitly, so it still deploys after it. The value in a
running consumer changes at the consumer's next deploy, as an export's would.

Whoever may write the parameter chooses what a consumer gets (docs/deploying.md, "Who may write"): a consumer that
grants its role on a handed-off ARN takes only the resource from it (:meth:`Handoff.arn_in`), never the account.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Fn, Stack
from aws_cdk import aws_ssm as ssm
from constructs import Construct


class Handoff(Construct):
    """One value published under ``parameter_name``; exposes ``parameter``; ``value_in(scope)`` reads it."""

    def __init__(self, scope: Construct, construct_id: str, *, parameter_name: str, value: str, description: str):
        super().__init__(scope, construct_id)
        self.parameter_name = parameter_name
        self._value = value
        self.parameter = ssm.StringParameter(
            self, "Parameter", parameter_name=parameter_name, string_value=value, description=description
        )

    def value_in(self, scope: Construct) -> str:
        """The value as scope's stack sees it: the value itself in the producer's stack, else the parameter's value
        resolved at deploy time (and scope's stack deploys after the producer's)."""
        consumer, producer = Stack.of(scope), Stack.of(self)
        if consumer is producer:
            return self._value
        consumer.add_stack_dependency(producer, f"reads {self.parameter_name} at deploy time")
        return ssm.StringParameter.value_for_string_parameter(consumer, self.parameter_name)

    def arn_in(self, scope: Construct, service: str) -> str:
        """The value, an ARN of ``service``, as scope's stack may grant on it: partition, service, region and account
        are scope's own, only the resource (after the ARN's fifth colon) is the parameter's. A parameter pointed at
        another account's queue or key names this account's (most likely none), and a value that is no ARN fails
        the consumer's deploy (``Fn::Select`` out of range)."""
        if Stack.of(scope) is Stack.of(self):
            return self._value
        resource = Fn.select(5, Fn.split(":", self.value_in(scope)))
        return Stack.of(scope).format_arn(service=service, resource=resource, arn_format=ArnFormat.NO_RESOURCE_NAME)
