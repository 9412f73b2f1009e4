"""Progress of a run: one live line on a terminal, one line per finished attempt otherwise.

The live line shows done / total, the ok / empty / timeout / error counts, elapsed time, the
ETA, and tokens and cost so far, fitted to the terminal's width (:func:`progress_line`): as
the width shrinks the bar goes first, then the long forms of the counts and the spend, then
the title, and done / total stays to the last. The ETA comes from the observed rate of
finished attempts (those finished so far over the time since the run started: with N
workers the first N finish together, and the rate counts them all), and says "–" until one
has. In non-interactive output (CI logs, ``| tee``) a live line would be noise, so each
finished attempt prints one line instead.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from rich.console import Console
from rich.progress import Progress, ProgressColumn, Task
from rich.text import Text

from agent_benchmarks.records.schema import PredictionRow

MIN_BAR, MAX_BAR = 10, 40
BAR_DONE, BAR_TODO = "━", "─"


def clock(seconds: float) -> str:
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def eta(done: int, total: int, elapsed_s: float) -> str:
    """The time left at the observed rate of finished attempts; "–" before the first."""
    if done >= total:
        return "0:00"
    if done == 0 or elapsed_s <= 0:
        return "–"
    return clock((total - done) * elapsed_s / done)


@dataclass
class Figures:
    """What the line shows, already counted."""

    title: str
    done: int
    total: int
    counts: Counter[str]
    elapsed_s: float
    tokens: int
    cost: float
    cost_known: bool

    def counts_text(self, short: bool = False) -> str:
        c = self.counts
        if short:
            budget = f" bu {c['budget']}" if c["budget"] else ""
            return f"ok {c['ok']} em {c['empty']}{budget} to {c['timeout']} er {c['error']}"
        budget = f" · budget {c['budget']}" if c["budget"] else ""
        return (
            f"ok {c['ok']} · empty {c['empty']}{budget} · timeout {c['timeout']} · "
            f"error {c['error']}"
        )

    def spend_text(self, short: bool = False) -> str:
        cost = f"${self.cost:.2f}" if self.cost_known else f"≥${self.cost:.2f}"
        if short:
            tokens = f"{self.tokens / 1000:.0f}k" if self.tokens >= 10_000 else str(self.tokens)
            return f"{tokens} tok {cost}"
        return f"{self.tokens:,} tok {cost}"


def progress_line(f: Figures, width: int) -> str:
    """The live line at ``width`` characters at most (see the module)."""
    done = f"{f.done}/{f.total}"
    times = f"{clock(f.elapsed_s)} ETA {eta(f.done, f.total, f.elapsed_s)}"
    layouts = [
        ([f.title], True, [done, f.counts_text(), times, f.spend_text()]),
        ([f.title], True, [done, f.counts_text(short=True), times, f.spend_text()]),
        ([], True, [done, f.counts_text(short=True), times, f.spend_text(short=True)]),
        ([], False, [done, f.counts_text(short=True), times, f.spend_text(short=True)]),
        ([], False, [done, f.counts_text(short=True), f"ETA {eta(f.done, f.total, f.elapsed_s)}"]),
        ([], False, [done, f"ETA {eta(f.done, f.total, f.elapsed_s)}"]),
        ([], False, [done]),
    ]
    for head, with_bar, parts in layouts:
        text = " ".join([*head, *parts])
        room = min(width - len(text) - 1, MAX_BAR)
        if with_bar and room >= MIN_BAR:
            filled = round(room * f.done / f.total) if f.total else room
            bar = BAR_DONE * filled + BAR_TODO * (room - filled)
            return " ".join([*head, bar, *parts])
        if not with_bar and len(text) <= width:
            return text
    return done[:width]


class _LineColumn(ProgressColumn):
    """The whole line as one column, drawn at the console's width at each refresh."""

    def __init__(self, progress: RunProgress):
        super().__init__()
        self.progress = progress

    def render(self, task: Task) -> Text:
        return Text(progress_line(self.progress.figures(), self.progress.console.width))


class RunProgress:
    def __init__(self, total: int, title: str, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.title = title
        self.total = total
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.tokens = 0
        self.cost = 0.0
        self.cost_known = True
        self.started = time.monotonic()
        self.interactive = self.console.is_terminal
        self._progress: Progress | None = None
        if self.interactive:
            self._progress = Progress(
                _LineColumn(self), console=self.console, transient=False, expand=False
            )
            self._task = self._progress.add_task(title, total=total)

    def __enter__(self) -> RunProgress:
        self.started = time.monotonic()
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def note(self, message: str) -> None:
        self.console.print(message)

    def figures(self) -> Figures:
        return Figures(
            title=self.title,
            done=self.done,
            total=self.total,
            counts=self.counts,
            elapsed_s=time.monotonic() - self.started,
            tokens=self.tokens,
            cost=self.cost,
            cost_known=self.cost_known,
        )

    def advance(self, row: PredictionRow) -> None:
        self.done += 1
        self.counts[row.status] += 1
        self.tokens += row.usage.total_tokens
        if row.usage.cost_usd is None:
            self.cost_known = self.cost_known and row.usage.total_tokens == 0
        else:
            self.cost += row.usage.cost_usd
        if self._progress is not None:
            self._progress.update(self._task, advance=1)
            return
        attempt = f" attempt {row.attempt}" if row.attempt > 1 else ""
        extra = f" ({row.error_class})" if row.error_class else ""
        f = self.figures()
        fault = row.details.get("fault")
        fired = (
            f", {fault.get('kind')} fired after call {fault.get('fired_at_call')}"
            if isinstance(fault, dict) and fault.get("fired")
            else ""
        )
        meter = row.details.get("meter")
        if isinstance(meter, dict) and meter.get("cost_budget"):
            fired += f", dollar budget {meter['cost_budget']}"
        # Plain text, written as is: rich's rendering of a line (emoji codes, control codes,
        # measuring) cost 1.6 ms of the interpreter per row, taken from the workers.
        self.console.file.write(
            f"[{self.done}/{self.total}] {row.id}{attempt}: {row.status}{extra} "
            f"in {row.duration_s:.1f}s, {row.usage.total_tokens} tokens{fired}; "
            f"{f.counts_text()}; ETA {eta(f.done, f.total, f.elapsed_s)}\n"
        )
        self.console.file.flush()
