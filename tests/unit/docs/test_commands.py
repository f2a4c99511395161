"""The commands the docs tell a reader to type exist: every ``make`` target, every ``python -m`` module and each of
its ``--flags``. A renamed target or a dropped flag must not leave a newcomer with a command that fails."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from tests.unit.docs.test_links import PAGES, ROOT

#: Code in markdown: fenced blocks and inline spans (prose such as "make sure" is not a command).
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
_SPAN = re.compile(r"`([^`\n]+)`")
_MAKE = re.compile(r"(?:^|[\s;&|(])make ((?:[A-Z_]+=\S+ )*)([a-z][a-z0-9_-]*)")
_PYTHON_M = re.compile(r"python3? -m ([A-Za-z_][\w.]*)((?: +[^\s`|;&#)]+)*)")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def code(text: str) -> list[str]:
    """The code of a markdown page: each fenced block, then each inline span outside the blocks."""
    fences = _FENCE.findall(text)
    return fences + _SPAN.findall(_FENCE.sub("", text))


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-zA-Z_-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))


def texts(pages: list[Path]) -> list[tuple[str, str]]:
    """(name, text) of each page."""
    return [(str(page.relative_to(ROOT)), page.read_text()) for page in pages]


def unknown_make_targets(pages: list[tuple[str, str]], targets: set[str]) -> list[str]:
    return [
        f"{name}: make {found.group(2)}"
        for name, text in pages
        for snippet in code(text)
        for found in _MAKE.finditer(snippet)
        if found.group(2) not in targets
    ]


def module_source(module: str) -> str | None:
    """The source text of a module of this repository (a package: every module in it), ``None`` if there is none."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:  # a package (a namespace package too): every module in it
        files = sorted(f for folder in spec.submodule_search_locations for f in Path(folder).rglob("*.py"))
    elif spec.origin:
        files = [Path(spec.origin)]
    else:
        return None
    return "\n".join(f.read_text() for f in files) if files else None


def unknown_commands(pages: list[tuple[str, str]]) -> list[str]:
    problems = []
    for name, text in pages:
        for snippet in code(text):
            for found in _PYTHON_M.finditer(snippet):
                module, args = found.group(1), found.group(2)
                source = module_source(module)
                if source is None:
                    problems.append(f"{name}: python -m {module}: no such module")
                    continue
                problems += [
                    f"{name}: python -m {module} {flag}: no such flag"
                    for flag in _FLAG.findall(args)
                    if flag != "--help" and f'"{flag}"' not in source
                ]
    return problems


def test_every_make_target_the_docs_name_exists() -> None:
    assert unknown_make_targets(texts(PAGES), make_targets()) == []


def test_every_python_module_and_flag_the_docs_name_exists() -> None:
    assert unknown_commands(texts(PAGES)) == []


def test_a_missing_target_module_or_flag_is_reported() -> None:
    text = (
        "Make sure you `make local`, then `make dev`.\n\n```bash\nmake TEST_WORKERS=0 tets\n"
        ".venv/bin/python -m smoke --local --nope\n.venv/bin/python -m localdev.nothing start\n```\n"
    )
    page = [("docs/probe.md", text)]
    assert unknown_make_targets(page, make_targets()) == ["docs/probe.md: make tets", "docs/probe.md: make dev"]
    assert unknown_commands(page) == [
        "docs/probe.md: python -m smoke --nope: no such flag",
        "docs/probe.md: python -m localdev.nothing: no such module",
    ]
