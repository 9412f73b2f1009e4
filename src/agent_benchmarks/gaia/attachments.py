"""GAIA attachments, made fit for an agent CLI that takes ``--attach PATH``.

``lightpanda agent --attach`` inlines text files and base64-encodes images, audio and pdf, but
refuses every other type: the whole run exits with "unsupported attachment type". So each
attachment is planned before the agent starts: passed through when the agent reads it, turned
into a ``.txt`` file when only its text can reach the model (Word, Excel and PowerPoint files,
and text files under an extension the agent does not know), or skipped with the reason recorded.
A file that cannot be read is data trouble on one task, so it is skipped rather than raised.
Agents that take no files get the planned text in their message instead
(:func:`message_attachments`).
"""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.spec.datasets import sha256_file

# The office readers (python-docx, openpyxl with numpy, python-pptx) take about 40 MB and a
# second to import: each is imported by the extractor that reads its format, so a run whose
# tasks bring no such file never loads them.
if TYPE_CHECKING:
    from openpyxl.cell.cell import Cell
    from openpyxl.styles.colors import Color
    from openpyxl.workbook.workbook import Workbook

from agent_benchmarks.backends.attachments import (
    AGENT_BINARY_TYPES,
    AGENT_TEXT_TYPES,
    BINARY_LIMIT_BYTES,
    TEXT_LIMIT_BYTES,
    read_text,
)

# Ends a truncated extraction, so the model knows the text it reads is not the whole file.
_TRUNCATION_MARKER = "\n[... truncated: the extracted text exceeded 512 KiB]\n"


def _unreadable_file_errors() -> tuple[type[Exception], ...]:
    """What the office readers raise on a file that is not what its extension says, a broken
    zip or malformed XML (lxml's and the standard library's XML errors both derive from
    SyntaxError). Asked only once an extractor has failed, so that a run whose attachments
    all read imports no reader it did not need."""
    from docx.opc.exceptions import PackageNotFoundError as NotADocx
    from openpyxl.utils.exceptions import InvalidFileException
    from pptx.exc import PackageNotFoundError as NotAPptx

    return (
        zipfile.BadZipFile,
        KeyError,
        SyntaxError,
        OSError,
        ValueError,
        NotADocx,
        NotAPptx,
        InvalidFileException,
    )


Action = Literal["attached", "extracted", "skipped"]


class AttachmentPlan(BaseModel):
    """How one dataset attachment reaches the agent; recorded with the prediction."""

    model_config = ConfigDict(extra="forbid")

    original: str  # file name of the dataset attachment
    sha256: str
    size_bytes: int
    action: Action
    attached_path: str | None  # what is passed to --attach: the original or the extracted .txt
    extracted_chars: int | None = None  # characters extracted, before any truncation
    note: str | None = None  # why skipped, converted or truncated


def prepare_attachment(path: Path, workdir: Path) -> AttachmentPlan:
    """Plan ``path`` for ``--attach``, writing any extracted text under ``workdir``."""
    try:
        size = path.stat().st_size
        digest = sha256_file(path)
    except OSError as exc:
        raise InputError(f"attachment {path}: cannot read it ({exc.strerror or exc})") from None

    def plan(action: Action, attached: Path | None = None, **extra: Any) -> AttachmentPlan:
        return AttachmentPlan(
            original=path.name,
            sha256=digest,
            size_bytes=size,
            action=action,
            attached_path=None if attached is None else str(attached.resolve()),
            **extra,
        )

    ext = path.suffix.lower().removeprefix(".")
    extractor = _OFFICE_EXTRACTORS.get(ext)
    if extractor is not None:
        try:
            text = extractor(path)
        except Exception as exc:
            if not isinstance(exc, _unreadable_file_errors()):
                raise
            detail = " ".join(str(exc).split())[:200]
            return plan(
                "skipped", note=f"could not read the .{ext} file: {type(exc).__name__}: {detail}"
            )
        out, note = _write_text(text, workdir / f"{path.name}.txt")
        return plan("extracted", out, extracted_chars=len(text), note=note)

    if ext in AGENT_TEXT_TYPES:
        if size >= TEXT_LIMIT_BYTES:
            return plan("skipped", note="over the agent's 512 KiB limit for text files")
        return plan("attached", path)

    if ext in AGENT_BINARY_TYPES:
        if size >= BINARY_LIMIT_BYTES:
            return plan("skipped", note="over the agent's 20 MiB limit for images, audio and pdf")
        return plan("attached", path)

    kind = f".{ext} files" if ext else "files without an extension"
    text = read_text(path)
    if text is None:
        return plan("skipped", note=f"the agent does not accept {kind} and this one is not text")
    if size >= TEXT_LIMIT_BYTES:
        return plan("skipped", note="over the agent's 512 KiB limit for text files")
    out, _ = _write_text(text, workdir / f"{path.name}.txt")
    return plan(
        "extracted",
        out,
        extracted_chars=len(text),
        note=f"the agent does not accept {kind}; attached as .txt",
    )


