"""``python -m smoke``: prove a deployment (or ``make local``) remembers across sessions and keeps users apart.

Through the agent (three sessions), then over MCP when the memory tools are served there (the ``-Gateway`` stack, or
``make local``'s MCP server): user A's ``recall`` finds what the agent was told, user B's finds nothing of it.

    python -m smoke                     # the deployed stacks of cdk.json's env (outputs from CloudFormation)
    python -m smoke -c env=prod --region eu-west-1
    python -m smoke --token-a "$TOKEN_A" --token-b "$TOKEN_B"   # auth.mode=jwt: tokens of two users of your IdP
    python -m smoke --local                            # the agent and MCP server `make local` runs, wherever they run
    python -m smoke --local --skip-mcp                 # the agent only (else a missing MCP server fails the smoke)
    python -m smoke --local --mcp-url http://127.0.0.1:9000/mcp      # another MCP server, which must answer
    python -m smoke --local --hindsight-url http://127.0.0.1:8888    # and the isolation probe on that Hindsight

Exit status: 0 when every step passed, 1 when one failed (the output says which and where to look), 2 when the
target cannot be set up (no stack, missing outputs, no credentials, missing tokens).
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from smoke import isolation, mcp_probe, scenario, targets

USERS = ("smoke-a", "smoke-b")
#: The -ExternalMemory stack's output naming the probe function (its logical id ends in a hash).
_PROBE_FUNCTION_OUTPUT = "IsolationProbeFunctionName"


class SetupError(Exception):
    """The target cannot be set up (no stack, missing outputs or tokens)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m smoke", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--local", action="store_true", help="test the local agent of `make local`")
    parser.add_argument("--agent-url", help="--local: the agent's URL (default: the one make local runs)")
    parser.add_argument("--issuer-url", help="--local: the token issuer's URL (default: the running one)")
    parser.add_argument("--issuer-data-dir", type=Path, help="--local: the issuer's key directory")
    parser.add_argument("--agent-log", help="--local: shown when a step fails (default: make local's agent's log)")
    parser.add_argument("--mcp-url", help="--local: the MCP server to test (default: the one make local runs)")
    parser.add_argument(
        "--skip-mcp", action="store_true", help="--local: test the agent only (else no MCP server is a failure)"
    )
    parser.add_argument(
        "--hindsight-url", help="--local: also probe this Hindsight's isolation with user A's token (smoke.isolation)"
    )
    parser.add_argument(
        "--operator-key-file",
        type=Path,
        default=Path(".local/hindsight/operator-key"),
        help="--local --hindsight-url: that server's operator key (written by make hindsight-start)",
    )
    parser.add_argument("-c", "--context", action="append", default=[], help="cdk.json context override, key=value")
    parser.add_argument("--region", help="default: the configuration's region")
    parser.add_argument("--token-a", default=os.environ.get("SMOKE_TOKEN_A"), help="jwt: user A's token")
    parser.add_argument("--token-b", default=os.environ.get("SMOKE_TOKEN_B"), help="jwt: user B's token")
    parser.add_argument("--recall-timeout", type=float, default=None, help="seconds to wait for the memory")
    return parser


def fresh_users() -> tuple[str, str]:
    """Fresh user ids per run, so earlier runs' memories can make a run neither pass nor fail."""
    nonce = uuid.uuid4().hex[:8]
    return (f"{USERS[0]}-{nonce}", f"{USERS[1]}-{nonce}")


def local_minter(args: argparse.Namespace) -> tuple[str, targets.Minter]:
    """Tokens from the local issuer `make local` runs (its key on disk): (issuer URL, mint)."""
    from localdev import token_issuer

    data_dir = args.issuer_data_dir or token_issuer.default_data_dir()
    issuer = args.issuer_url or token_issuer.running_issuer_url(data_dir)
    key = token_issuer.load_or_create_key(data_dir)
    return issuer, lambda user: token_issuer.mint_token(key, issuer=issuer, user=user, ttl=900)


#: The isolation step, run after the scenario (None: not for this target).
IsolationStep = Callable[[], isolation.IsolationVerdict] | None
Target = tuple[scenario.Invoker, scenario.McpTools | scenario.McpSkipped, IsolationStep]


def _local(args: argparse.Namespace, users: tuple[str, str], mint: targets.Minter | None) -> Target:
    from localdev import agent

    operator_key = _operator_key(args)  # the arguments first: a missing key file is said before any service is sought
    local_agent = agent.default_agent()
    agent_url = args.agent_url or local_agent.url
    if agent_url is None:
        raise SetupError(
            f"no local agent is running (none recorded in {local_agent.state_file}): start the services with "
            "make local, or pass --agent-url"
        )
    source = "tokens minted by the caller"
    if mint is None:
        issuer, mint = local_minter(args)
        source = f"JWT from the local issuer {issuer}"
    tokens = {user: mint(user) for user in users}
    invoker = targets.BearerInvoker(
        url=agent_url.rstrip("/") + "/invocations",
        tokens=tokens,
        description=f"the local agent at {agent_url} ({source})",
        hints=targets.local_hints(args.agent_log or str(local_agent.log_file)),
    )
    mcp = _local_mcp(args.mcp_url, tokens, skip=args.skip_mcp)
    return invoker, mcp, _local_isolation(args.hindsight_url, operator_key, tokens[users[0]])


