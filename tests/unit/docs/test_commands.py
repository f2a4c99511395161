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


def unknown_make_targets(pages: list[Path], targets: set[str]) -> list[str]:
    return [
        f"{page.relative_to(ROOT)}: make {found.group(2)}"
        for page in pages
        for snippet in code(page.read_text())
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


def unknown_commands(pages: list[Path]) -> list[str]:
    problems = []
    for page in pages:
        for snippet in code(page.read_text()):
            for found in _PYTHON_M.finditer(snippet):
                module, args = found.group(1), found.group(2)
                source = module_source(module)
                if source is None:
                    problems.append(f"{page.relative_to(ROOT)}: python -m {module}: no such module")
                    continue
                problems += [
                    f"{page.relative_to(ROOT)}: python -m {module} {flag}: no such flag"
                    for flag in _FLAG.findall(args)
                    if flag != "--help" and f'"{flag}"' not in source
                ]
    return problems


def test_every_make_target_the_docs_name_exists() -> None:
    assert unknown_make_targets(PAGES, make_targets()) == []


def test_every_python_module_and_flag_the_docs_name_exists() -> None:
    assert unknown_commands(PAGES) == []


def test_a_missing_target_module_or_flag_is_reported(tmp_path: Path) -> None:
    page = ROOT / "docs" / "probe.md"  # relative_to(ROOT) must hold; the file is never written
    text = (
        "Make sure you `make local`, then `make dev`.\n\n```bash\nmake TEST_WORKERS=0 tets\n"
        ".venv/bin/python -m smoke --local --nope\n.venv/bin/python -m localdev.nothing start\n```\n"
    )

    class Page(type(page)):  # type: ignore[misc]
        def read_text(self, *args: object, **kwargs: object) -> str:
            return text

    probe = Page(page)
    assert unknown_make_targets([probe], make_targets()) == ["docs/probe.md: make tets", "docs/probe.md: make dev"]
    assert unknown_commands([probe]) == [
        "docs/probe.md: python -m smoke --nope: no such flag",
        "docs/probe.md: python -m localdev.nothing: no such module",
    ]
