"""A report table on a terminal, at the terminal's width, with no number wrapped.

The columns (:mod:`.tables`) say which cells are figures and how long each column stays as
the width shrinks. A table wider than the terminal first gives its least kept columns their
abbreviated form, then drops the least kept ones, until it fits; figures are never wrapped
(only free text may fold), and a line under the table names the columns left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from agent_benchmarks.report.tables import Column, Table

# A word of free text longer than this may be folded; shorter words wrap whole.
MAX_WORD = 24
BOX = box.SQUARE


@dataclass
class _Shown:
    column: Column[Any]
    short: bool = False

    def head(self) -> str:
        return (self.column.short_head or self.column.head) if self.short else self.column.head

    def cell(self, item: Any) -> str:
        return self.column.abbreviated(item) if self.short else self.column.text(item)

    def width(self, items: Any) -> int:
        """The narrowest this column can be: its widest figure (figures never wrap), or
        its longest word (up to ``MAX_WORD``) for text, and the longest word of its head."""
        texts = [self.cell(item) for item in items]
        if self.column.figure:
            body = max((cell_len(t) for t in texts), default=0)
        else:  # text wraps between words, and folds only a word longer than MAX_WORD
            body = max((cell_len(w) for t in texts for w in t.split()), default=0)
            body = min(body, MAX_WORD)
        head = max((cell_len(word) for word in self.head().split()), default=0)
        return max(body, head, 1)


def _total(shown: list[_Shown], items: Any) -> int:
    # Each column has one space of padding either side and a border on its right, plus the
    # table's left border.
    return sum(s.width(items) + 3 for s in shown) + 1


def fit(table: Table[Any], width: int) -> tuple[list[_Shown], list[Column[Any]]]:
    """The columns shown at ``width`` (each in full or abbreviated), and those dropped."""
    shown = [_Shown(c) for c in table.columns if c.keep is not None]
    dropped: list[Column[Any]] = []
    # The least kept first; of columns kept alike, the later first (a table's first columns
    # name its rows).
    ranked = sorted(enumerate(shown), key=lambda x: (x[1].column.keep or 0, -x[0]))
    order = [s for _, s in ranked]
    for s in order:
        if _total(shown, table.items) <= width:
            break
        if s.column.short is not None or s.column.short_head is not None:
            s.short = True
    for s in order:
        if _total(shown, table.items) <= width or len(shown) == 1:
            break
        shown.remove(s)
        dropped.append(s.column)
    for s in reversed(order):  # room left over goes back to the most kept, in full
        if s in shown and s.short:
            s.short = False
            if _total(shown, table.items) > width:
                s.short = True
    return shown, dropped


def render(table: Table[Any], width: int) -> tuple[RichTable, list[Column[Any]]]:
    """``table`` as a rich table that fits ``width``, and the columns it leaves out."""
    shown, dropped = fit(table, width)
    out = RichTable(title=table.title or None, box=BOX, width=None)
    for s in shown:
        # A head wraps between its words even over a figure column (rich's no_wrap would
        # otherwise hold it on one line and widen the column past what fit() counted).
        head = Text(s.head(), no_wrap=False)
        if s.column.figure:
            out.add_column(head, no_wrap=True, width=s.width(table.items))
        else:
            out.add_column(head, overflow="fold")
    for item in table.items:
        out.add_row(*(s.cell(item) for s in shown))
    return out, dropped


def print_table(console: Console, table: Table[Any], more: str = "") -> None:
    """Print ``table`` at the console's width; ``more`` says where the left-out columns
    are (``--html-out``, say), named under the table when some are."""
    out, dropped = render(table, console.width)
    console.print(out)
    if dropped:
        names = ", ".join(c.short_head or c.head for c in dropped)
        where = f" ({more})" if more else ""
        console.print(f"not shown at {console.width} columns: {names}{where}", markup=False)
