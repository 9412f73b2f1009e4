"""Progress of a run: a rich bar on a terminal, one line per finished attempt otherwise.

The bar shows done / total, the ok / empty / timeout / error counts, elapsed time and
ETA, and tokens and cost so far. In non-interactive output (CI logs, ``| tee``) a bar
would be noise, so each finished attempt prints one line instead.
"""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from agent_benchmarks.records import PredictionRow


class RunProgress:
    def __init__(self, total: int, title: str, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.total = total
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.tokens = 0
        self.cost = 0.0
        self.cost_known = True
        self.interactive = self.console.is_terminal
        self._progress: Progress | None = None
        if self.interactive:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[spend]}"),
                console=self.console,
                transient=False,
            )
            self._task = self._progress.add_task(
                title, total=total, counts=self._counts_text(), spend=self._spend_text()
            )

    def __enter__(self) -> RunProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def note(self, message: str) -> None:
        self.console.print(message)

    def advance(self, row: PredictionRow) -> None:
        self.done += 1
        self.counts[row.status] += 1
        self.tokens += row.usage.total_tokens
        if row.usage.cost_usd is None:
            self.cost_known = self.cost_known and row.usage.total_tokens == 0
        else:
            self.cost += row.usage.cost_usd
        if self._progress is not None:
            self._progress.update(
                self._task, advance=1, counts=self._counts_text(), spend=self._spend_text()
            )
            return
        attempt = f" attempt {row.attempt}" if row.attempt > 1 else ""
        extra = f" ({row.error_class})" if row.error_class else ""
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
            f"{self._counts_text()}\n"
        )
        self.console.file.flush()

    def _counts_text(self) -> str:
        c = self.counts
        budget = f" · budget {c['budget']}" if c["budget"] else ""
        return (
            f"ok {c['ok']} · empty {c['empty']}{budget} · timeout {c['timeout']} · "
            f"error {c['error']}"
        )

    def _spend_text(self) -> str:
        cost = f"${self.cost:.2f}" if self.cost_known else f"≥${self.cost:.2f}"
        return f"{self.tokens:,} tok {cost}"
