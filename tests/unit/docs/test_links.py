"""Every relative link in the project's markdown resolves: the file exists and the ``#anchor`` names a heading there.

The README links the pages under ``docs/`` and they link each other and the package READMEs; a heading renamed or a
section moved must not leave a newcomer on a link to nowhere. Anchors follow GitHub's rule (lower case, punctuation
dropped, spaces to hyphens, ``-1``, ``-2`` for repeats).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: Folders whose README.md is part of the documentation.
PACKAGES = (
    "infra",
    "hindsight_isolation",
    "layers/memory_adapter",
    "examples/strands_agent",
    "examples/langgraph_agent",
)
#: The markdown a reader follows links in: the README, the docs pages and the package READMEs.
PAGES = sorted(
    {ROOT / "README.md", ROOT / "BENCHMARKS.md", *ROOT.glob("docs/*.md")} | {ROOT / d / "README.md" for d in PACKAGES}
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$")


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of ``text`` (headings inside code fences are not headings)."""
    seen: Counter[str] = Counter()
    out: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            slug = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
            out.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
            seen[slug] += 1
    return out


def links(text: str) -> list[str]:
    """Relative link targets outside code fences."""
    body = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return [t for t in LINK.findall(body) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def broken(page: Path) -> list[str]:
    problems = []
    for target in links(page.read_text()):
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            problems.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved.read_text()):
            problems.append(f"{target}: no such heading")
    return problems


def test_every_page_exists() -> None:
    assert [p for p in PAGES if not p.exists()] == []
    assert len([p for p in PAGES if p.parent.name == "docs"]) >= 9


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken(page) == []


def test_a_broken_anchor_is_reported(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## Calling `it` by hand\n\n```bash\n# not a heading\n```\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#calling-it-by-hand) [top](a.md#title) [bad](a.md#not-a-heading) [gone](c.md)\n")
    assert broken(page) == ["a.md#not-a-heading: no such heading", "c.md: no such file"]


def test_the_readme_links_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = [p.name for p in ROOT.glob("docs/*.md") if f"(docs/{p.name})" not in readme]
    assert missing == []


def headings(text: str) -> list[str]:
    """The headings of ``text`` as written (outside code fences)."""
    body = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return [m.group(1) for m in map(HEADING.match, body.splitlines()) if m]


def _words(text: str) -> set[str]:
    """The significant words of a heading or a section's name: lower case, no markup, no small words."""
    small = {"the", "a", "an", "and", "its", "of", "to", "in", "on"}
    return {w.rstrip("s") for w in re.sub(r"[^\w\s-]", " ", text.lower()).split()} - small


def contents() -> list[tuple[Path, str]]:
    """The README's Contents table: (page, what the row says it covers)."""
    section = (ROOT / "README.md").read_text().split("\n## Contents\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| \[[^\]]+\]\(([^)#]+)\) \| (.+?) \|$", section, re.MULTILINE)
    return [(ROOT / path, cell) for path, cell in rows]


def missing_sections(page: Path, cell: str) -> list[str]:
    """The sections a Contents row lists in parentheses ("Memory administration (export, forget, ...)") that are
    neither a heading nor a bold lead-in of ``page`` (a backquoted setting names no section)."""
    text = page.read_text()
    titles = [_words(t) for t in headings(text) + re.findall(r"^(?:- )?\*\*(.+?)\*\*", text, re.MULTILINE)]
    named = [item.strip() for group in re.findall(r"\w \(([^)]+)\)", cell) for item in group.split(",")]
    return [item for item in named if not item.startswith("`") and not any(_words(item) <= t for t in titles)]


def test_the_contents_table_names_only_sections_that_exist() -> None:
    rows = contents()
    assert len(rows) >= 14
    assert {page.name for page, _ in rows} >= {p.name for p in ROOT.glob("docs/*.md")}
    assert [(page.name, missing_sections(page, cell)) for page, cell in rows if missing_sections(page, cell)] == []


def test_a_section_the_contents_table_promises_and_the_page_lost_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "operating.md"
    page.write_text("# Operating\n\n## Export\n\n## Import history\n\n- **A user**: `forget-user`\n\n## Back up\n")
    cell = "Memory administration (export, import history, forget, back up), the dashboard"
    assert missing_sections(page, cell) == ["forget"]


def test_shell_examples_run_python_from_a_virtualenv() -> None:
    """A bare ``python`` fails outside the virtualenv (this clone's modules are installed there only): every shell block
    names the venv's interpreter (``pip`` may be another project's, as in "install the wheel in that project")."""
    bare = [
        f"{page.relative_to(ROOT)}: {line.strip()}"
        for page in PAGES
        for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", page.read_text(), re.DOTALL | re.MULTILINE)
        for line in block.splitlines()
        if re.match(r"\s*python3? ", line)
    ]
    assert bare == []
