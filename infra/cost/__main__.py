"""``python -m infra.cost [--outdir cdk.out] [--env dev]``: price the synthesized templates (``make cost``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from infra.cost.pricing import PricingError, estimate, load_prices, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.cost", description=__doc__)
    parser.add_argument("--outdir", type=Path, default=Path("cdk.out"), help="the synthesized cloud assembly")
    parser.add_argument("--env", help="the env whose stacks to price (default: the only one in the assembly)")
    args = parser.parse_args(argv)
    manifest_path = args.outdir / "manifest.json"
    if not manifest_path.exists():
        print(f"error: no cloud assembly in {args.outdir}; run make synth (CDK_ARGS='-c env=prod' for prod) first")
        return 2
    manifest = json.loads(manifest_path.read_text())
    stacks = {
        name: artifact
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    envs = {name.split("-")[-2] for name in stacks if name.count("-") >= 2}
    env = args.env or (envs.pop() if len(envs) == 1 else None)
    if env is None:
        print(f"error: the assembly holds several envs ({', '.join(sorted(envs))}); pass --env NAME")
        return 2
    chosen = {name: a for name, a in stacks.items() if name.split("-")[-2:-1] == [env]}
    if not chosen:
        print(f"error: no stacks of env '{env}' in {args.outdir}; synthesize it with CDK_ARGS='-c env={env}'")
        return 2
    regions = {a["environment"].rsplit("/", 1)[-1] for a in chosen.values()}
    templates = [json.loads((args.outdir / a["properties"]["templateFile"]).read_text()) for a in chosen.values()]
    try:
        result = estimate(templates, region=regions.pop(), prices=load_prices())
    except PricingError as exc:
        print(f"error: {exc}")
        return 2
    print(render(result, env=env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