def _operator_key(args: argparse.Namespace) -> str | None:
    """``--hindsight-url``'s operator key, read from ``--operator-key-file`` (None without ``--hindsight-url``)."""
    if not args.hindsight_url:
        return None
    try:
        return str(args.operator_key_file.read_text(encoding="utf-8").strip())
    except OSError as err:
        raise SetupError(
            f"--hindsight-url needs that server's operator key: cannot read {args.operator_key_file} "
            f"({type(err).__name__}); pass --operator-key-file"
        ) from err


def _local_isolation(url: str | None, operator_key: str | None, token: str) -> IsolationStep:
    """``--hindsight-url``: the isolation probe on that server with user A's token and its operator key."""
    if url is None or operator_key is None:
        return None
    return lambda: isolation.probe_local(url, operator_key=operator_key, user_token=token)


def _local_mcp(
    explicit_url: str | None, tokens: dict[str, str], *, skip: bool
) -> scenario.McpTools | scenario.McpSkipped:
    """``--mcp-url``, else the MCP server ``make local`` runs (where its state file says, whatever port it was moved
    to); none is a setup failure unless ``--skip-mcp`` asked to test the agent only."""
    from localdev import mcp_server

    if skip:
        return scenario.McpSkipped("MCP: skipped (--skip-mcp)")
    server = mcp_server.default_server()
    url = explicit_url or server.url
    if url is None:
        raise SetupError(
            f"no local MCP server is running (none recorded in {server.data_dir / 'mcp.json'}; make local starts "
            "it): pass --mcp-url, or --skip-mcp to test the agent only"
        )
    return mcp_probe.McpProbe(
        url=url,
        tokens=tokens,
        tool_prefix="",
        description=f"the MCP server at {url}",
        hints=mcp_probe.local_hints(str(server.log_file)),
    )


def _deployed(args: argparse.Namespace, stack: ExitStack, session: Any, users: tuple[str, str]) -> Target:
    from infra.config import ConfigError, load_config_from_cdk_json

    overrides = dict(item.partition("=")[::2] for item in args.context)
    try:
        config = load_config_from_cdk_json(overrides)
    except ConfigError as err:
        raise SetupError(str(err)) from err
    region = args.region or config.region
    prefix = config.stack_prefix
    outputs = targets.stack_outputs(session.client("cloudformation", region_name=region), f"{prefix}-Agent")
    if outputs is None:
        raise SetupError(f"stack {prefix}-Agent does not exist in {region}: deploy first (npx cdk deploy --all)")
    missing = [k for k in ("AgentRuntimeArn", "AgentEndpointName", "AuthMode") if k not in outputs]
    if missing:
        raise SetupError(f"stack {prefix}-Agent lacks the outputs {', '.join(missing)}: redeploy this version")
    arn, qualifier, mode = outputs["AgentRuntimeArn"], outputs["AgentEndpointName"], outputs["AuthMode"]
    hints = targets.deployed_hints(region, outputs.get("AgentRuntimeId"), prefix)
    if mode == "iam":
        iam = targets.IamInvoker(
            client=session.client("bedrock-agentcore", region_name=region),
            runtime_arn=arn,
            qualifier=qualifier,
            description=f"{arn} ({qualifier}) with IAM and runtimeUserId",
            hints=hints,
        )
        return (
            iam,
            scenario.McpSkipped("MCP: no gateway with auth.mode=iam (its tools need user tokens), skipped"),
            _deployed_isolation(session, region, prefix, None) if config.hindsight.external else None,
        )
    if args.token_a and args.token_b:
        tokens = {users[0]: args.token_a, users[1]: args.token_b}
    elif mode == "cognito":
        identity = targets.stack_outputs(session.client("cloudformation", region_name=region), f"{prefix}-Identity")
        if not identity or "UserPoolId" not in identity or "UserPoolClientId" not in identity:
            raise SetupError(f"stack {prefix}-Identity lacks UserPoolId/UserPoolClientId")
        cognito = targets.CognitoUsers(
            client=session.client("cognito-idp", region_name=region),
            pool_id=identity["UserPoolId"],
            client_id=identity["UserPoolClientId"],
            usernames=users,
        )
        tokens = stack.enter_context(cognito).tokens
    else:
        raise SetupError(
            "auth.mode=jwt: pass two users' access tokens from your IdP with --token-a/--token-b "
            "(or SMOKE_TOKEN_A/SMOKE_TOKEN_B); they must be different users"
        )
    invoker = targets.BearerInvoker(
        url=targets.runtime_url(region, arn, qualifier),
        tokens=tokens,
        description=f"{arn} ({qualifier}) over HTTPS with bearer tokens ({mode})",
        hints=hints,
    )
    return (
        invoker,
        _gateway(session.client("cloudformation", region_name=region), region, prefix, tokens),
        _deployed_isolation(session, region, prefix, tokens[users[0]]) if config.hindsight.external else None,
    )


