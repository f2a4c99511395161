"""``python -m infra.config [-c key=value ...]``: validate a configuration offline and print it."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence

from infra.config.loader import ConfigError, load_config_from_cdk_json

USAGE = "usage: python -m infra.config [-c key=value ...]"


def main(argv: Sequence[str]) -> int:
    """Exit status 0: valid (the configuration is printed); 1: invalid (every problem is printed); 2: bad usage."""
    overrides: dict[str, str] = {}
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag not in ("-c", "--context") or not args or "=" not in args[0]:
            print(USAGE, file=sys.stderr)
            return 2
        key, _, value = args.pop(0).partition("=")
        overrides[key] = value
    try:
        cfg = load_config_from_cdk_json(overrides)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(json.dumps(dataclasses.asdict(cfg), indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
