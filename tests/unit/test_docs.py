"""The README and the reference site: the site builds with ``--strict`` (a broken link, a
missing anchor or page fails it, as in CI), includes agent-benchmarks.md from the top as
its Method page, and every file the README links to exists."""

from __future__ import annotations

import re
from pathlib import Path

from tests.layout import PAGE, page_with, render
from tests.support import REPO, run_cli

# Two screens of a terminal: the README says what the project is and where to go next.
README_MAX_LINES = 100


def test_the_reference_site_builds_strict_with_the_method_page(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = run_cli(
        "mkdocs", "build", "--strict", "--site-dir", str(site),
        env={"NO_MKDOCS_2_WARNING": "1"}, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    method = (site / "method" / "index.html").read_text()
    title = (REPO / "agent-benchmarks.md").read_text().splitlines()[0].removeprefix("# ")
    # agent-benchmarks.md is the page, whole, and its one title the page's only <h1>: a
    # line led by "#18" stays text, as GitHub shows it.
    assert re.findall(r"<h1[^>]*>([^<]*)", method) == [title]
    assert "issue #18 measured it" in method.replace("\n", " ")
    for page in ("viewing", "native", "compare", "setup"):
        assert (site / page / "index.html").is_file()


def test_the_readme_fits_two_screens_and_its_links_resolve() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert any(t.startswith("docs/") for t in targets)
    missing = [t for t in targets if "://" not in t and not (REPO / t).exists()]
    assert missing == []


def test_the_layout_page_is_drawn_from_the_code_as_it_is() -> None:
    # Redraw with `uv run python -m tests.layout` after adding, moving or redescribing a
    # module: the page lists every package and module with its own docstring's summary.
    assert PAGE.read_text() == page_with(render())
    assert "- `gaia/`" in render() and "`run.py`" in render()
