"""Attachments on the agent's side: what ``lightpanda agent --attach`` accepts, and for an
agent that takes no files (Claude Code and Codex over MCP, agent-browser's chat), a task's
prepared attachments put into its message (:func:`message_attachments`).

A suite prepares its attachments for these rules (GAIA: ``gaia/attachments.py``); the row
records what each agent was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# What `lightpanda agent --attach` accepts, by extension (any case), measured against
# lightpanda 1.0.2. Anything else makes the agent exit, so it is never passed through as is.
AGENT_TEXT_TYPES = frozenset({"txt", "md", "csv", "json", "xml", "html", "py", "js", "ts"})
AGENT_BINARY_TYPES = frozenset(
    {"png", "jpg", "jpeg", "gif", "webp", "heic", "mp3", "wav", "m4a", "ogg", "flac", "pdf"}
)

# The agent's per-file limits. It refuses a file of exactly the limit, so sizes stay below.
TEXT_LIMIT_BYTES = 512 * 1024
BINARY_LIMIT_BYTES = 20 * 1024 * 1024


def read_text(path: Path) -> str | None:
    """The file as text, or None when it is binary (a NUL byte, or not UTF-8)."""
    data = path.read_bytes()
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


# What an agent that takes no files was given of each attachment: the row records it as
# details.attachments[i].given_to_agent.
GIVEN_TEXT = "text in the message"
GIVEN_TEXT_CUT = "text in the message, cut to fit"
GIVEN_NAME = "file named only"


def message_attachments(
    plans: list[dict[str, Any]], max_bytes: int | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """For an agent that takes no files (Claude Code over MCP, agent-browser's chat): the
    task's attachments as one block of its message, and the row's attachment records, each
    with ``given_to_agent`` added.

    ``plans`` are the row's ``details.attachments`` as the suite prepared them (dumps of
    :class:`AttachmentPlan`, or a file the dataset names but does not hold). A file with text
    (a text file, or the text extracted from an office file) goes in whole; a file with none
    (images, audio, pdf, binaries, files skipped or missing) is named in a line saying it
    cannot be opened. ``max_bytes`` bounds the block's UTF-8 size for a message with a hard
    limit: text beyond it is cut, a line in the message says so, and the record keeps how
    many characters were given (``given_chars``) of how many (``text_chars``). It must leave
    room for the lines that name the files and head each text.
    """
    texts = [_planned_text(plan) for plan in plans]
    room = None  # bytes left for the files' texts
    if max_bytes is not None:
        # The lines naming files without text, and the blank lines between files, are set
        # aside first: only text gives way.
        named = [_named_line(p["original"]) for p, t in zip(plans, texts, strict=True) if t is None]
        room = max_bytes - sum(map(_size, named)) - 2 * max(len(plans) - 1, 0)
    blocks: list[str] = []
    records: list[dict[str, Any]] = []
    for plan, text in zip(plans, texts, strict=True):
        name = plan["original"]
        record = dict(plan)
        if text is None:
            block = _named_line(name)
            record["given_to_agent"] = GIVEN_NAME
        else:
            head = f"The file attached to this task, {name}, as text:\n\n"
            block = head + text
            record["given_to_agent"] = GIVEN_TEXT
            if room is not None:
                if _size(block) > room:
                    # The cut line is measured with the whole text's count, which bounds
                    # the kept one's.
                    longest = _size(_cut_line(name, len(text), len(text)))
                    budget = max(room - _size(head) - longest, 0)
                    kept = text.encode("utf-8")[:budget].decode("utf-8", errors="ignore")
                    block = head + kept + _cut_line(name, len(kept), len(text))
                    record |= {
                        "given_to_agent": GIVEN_TEXT_CUT,
                        "given_chars": len(kept),
                        "text_chars": len(text),
                    }
                room -= _size(block)
        blocks.append(block)
        records.append(record)
    return "\n\n".join(blocks), records


def _planned_text(plan: dict[str, Any]) -> str | None:
    """The text an attachment plan gives the agent, or None where it has none to give."""
    attached = plan.get("attached_path")
    if attached is None:
        return None
    path = Path(attached)
    if path.suffix.lower().removeprefix(".") in AGENT_BINARY_TYPES:
        return None
    return read_text(path)


def _named_line(name: str) -> str:
    return (
        f"A file comes with this task: {name}. You have no tool that can open it; "
        "answer from the question and the web."
    )


def _cut_line(name: str, kept: int, total: int) -> str:
    return (
        f"\n[... {name} is cut here: only its first {kept} of {total} characters fit in "
        "the message]"
    )


def _size(text: str) -> int:
    return len(text.encode("utf-8"))
