"""MkDocs hooks for the reference site (mkdocs.yml).

- ``method.md`` is ``agent-benchmarks.md`` from the repository's top, included whole: the
  project's design keeps that file there, and the site shows it as one of its pages.
- A line that starts with ``#`` and a digit (``#18 measured it``, the ``- #1 stack: ...``
  lines ``compare`` writes) is text on GitHub, which wants a space after a heading's
  hashes; Python-Markdown would make it a heading, so the hash is escaped outside code.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

INCLUDES = {"method.md": "agent-benchmarks.md"}
HASH_NUMBER = re.compile(r"^(\s*(?:[-*+]\s+)?)#(?=\d)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    included = INCLUDES.get(page.file.src_uri)
    if included is not None:
        # A missing file fails the build (FileNotFoundError), as a broken link does.
        markdown = (Path(config["config_file_path"]).parent / included).read_text()
    lines, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        lines.append(line if fenced else HASH_NUMBER.sub(r"\1\\#", line))
    return "\n".join(lines)