def _deployed_isolation(session: Any, region: str, prefix: str, token: str | None) -> IsolationStep:
    """``hindsight.mode=external``: the ``-ExternalMemory`` stack's probe function, invoked in the VPC (our own
    Hindsight runs the isolation extension by construction, and the smoke's users prove it)."""
    outputs = targets.stack_outputs(session.client("cloudformation", region_name=region), f"{prefix}-ExternalMemory")
    if outputs is None:
        raise SetupError(
            f"stack {prefix}-ExternalMemory does not exist in {region}: deploy first (hindsight.mode=external)"
        )
    names = [value for key, value in outputs.items() if _PROBE_FUNCTION_OUTPUT in key]
    if not names:
        raise SetupError(f"stack {prefix}-ExternalMemory lacks the probe function's output: redeploy this version")
    client = session.client("lambda", region_name=region)
    return lambda: isolation.probe_deployed(client, names[0], user_token=token)


def _gateway(
    cloudformation: Any, region: str, prefix: str, tokens: dict[str, str]
) -> scenario.McpTools | scenario.McpSkipped:
    """The ``-Gateway`` stack's MCP endpoint and tool prefix, called with the agent steps' tokens."""
    outputs = targets.stack_outputs(cloudformation, f"{prefix}-Gateway")
    if outputs is None:
        return scenario.McpSkipped("MCP: no gateway deployed (gateway.enabled=false), skipped")
    missing = [k for k in ("GatewayUrl", "GatewayToolPrefix") if k not in outputs]
    if missing:
        raise SetupError(f"stack {prefix}-Gateway lacks the outputs {', '.join(missing)}: redeploy this version")
    url = outputs["GatewayUrl"]
    return mcp_probe.McpProbe(
        url=url,
        tokens=tokens,
        tool_prefix=outputs["GatewayToolPrefix"],
        description=f"the gateway {url}",
        hints=mcp_probe.gateway_hints(region, prefix),
    )


def _setup_failure(err: Exception) -> str:
    """What went wrong setting up, in one line; for missing AWS credentials, also what to do."""
    from botocore.exceptions import NoCredentialsError, PartialCredentialsError

    if isinstance(err, NoCredentialsError | PartialCredentialsError):
        return (
            f"{type(err).__name__}: {err}: set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) for the "
            "deployed stack, or test make local's services with --local (make smoke SMOKE_ARGS=--local)"
        )
    return f"{type(err).__name__}: {err}"


def main(
    argv: Sequence[str] | None = None,
    *,
    out: TextIO = sys.stdout,
    session: Any = None,
    mint: targets.Minter | None = None,
) -> int:
    """Run the smoke test; ``session`` (a boto3 Session) and ``mint`` (``--local`` tokens) are injectable."""
    args = _parser().parse_args(argv)
    users = fresh_users()
    with ExitStack() as stack:
        try:
            if args.local:
                invoker, mcp, isolation_step = _local(args, users, mint)
                timeout = args.recall_timeout or 60.0
            else:
                if session is None:
                    import boto3

                    session = boto3.Session()
                invoker, mcp, isolation_step = _deployed(args, stack, session, users)
                timeout = args.recall_timeout or 180.0
        except SetupError as err:
            out.write(f"SMOKE SETUP FAILED: {err}\n")
            return 2
        except Exception as err:  # credentials, network, permissions: say so plainly
            out.write(f"SMOKE SETUP FAILED: {_setup_failure(err)}\n")
            return 2
        out.write(f"smoke: {invoker.description}\n")
        if not isinstance(mcp, scenario.McpSkipped):
            out.write(f"smoke: then over MCP, {mcp.description}\n")
        try:
            result = scenario.run(invoker, users=users, recall_timeout_s=timeout, out=out, mcp=mcp)
        except scenario.SmokeError as err:
            out.write(f"FAILED\n\nSMOKE FAILED: {err}\nWhat to look at:\n")
            out.writelines(f"  - {hint}\n" for hint in err.hints)
            return 1
        if isolation_step is not None:
            out.write("smoke: isolation probe: foreign identities must be refused another's bank ... ")
            verdict = isolation_step()
            if not verdict.passed:
                out.write(f"FAILED\n\nSMOKE FAILED: {verdict.verdict}\n")
                return 1
            out.write(f"ok ({verdict.verdict})\n")
    paths = "" if result.mcp_skipped else ", through the agent and over MCP"
    out.write(f"SMOKE PASSED: memory carries across sessions and stays per user{paths} ({result.seconds:.2f} s)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
