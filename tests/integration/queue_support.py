"""The retain queue in integration tests: a queue pair on moto's server shaped like the stack's, and the Lambda
event source mapping emulated around the real replay handler (receive a batch, invoke, delete what succeeded)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from infra.functions.retain_replay import index
from memory_adapter.queue_replay import QueueReplayer
from memory_adapter.sqs_codec import QueueMessage
from memory_adapter.sqs_spool import SqsSpool
from memory_adapter.transport import HttpTransport

#: As the stack's queue: a receive this many times without success moves a message to the dead-letter queue.
MAX_RECEIVE_COUNT = 3


@dataclass
class LambdaContext:
    """What Powertools reads off a Lambda context."""

    function_name: str = "retain-replay"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:retain-replay"
    aws_request_id: str = "local"
    remaining_ms: int = 60_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@dataclass
class RetainQueues:
    """A retain queue and its dead-letter queue on moto's server."""

    url: str
    dead_url: str
    client: Any

    def spool(self) -> SqsSpool:
        """The spool on these queues (what the replay function's dead letters and the redrive command use)."""
        return SqsSpool(self.url, dead_letter_queue_url=self.dead_url, client=self.client, wait_seconds=0)

    def depth(self, *, dead: bool = False) -> int:
        """Messages visible, in flight or delayed."""
        return self.spool().count(dead=dead)

    def dead_letters(self) -> list[QueueMessage]:
        """Every dead letter (looked at, then visible again)."""
        spool = self.spool()
        letters = spool.messages(dead=True)
        spool.release(letters, dead=True)
        return letters


def make_queues(client: Any) -> RetainQueues:
    """A fresh queue pair with the stack's redrive policy."""
    name = f"retains-{uuid.uuid4().hex[:10]}"
    dead_url = client.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dead_arn = client.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    url = client.create_queue(
        QueueName=name,
        Attributes={
            "RedrivePolicy": f'{{"deadLetterTargetArn": "{dead_arn}", "maxReceiveCount": "{MAX_RECEIVE_COUNT}"}}'
        },
    )["QueueUrl"]
    return RetainQueues(url, dead_url, client)


def replay_handler(hindsight_url: str, queues: RetainQueues) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The deployed function's handler, delivering to ``hindsight_url`` and dead-lettering into ``queues``."""
    return index.make_handler(
        lambda: QueueReplayer(
            transport=HttpTransport(hindsight_url), dead_letters=queues.spool(), timeout=10.0, metrics=index.metrics
        )
    )


def lambda_record(queue_arn: str, message: dict[str, Any]) -> dict[str, Any]:
    """A ``ReceiveMessage`` message as the event source mapping hands it to the function."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {
            name: {"stringValue": value.get("StringValue"), "dataType": value.get("DataType", "String")}
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": "us-east-1",
    }


def run_event_source(
    queues: RetainQueues, handler: Callable[[dict[str, Any], Any], dict[str, Any]], *, batch_size: int = 10
) -> list[dict[str, Any]]:
    """Drain the queue through ``handler`` as Lambda's event source mapping would; return each batch's answer.

    A message the handler reports as failed stays on the queue (hidden for its visibility timeout), the others are
    deleted. Ends when a receive comes back empty.
    """
    arn = queues.client.get_queue_attributes(QueueUrl=queues.url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    answers: list[dict[str, Any]] = []
    while True:
        received = queues.client.receive_message(
            QueueUrl=queues.url,
            MaxNumberOfMessages=batch_size,
            VisibilityTimeout=30,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not received:
            return answers
        answer = handler({"Records": [lambda_record(arn, m) for m in received]}, LambdaContext())
        answers.append(answer)
        failed = {failure["itemIdentifier"] for failure in answer.get("batchItemFailures", [])}
        done = [m for m in received if m["MessageId"] not in failed]
        if done:
            queues.client.delete_message_batch(
                QueueUrl=queues.url,
                Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(done)],
            )
