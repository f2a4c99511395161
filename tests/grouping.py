"""Which tests must share a pytest-xdist worker (``make test`` runs ``pytest -n 2 --dist loadgroup``).

Each worker is its own pytest session: a session fixture (a local Hindsight, a CDK synthesis) is made once per worker
that uses it. So the tests of one module stay together (its module fixtures), and so do all the modules that use the
same costly session fixture: ``local_hindsight``'s tests share one server on one worker, the synthesized variants
are synthesized once. Everything else is spread over the workers by module.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

#: Session fixtures cheap enough to make once per worker (a loopback listener, an in-memory key): they do not tie
#: their users to one worker. Any other session or package fixture defined under tests/ does.
PER_WORKER = frozenset({"token_issuer", "hung_url", "refused_url", "failing_url", "moto_server", "loopback_issuer"})
_SHARED_SCOPES = frozenset({"session", "package"})


def shared_fixtures(item: pytest.Item) -> set[str]:
    """The costly session (or package) fixtures of this project that ``item`` uses, directly or through others."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    names = set()
    for name, defs in info.name2fixturedefs.items():
        if name in PER_WORKER:
            continue
        for fixturedef in defs:
            module = getattr(fixturedef.func, "__module__", "")
            if fixturedef.scope in _SHARED_SCOPES and module.split(".")[0] == "tests":
                names.add(name)
    return names


def groups(items: Iterable[pytest.Item]) -> dict[str, str]:
    """nodeid -> group: modules joined with every module that shares a costly session fixture with them."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    def union(a: str, b: str) -> None:
        root_a, root_b = find(a), find(b)
        if root_a != root_b:
            parent[max(root_a, root_b)] = min(root_a, root_b)

    modules: dict[str, str] = {}
    for item in items:
        module = "module:" + item.nodeid.split("::")[0]
        modules[item.nodeid] = module
        find(module)
        for name in shared_fixtures(item):
            union(module, "fixture:" + name)
    # A group is named by its shared fixtures (e.g. "local_hindsight"), or by its module when it has none.
    members: dict[str, list[str]] = {}
    for key in list(parent):
        members.setdefault(find(key), []).append(key)
    names = {
        root: "+".join(sorted(k.removeprefix("fixture:") for k in keys if k.startswith("fixture:")))
        or root.removeprefix("module:")
        for root, keys in members.items()
    }
    return {nodeid: names[find(module)] for nodeid, module in modules.items()}


def mark_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test an ``xdist_group`` mark when the run is distributed by group (no-op otherwise)."""
    if config.getoption("dist", "no") != "loadgroup":
        return
    by_nodeid = groups(items)
    for item in items:
        item.add_marker(pytest.mark.xdist_group(by_nodeid[item.nodeid]))
