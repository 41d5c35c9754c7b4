"""The docs stay a reference: page lengths, an opening that says what each page answers,
and docs/map.md naming every folder a newcomer looks for (issue 34 items 4 and 5)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PACKAGE = REPO / "shared" / "engram_memory"

# The targets of issue 34: what is true now fits; history goes to docs/decisions/.
MAX_LINES = {
    "docs/search.md": 500,
    "docs/performance.md": 400,
    "docs/deploy.md": 450,
    "README.md": 220,
}
OPENING_LINES = 6  # the title, a blank line, then the page's question


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


@pytest.mark.parametrize(("page", "limit"), sorted(MAX_LINES.items()))
def test_a_reference_page_stays_within_its_length(page: str, limit: int) -> None:
    lines = (REPO / page).read_text(encoding="utf-8").count("\n")
    assert lines <= limit, (
        f"{page} has {lines} lines (target {limit}): file history in docs/decisions/ and "
        "bench runs in bench/results/")


def test_the_readme_starts_with_the_two_set_up_commands() -> None:
    opening = (REPO / "README.md").read_text(encoding="utf-8").splitlines()[:6]
    assert opening[2] == "```bash"
    assert opening[3].startswith("make serve ")
    assert opening[4].startswith("make test ")


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_page_opens_with_what_it_answers(page: Path) -> None:
    opening = page.read_text(encoding="utf-8").splitlines()[:OPENING_LINES]
    assert opening, "an empty page"
    assert opening[0].startswith("# "), "a page starts with its title"
    says = " ".join(opening[1:])
    # A decision record's question is what it answers.
    assert "answers" in says or says.strip().startswith("**Question.**"), (
        f"{page.relative_to(REPO)}: say in the first lines what the page answers "
        '("This page answers ...")')


GENERATED = {"site", "cdk.out", "node_modules", "__pycache__", "build", "dist"}


def _children(folder: Path) -> list[str]:
    return [p.relative_to(REPO).as_posix() + "/" for p in sorted(folder.iterdir())
            if p.is_dir() and not p.name.startswith(".") and p.name not in GENERATED
            and not p.name.endswith(".egg-info")]


def _mapped_paths() -> list[str]:
    """The paths in the first column of docs/map.md's "Every folder" table."""
    text = (DOCS / "map.md").read_text(encoding="utf-8")
    section = text.split("## Every folder", 1)[1].split("\n## ", 1)[0]
    cells = [row.split("|")[1] for row in section.splitlines() if row.startswith("| `")]
    return [span for cell in cells for span in cell.split("`")[1::2]]


@pytest.mark.parametrize("folder", [*_children(REPO), *_children(PACKAGE),
                                    *_children(REPO / "tests")])
def test_the_map_says_where_each_folder_lives(folder: str) -> None:
    assert any(path.startswith(folder) for path in _mapped_paths()), (
        f"docs/map.md's table of folders has no row for {folder}")


def _table(text: str, header_start: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table whose header starts with ``header_start``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    header = [c.strip() for c in lines[start].strip().strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("| "):
            break
        rows.append(dict(zip(header, (c.strip() for c in line.strip().strip("|").split("|")),
                             strict=True)))
    return rows


def _parts(calls: str) -> set[str]:
    return set(calls.split(" + "))


def test_the_performance_call_table_is_the_design_minimum_the_bench_checks() -> None:
    # The table is a tool_latency.py run; the bench smoke test asserts measured = minimum on
    # every run, this keeps the page's copy equal to bench/aws_calls.py's minimum.
    from bench.aws_calls import DESIGN_MINIMUM, PER_TERM_NOTE, ROUND_TRIP_FLOOR, describe

    page = (DOCS / "performance.md").read_text(encoding="utf-8")
    rows = {row["tool"]: row for row in _table(page, "| tool | direct p50 ms |")}
    assert set(rows) == set(DESIGN_MINIMUM)
    for tool, minimum in DESIGN_MINIMUM.items():
        note = PER_TERM_NOTE.get(tool, "")
        assert rows[tool]["design minimum"] == describe(minimum) + note, tool
        measured = [part for part in rows[tool]["measured"].split(" + ")
                    if not (note and part.endswith(" Query"))]
        assert " + ".join(measured) == describe(minimum), tool
        assert rows[tool]["floor"] == str(ROUND_TRIP_FLOOR[tool]), tool
        assert rows[tool]["errors"] == "0", tool


def test_the_bench_readme_states_the_same_design_minimum() -> None:
    from bench.aws_calls import DESIGN_MINIMUM, PER_TERM_NOTE, describe

    readme = (REPO / "bench" / "README.md").read_text(encoding="utf-8")
    rows = {row["tool"]: row for row in _table(readme, "| tool | minimum the design needs |")}
    assert set(rows) == set(DESIGN_MINIMUM)
    for tool, minimum in DESIGN_MINIMUM.items():
        stated = rows[tool]["minimum the design needs"]
        assert _parts(stated) == _parts(describe(minimum) + PER_TERM_NOTE.get(tool, "")), tool


SOURCE_ROOTS = ("shared", "functions", "infra", "bench", "tools", "clients", "examples", "models")
DOC_PATH = re.compile(r"\bdocs/[\w/-]+\.md\b")


def test_every_docs_page_the_code_names_exists() -> None:
    named: dict[str, str] = {}
    for root in SOURCE_ROOTS:
        for path in sorted((REPO / root).rglob("*")):
            if (path.suffix not in {".py", ".md", ".ts", ".mjs", ".json"}
                    or any(part in GENERATED for part in path.parts) or not path.is_file()):
                continue
            for page in DOC_PATH.findall(path.read_text(encoding="utf-8", errors="replace")):
                named.setdefault(page, path.relative_to(REPO).as_posix())
    missing = {page: where for page, where in named.items() if not (REPO / page).is_file()}
    assert not missing, f"pages named in code but absent (page: first file naming it): {missing}"