def _write_text(text: str, out: Path) -> tuple[Path, str | None]:
    """Write ``text`` to ``out``, cut to the agent's text limit; the note says when it was cut."""
    data = text.encode("utf-8")
    note = None
    if len(data) >= TEXT_LIMIT_BYTES:
        budget = TEXT_LIMIT_BYTES - 1 - len(_TRUNCATION_MARKER.encode("utf-8"))
        # Dropping the bytes of a character split at the cut keeps the file valid UTF-8.
        kept = data[:budget].decode("utf-8", errors="ignore")
        note = f"text truncated to 512 KiB ({len(kept)} of {len(text)} characters)"
        text = kept + _TRUNCATION_MARKER
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out, note


def _cell_text(value: object) -> str:
    """One table cell on one line: tabs separate cells and newlines separate rows."""
    return str(value).replace("\t", " ").replace("\r\n", "\\n").replace("\n", "\\n")


def _row_line(cells: list[str]) -> str:
    return "\t".join(_cell_text(cell) for cell in cells).rstrip("\t")


# --- Word -------------------------------------------------------------------------------


def _docx_text(path: Path) -> str:
    """Paragraphs and tables in document order; a table row per line, cells tab-separated."""
    import docx
    from docx.table import Table as DocxTable

    lines: list[str] = []
    for block in docx.Document(str(path)).iter_inner_content():
        if isinstance(block, DocxTable):
            lines.append("")
            lines.extend(_row_line([cell.text for cell in row.cells]) for row in block.rows)
            lines.append("")
        elif block.text.strip():
            lines.append(block.text)
    return "\n".join(lines).strip() + "\n"


# --- Excel ------------------------------------------------------------------------------

_DRAWINGML = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
# Excel's theme colour index n names the n-th of these colour-scheme slots (each light/dark
# pair swapped with respect to the order the theme part stores them in).
_THEME_SLOTS = (
    "lt1",
    "dk1",
    "lt2",
    "dk2",
    *(f"accent{i}" for i in range(1, 7)),
    "hlink",
    "folHlink",
)


def _xlsx_text(path: Path) -> str:
    """Every sheet's cell values, then its non-default cell fills grouped by colour.

    Values are the ones Excel cached when it last saved the file; a formula with no cached
    value (a workbook written by a program, never opened in Excel) is shown as its formula.
    Fills are listed because some GAIA questions are about the colour of cells.
    """
    import openpyxl

    values = openpyxl.load_workbook(path, data_only=True)
    formulas = openpyxl.load_workbook(path, data_only=False)
    theme = _theme_colours(values)
    parts = [
        "Each row line starts with its row number, then the cells from column A, tab-separated."
    ]
    for sheet in values.worksheets:
        formula_sheet = formulas[sheet.title]
        parts.append(f"## Sheet: {sheet.title}")
        fills: dict[str, list[str]] = {}
        bounds = {"min_row": 1, "min_col": 1, "max_row": sheet.max_row, "max_col": sheet.max_column}
        for row, formula_row in zip(
            sheet.iter_rows(**bounds), formula_sheet.iter_rows(**bounds), strict=True
        ):
            shown = [_xlsx_value(c, f) for c, f in zip(row, formula_row, strict=True)]
            if any(shown):
                parts.append(_row_line([str(row[0].row), *shown]))
            for cell in row:
                fill = _fill_description(cell, theme)
                if fill is not None:
                    fills.setdefault(fill, []).append(cell.coordinate)
        if fills:
            parts.append("Cell fills:")
            parts.extend(f"fill={fill}: {' '.join(cells)}" for fill, cells in fills.items())
        parts.append("")
    return "\n".join(parts)


