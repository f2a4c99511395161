"""``python -m localdev.token_issuer serve|start|stop|status|mint``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from localdev.supervisor import try_start
from localdev.token_issuer.background import default_data_dir, default_port, ensure_running, state_file, stop_background
from localdev.token_issuer.keys import load_or_create_key
from localdev.token_issuer.server import TokenIssuer
from localdev.token_issuer.tokens import LOCAL_CLIENT_ID, mint_token

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localdev.token_issuer", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["serve", "start", "stop", "status", "mint"])
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--port", type=int, default=default_port())
    parser.add_argument("--user", help="mint: the sub claim, e.g. user-alex")
    parser.add_argument("--tenant", help="mint: the custom:tenant claim")
    parser.add_argument("--ttl", type=float, default=3600, help="mint: seconds until exp (default 3600)")
    parser.add_argument("--client-id", default=LOCAL_CLIENT_ID)
    parser.add_argument("--token-use", default="access", choices=["access", "id"])
    args = parser.parse_args(argv)
    data_dir: Path = args.data_dir
    state = state_file(data_dir).read()
    running = state_file(data_dir).live_pid() is not None

    if args.command == "serve":
        issuer = TokenIssuer(data_dir, port=args.port, client_id=args.client_id)
        print(f"token issuer: {issuer.discovery_url}", flush=True)
        issuer.serve_forever()
        return 0
    if args.command == "start":
        if running:
            print(f"token issuer already running: {state['issuer']}/.well-known/openid-configuration")
            return 0
        issuer_url = try_start(lambda: ensure_running(data_dir, port=args.port, client_id=args.client_id))
        if issuer_url is None:
            return 1
        print(f"token issuer: {issuer_url}/.well-known/openid-configuration")
        return 0
    if args.command == "stop":
        print("token issuer stopped" if stop_background(data_dir) else "token issuer is not running")
        return 0
    if args.command == "status":
        print(json.dumps({"running": running, **state}, indent=2))
        return 0 if running else 3
    if not args.user:
        parser.error("mint needs --user")
    issuer_url = state.get("issuer") or f"http://127.0.0.1:{args.port}"
    key = load_or_create_key(data_dir)
    token = mint_token(
        key,
        issuer=issuer_url,
        user=args.user,
        tenant=args.tenant,
        ttl=args.ttl,
        client_id=args.client_id,
        token_use=args.token_use,
    )
    print(token)
    return 0
