"""Where the smoke test's turns go: the deployed runtime (JWT over HTTPS, or IAM with ``runtimeUserId``) or the local
agent of ``make local``, and how each proves the user.

Every AWS call goes through a client passed in (``boto3`` by default), so tests can stub them at the boundary.
"""

from __future__ import annotations

import json
import secrets
import string
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from smoke.scenario import Reply, SmokeError

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
TIMEOUT_S = 120.0


def parse_reply(status: int, raw: bytes) -> Reply:
    """The agent's JSON answer (or an error body) as a :class:`Reply`."""
    try:
        body: Any = json.loads(raw or b"{}")
    except ValueError:
        body = raw.decode("utf-8", "replace")
    memory = body.get("memory", {}) if isinstance(body, dict) else {}
    output = str(body.get("output", "")) if isinstance(body, dict) else ""
    return Reply(
        status=status,
        output=output,
        recalled=int(memory.get("recalled", 0) or 0),
        degraded=bool(memory.get("degraded", False)),
        body=body,
    )


@dataclass
class BearerInvoker:
    """Turns over HTTPS (or the local agent's HTTP) with the user's bearer token, as AgentCore's JWT authorizer
    expects: ``POST <url>`` with ``Authorization`` and the session header."""

    url: str
    tokens: Mapping[str, str]
    description: str
    hints: Sequence[str] = ()

    def invoke(self, user: str, session_id: str, prompt: str) -> Reply:
        request = urllib.request.Request(  # noqa: S310 (an https URL, or the local agent's loopback one)
            self.url,
            data=json.dumps({"prompt": prompt}).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {self.tokens[user]}",
                "Content-Type": "application/json",
                "Accept": "application/json",
                SESSION_HEADER: session_id,
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310
                return parse_reply(response.status, response.read())
        except urllib.error.HTTPError as err:
            return parse_reply(err.code, err.read())
        except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
            raise SmokeError(f"cannot reach the agent at {self.url}: {err}", self.hints) from err


@dataclass
class IamInvoker:
    """Turns through ``InvokeAgentRuntime`` signed with the caller's AWS credentials, naming the user with
    ``runtimeUserId`` (the caller needs ``bedrock-agentcore:InvokeAgentRuntimeForUser``)."""

    client: Any
    runtime_arn: str
    qualifier: str
    description: str
    hints: Sequence[str] = ()

    def invoke(self, user: str, session_id: str, prompt: str) -> Reply:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self.client.invoke_agent_runtime(
                agentRuntimeArn=self.runtime_arn,
                qualifier=self.qualifier,
                runtimeSessionId=session_id,
                runtimeUserId=user,
                contentType="application/json",
                accept="application/json",
                payload=json.dumps({"prompt": prompt}).encode(),
            )
        except ClientError as err:
            status = int(err.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 500))
            return parse_reply(status, json.dumps({"error": str(err)}).encode())
        except BotoCoreError as err:
            raise SmokeError(f"cannot call InvokeAgentRuntime: {err}", self.hints) from err
        return parse_reply(int(response.get("statusCode", 200)), response["response"].read())


def runtime_url(region: str, runtime_arn: str, qualifier: str) -> str:
    """The runtime's HTTPS invocation URL for bearer-token callers (the ARN URL-encoded as one path segment)."""
    encoded = urllib.parse.quote(runtime_arn, safe="")
    return f"https://bedrock-agentcore.{region}.amazonaws.com/runtimes/{encoded}/invocations?qualifier={qualifier}"


def stack_outputs(cloudformation: Any, stack_name: str) -> dict[str, str] | None:
    """The stack's outputs by key, or None when the stack does not exist."""
    from botocore.exceptions import ClientError

    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as err:
        if "does not exist" in str(err):
            return None
        raise
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def cognito_password() -> str:
    """A throwaway password that meets the quick-start pool's policy (12+, upper, lower, digit, symbol)."""
    alphabet = string.ascii_letters + string.digits
    return "Sm0k!" + "".join(secrets.choice(alphabet) for _ in range(27))


@dataclass
class CognitoUsers(AbstractContextManager["CognitoUsers"]):
    """Temporary users in the quick-start user pool (admin APIs, no e-mail sent), signed in for access tokens, and
    deleted again on exit. The caller needs ``cognito-idp:AdminCreateUser``, ``AdminSetUserPassword`` and
    ``AdminDeleteUser`` on the pool."""

    client: Any
    pool_id: str
    client_id: str
    usernames: Sequence[str]
    tokens: dict[str, str] = field(default_factory=dict)
    _created: list[str] = field(default_factory=list)

    def __enter__(self) -> CognitoUsers:
        try:
            for username in self.usernames:
                password = cognito_password()
                self.client.admin_create_user(UserPoolId=self.pool_id, Username=username, MessageAction="SUPPRESS")
                self._created.append(username)
                self.client.admin_set_user_password(
                    UserPoolId=self.pool_id, Username=username, Password=password, Permanent=True
                )
                auth = self.client.initiate_auth(
                    ClientId=self.client_id,
                    AuthFlow="USER_PASSWORD_AUTH",
                    AuthParameters={"USERNAME": username, "PASSWORD": password},
                )
                self.tokens[username] = auth["AuthenticationResult"]["AccessToken"]
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for username in self._created:
            self.client.admin_delete_user(UserPoolId=self.pool_id, Username=username)
        self._created.clear()


def deployed_hints(region: str, runtime_id: str | None, prefix: str) -> list[str]:
    """Where a deployed failure shows up."""
    runtime = runtime_id or "<AgentRuntimeId output>"
    return [
        f"Agent logs: CloudWatch /aws/bedrock-agentcore/runtimes/{runtime}-live (region {region})",
        f"Hindsight logs: the {prefix}-MemoryService stack's log group (api/ and worker-N/ streams)",
        f"Alarms: the {prefix}-Network stack's alerts topic (NoHealthyApiTask, RedeployFailing, MirrorFailing)",
        "ECS: aws ecs describe-services on the cluster's Api and Worker services (events, running count)",
    ]


def local_hints(log_file: str) -> list[str]:
    return [
        f"Agent log: {log_file}",
        "Hindsight: .venv/bin/python -m localdev.hindsight status (and .local/hindsight/hindsight-api.log)",
        "Started? make local (or python -m localdev.agent start)",
    ]


Minter = Callable[[str], str]