def _xlsx_value(cell: Cell, formula_cell: Cell) -> str:
    value = cell.value
    if value is None:
        if formula_cell.data_type != "f":
            return ""
        formula = formula_cell.value
        # Array formulas come back as objects holding the formula text.
        return str(getattr(formula, "text", formula))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _fill_description(cell: Cell, theme: dict[int, str]) -> str | None:
    """The cell's fill as ``AARRGGBB`` (with the pattern unless solid); None for no fill."""
    pattern = getattr(cell.fill, "patternType", None)
    if pattern is None:
        return None
    colour = _colour_text(cell.fill.fgColor, theme)
    return colour if pattern == "solid" else f"{pattern} {colour}"


def _colour_text(colour: Color, theme: dict[int, str]) -> str:
    from openpyxl.styles.colors import COLOR_INDEX

    if colour.type == "rgb":
        return str(colour.rgb)
    if colour.type == "indexed" and 0 <= colour.indexed < len(COLOR_INDEX):
        return COLOR_INDEX[colour.indexed]
    if colour.type == "theme":
        base = theme.get(colour.theme)
        text = f"theme{colour.theme}" + (f"={base}" if base else "")
        return text + (f" tint {colour.tint:+.2f}" if colour.tint else "")
    return f"{colour.type} {colour.value}"


def _theme_colours(workbook: Workbook) -> dict[int, str]:
    """Theme colour index -> ``FFRRGGBB`` from the workbook's theme, so fills show a hue."""
    raw = getattr(workbook, "loaded_theme", None)
    if not raw:
        return {}
    scheme = ET.fromstring(raw).find(f".//{_DRAWINGML}clrScheme")
    if scheme is None:
        return {}
    colours: dict[int, str] = {}
    for index, slot in enumerate(_THEME_SLOTS):
        element = scheme.find(f"{_DRAWINGML}{slot}")
        if element is None or len(element) == 0:
            continue
        # An explicit colour (srgbClr val) or a system colour's last-known value (sysClr
        # lastClr); a system colour's own val is a name such as "windowText", not a colour.
        colour = element[0]
        value = colour.get("val") if colour.tag == f"{_DRAWINGML}srgbClr" else colour.get("lastClr")
        if value:
            colours[index] = f"FF{value.upper()}"
    return colours


# --- PowerPoint -------------------------------------------------------------------------


def _pptx_text(path: Path) -> str:
    """Per slide: the text of every shape (tables and groups included), then the notes."""
    import pptx

    parts: list[str] = []
    for number, slide in enumerate(pptx.Presentation(str(path)).slides, start=1):
        parts.append(f"## Slide {number}")
        for shape in slide.shapes:
            parts.extend(_shape_lines(shape))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                parts.append("### Notes")
                parts.append(notes.text)
        parts.append("")
    return "\n".join(parts)


def _shape_lines(shape: Any) -> Iterator[str]:
    from pptx.shapes.group import GroupShape

    if isinstance(shape, GroupShape):
        for member in shape.shapes:
            yield from _shape_lines(member)
    elif shape.has_table:
        yield from (_row_line([cell.text for cell in row.cells]) for row in shape.table.rows)
    elif shape.has_text_frame and shape.text_frame.text.strip():
        yield shape.text_frame.text


_OFFICE_EXTRACTORS: dict[str, Callable[[Path], str]] = {
    "docx": _docx_text,
    "xlsx": _xlsx_text,
    "pptx": _pptx_text,
}
