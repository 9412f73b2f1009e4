"""GAIA attachments planned for ``--attach``: office files become text, the rest pass or skip."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import docx
import openpyxl
import pptx
import pytest
from openpyxl.styles import PatternFill
from pptx.util import Inches

from agent_benchmarks.backends.attachments import (
    BINARY_LIMIT_BYTES,
    GIVEN_NAME,
    GIVEN_TEXT,
    GIVEN_TEXT_CUT,
    TEXT_LIMIT_BYTES,
    message_attachments,
)
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.gaia.attachments import AttachmentPlan, prepare_attachment

GREEN = "FF00FF00"


def _extracted_text(plan: AttachmentPlan) -> str:
    assert plan.action == "extracted"
    assert plan.attached_path is not None
    return Path(plan.attached_path).read_text(encoding="utf-8")


def _write_docx(path: Path) -> Path:
    document = docx.Document()
    document.add_paragraph("The survey covered three harbours.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Harbour"
    table.cell(0, 1).text = "Boats"
    table.cell(1, 0).text = "Kirkwall"
    table.cell(1, 1).text = "41"
    document.add_paragraph("Boats were counted at dawn.")
    document.save(str(path))
    return path


def _write_xlsx(path: Path) -> Path:
    workbook = openpyxl.Workbook()
    plots = workbook.active
    plots.title = "Plots"
    plots.append(["Plot", "Owner", "Acres"])
    plots.append(["P1", "Earl Smith", 12])
    plots.append(["P2", "Ada Lee", 7.5])
    plots["C4"] = "=SUM(C2:C3)"
    plots["B2"].fill = PatternFill("solid", fgColor=GREEN)
    plots["F9"].fill = PatternFill("solid", fgColor=GREEN)  # coloured but empty
    workbook.create_sheet("Notes")["B3"] = "surveyed 2019"
    workbook.save(path)
    return path


def _write_pptx(path: Path) -> Path:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Quarterly crabs"
    slide.placeholders[1].text = "Landings rose 12%"
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(4), Inches(1)).table
    table.cell(0, 0).text = "Species"
    table.cell(0, 1).text = "Tonnes"
    table.cell(1, 0).text = "Brown crab"
    table.cell(1, 1).text = "310"
    slide.notes_slide.notes_text_frame.text = "Mention the storm in March."
    deck.slides.add_slide(deck.slide_layouts[5]).shapes.title.text = "Thanks"
    deck.save(str(path))
    return path


def test_docx_paragraphs_and_tables_in_document_order(tmp_path: Path) -> None:
    source = _write_docx(tmp_path / "survey.docx")
    plan = prepare_attachment(source, tmp_path / "work")
    text = _extracted_text(plan)
    assert plan.attached_path == str((tmp_path / "work" / "survey.docx.txt").resolve())
    assert plan.original == "survey.docx"
    assert plan.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert plan.size_bytes == source.stat().st_size
    assert plan.extracted_chars == len(text)
    assert plan.note is None
    assert "Harbour\tBoats\nKirkwall\t41" in text
    order = [text.index(s) for s in ("three harbours", "Kirkwall", "counted at dawn")]
    assert order == sorted(order)


def test_xlsx_sheets_values_formulas_and_fills(tmp_path: Path) -> None:
    text = _extracted_text(prepare_attachment(_write_xlsx(tmp_path / "plots.xlsx"), tmp_path))
    assert "## Sheet: Plots" in text
    assert "## Sheet: Notes" in text
    assert "2\tP1\tEarl Smith\t12" in text
    assert "3\tP2\tAda Lee\t7.5" in text
    # Written by openpyxl, the workbook has no cached value for the formula: show the formula.
    assert "4\t\t\t=SUM(C2:C3)" in text
    assert f"fill={GREEN}: B2 F9" in text
    assert "3\t\tsurveyed 2019" in text
    # Fills are listed under their own sheet.
    assert text.index(f"fill={GREEN}") < text.index("## Sheet: Notes")


def test_xlsx_shows_the_cached_value_of_a_formula(tmp_path: Path) -> None:
    # Excel stores a formula's last value beside it; openpyxl cannot compute one, so the
    # cached value is put into the sheet XML by hand, as Excel would have saved it.
    source = _write_xlsx(tmp_path / "plain.xlsx")
    cached = tmp_path / "cached.xlsx"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(cached, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"<f>SUM(C2:C3)</f><v></v>", b"<f>SUM(C2:C3)</f><v>19.5</v>")
                assert b"<v>19.5</v>" in data
            dst.writestr(item, data)
    text = _extracted_text(prepare_attachment(cached, tmp_path))
    assert "4\t\t\t19.5" in text
    assert "=SUM" not in text


def test_pptx_slides_shapes_tables_and_notes(tmp_path: Path) -> None:
    text = _extracted_text(prepare_attachment(_write_pptx(tmp_path / "deck.pptx"), tmp_path))
    assert "## Slide 1" in text
    assert "## Slide 2" in text
    slide_one = text[: text.index("## Slide 2")]
    for fact in ("Quarterly crabs", "Landings rose 12%", "Brown crab\t310", "storm in March"):
        assert fact in slide_one
    assert "### Notes" in slide_one
    assert "Thanks" in text[text.index("## Slide 2") :]


def test_upper_case_office_extension_is_extracted(tmp_path: Path) -> None:
    plan = prepare_attachment(_write_docx(tmp_path / "SURVEY.DOCX"), tmp_path / "work")
    assert "Kirkwall" in _extracted_text(plan)


def test_image_passes_through(tmp_path: Path) -> None:
    image = tmp_path / "chart.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    plan = prepare_attachment(image, tmp_path / "work")
    assert plan.action == "attached"
    assert plan.attached_path == str(image.resolve())
    assert plan.extracted_chars is None
    assert not (tmp_path / "work").exists()


def test_text_file_passes_through(tmp_path: Path) -> None:
    source = tmp_path / "data.csv"
    source.write_text("a,b\n1,2\n")
    plan = prepare_attachment(source, tmp_path)
    assert plan.action == "attached"
    assert plan.attached_path == str(source.resolve())


def test_text_file_at_the_agent_limit_is_skipped(tmp_path: Path) -> None:
    # The agent refuses a text file of exactly 512 KiB, so one byte less is the largest kept.
    fits = tmp_path / "fits.txt"
    fits.write_bytes(b"a" * (TEXT_LIMIT_BYTES - 1))
    assert prepare_attachment(fits, tmp_path).action == "attached"
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * TEXT_LIMIT_BYTES)
    plan = prepare_attachment(big, tmp_path)
    assert plan.action == "skipped"
    assert plan.attached_path is None
    assert plan.note is not None and "512 KiB" in plan.note


def test_oversized_binary_is_skipped(tmp_path: Path) -> None:
    audio = tmp_path / "talk.mp3"
    with audio.open("wb") as fh:
        fh.truncate(BINARY_LIMIT_BYTES)
    plan = prepare_attachment(audio, tmp_path)
    assert plan.action == "skipped"
    assert plan.note is not None and "20 MiB" in plan.note


def test_text_under_an_extension_the_agent_refuses_is_attached_as_txt(tmp_path: Path) -> None:
    source = tmp_path / "record.jsonld"
    source.write_text('{"@type": "Person", "name": "Ada"}', encoding="utf-8")
    plan = prepare_attachment(source, tmp_path / "work")
    assert _extracted_text(plan) == source.read_text(encoding="utf-8")
    assert plan.attached_path is not None and plan.attached_path.endswith("record.jsonld.txt")
    assert plan.note == "the agent does not accept .jsonld files; attached as .txt"


def test_zip_is_skipped_with_a_clear_note(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("inner.txt", "hello")
    plan = prepare_attachment(archive, tmp_path)
    assert plan.action == "skipped"
    assert plan.attached_path is None
    assert plan.note == "the agent does not accept .zip files and this one is not text"


@pytest.mark.parametrize("name", ["broken.docx", "broken.xlsx", "broken.pptx"])
def test_corrupt_office_file_is_skipped_with_the_error(tmp_path: Path, name: str) -> None:
    source = tmp_path / name
    source.write_bytes(b"this is not a zip archive")
    plan = prepare_attachment(source, tmp_path)
    assert plan.action == "skipped"
    assert plan.attached_path is None
    assert plan.note is not None
    assert plan.note.startswith(f"could not read the {source.suffix} file: ")
    assert plan.sha256 == hashlib.sha256(b"this is not a zip archive").hexdigest()


def test_office_file_of_the_wrong_kind_is_skipped(tmp_path: Path) -> None:
    source = tmp_path / "slides.pptx"
    source.write_bytes(_write_docx(tmp_path / "survey.docx").read_bytes())
    plan = prepare_attachment(source, tmp_path)
    assert plan.action == "skipped"
    assert plan.note is not None and "not a PowerPoint file" in plan.note


def test_long_extraction_is_truncated_below_the_limit(tmp_path: Path) -> None:
    document = docx.Document()
    # Multi-byte characters, so a byte cut could land inside one.
    for _ in range(3000):
        document.add_paragraph("é" * 100)
    source = tmp_path / "long.docx"
    document.save(str(source))
    plan = prepare_attachment(source, tmp_path)
    out = Path(str(plan.attached_path))
    assert plan.action == "extracted"
    assert out.stat().st_size < TEXT_LIMIT_BYTES
    text = out.read_text(encoding="utf-8")  # still valid UTF-8
    assert text.rstrip().endswith("[... truncated: the extracted text exceeded 512 KiB]")
    assert plan.extracted_chars is not None and plan.extracted_chars > len(text)
    assert plan.note is not None and plan.note.startswith("text truncated to 512 KiB")


def test_missing_attachment_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nowhere\.png: cannot read it"):
        prepare_attachment(tmp_path / "nowhere.png", tmp_path)


# --- in the message, for agents that take no files ---------------------------------------------


def _planned(source: Path, workdir: Path) -> dict:
    """The row's record of an attachment, as the suite's session makes it."""
    return prepare_attachment(source, workdir).model_dump(exclude_none=True)


def test_a_text_file_goes_into_the_message_whole(tmp_path: Path) -> None:
    note = tmp_path / "g1-text.txt"
    note.write_text("ocelot\nline two\n", encoding="utf-8")
    block, (record,) = message_attachments([_planned(note, tmp_path / "work")])
    assert block == "The file attached to this task, g1-text.txt, as text:\n\nocelot\nline two\n"
    assert record["given_to_agent"] == GIVEN_TEXT == "text in the message"
    assert record["action"] == "attached" and record["original"] == "g1-text.txt"


def test_a_spreadsheet_goes_in_as_its_extracted_text_under_its_own_name(tmp_path: Path) -> None:
    sheet = _write_xlsx(tmp_path / "plots.xlsx")
    block, (record,) = message_attachments([_planned(sheet, tmp_path / "work")])
    head, text = block.split("\n\n", 1)
    assert head == "The file attached to this task, plots.xlsx, as text:"
    assert "2\tP1\tEarl Smith\t12" in text and "4\t\t\t=SUM(C2:C3)" in text
    assert f"fill={GREEN}: B2 F9" in text
    assert (record["action"], record["given_to_agent"]) == ("extracted", GIVEN_TEXT)


@pytest.mark.parametrize(
    ("name", "content", "action"),
    [
        ("chart.png", b"\x89PNG\r\n\x1a\n\x00\x00", "attached"),  # the native agent's
        ("bundle.bin", b"\x00\x01\x02binary", "skipped"),
    ],
)
def test_a_file_without_text_is_named_in_one_line(
    tmp_path: Path, name: str, content: bytes, action: str
) -> None:
    source = tmp_path / name
    source.write_bytes(content)
    block, (record,) = message_attachments([_planned(source, tmp_path / "work")])
    assert block == (
        f"A file comes with this task: {name}. You have no tool that can open it; "
        "answer from the question and the web."
    )
    assert (record["action"], record["given_to_agent"]) == (action, GIVEN_NAME)
    assert "\x89PNG" not in block


def test_a_file_the_dataset_lacks_is_named(tmp_path: Path) -> None:
    missing = {"original": "gone.pdf", "action": "skipped", "note": "file not found"}
    block, records = message_attachments([missing])
    assert block.startswith("A file comes with this task: gone.pdf.")
    assert records == [missing | {"given_to_agent": GIVEN_NAME}]
    assert "given_to_agent" not in missing  # the caller's records are not changed


def test_text_over_the_message_limit_is_cut_and_the_record_says_how_much(
    tmp_path: Path,
) -> None:
    source = tmp_path / "long.csv"
    text = "é" * 50_000 + "\n"  # two bytes a character, so a cut may split one
    source.write_text(text, encoding="utf-8")
    picture = tmp_path / "map.png"
    picture.write_bytes(b"\x89PNG")
    plans = [_planned(source, tmp_path), _planned(picture, tmp_path)]
    block, (cut, named) = message_attachments(plans, max_bytes=30_000)
    size = len(block.encode("utf-8"))
    assert 29_990 <= size <= 30_000  # all that fits, and no more
    # The named file's line is whole after the cut text: only the text gave way.
    assert block.endswith(
        "\n\nA file comes with this task: map.png. You have no tool that can open it; "
        "answer from the question and the web."
    )
    assert named["given_to_agent"] == GIVEN_NAME
    kept = cut["given_chars"]
    assert cut["given_to_agent"] == GIVEN_TEXT_CUT and cut["text_chars"] == len(text)
    cut_line = (
        f"[... long.csv is cut here: only its first {kept} of {len(text)} characters fit in "
        "the message]"
    )
    assert block.startswith(
        f"The file attached to this task, long.csv, as text:\n\n{'é' * kept}\n{cut_line}\n\n"
    )
    # Without a limit nothing is cut.
    whole, (record, _) = message_attachments(plans)
    assert text in whole and record["given_to_agent"] == GIVEN_TEXT


def test_text_that_fits_is_not_cut(tmp_path: Path) -> None:
    source = tmp_path / "short.md"
    source.write_text("# Title\n", encoding="utf-8")
    block, (record,) = message_attachments([_planned(source, tmp_path)], max_bytes=200)
    assert record["given_to_agent"] == GIVEN_TEXT and "given_chars" not in record
    assert len(block.encode()) <= 200
