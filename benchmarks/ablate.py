"""Run one of our console scripts with some of its per-attempt guarantees patched out, to
measure what they cost (an ablation for benchmarks/run_process.py; never a mode of the
harness, and its runs are no results).

    python benchmarks/ablate.py fsync,sweep,scrub /path/to/.venv/bin/webbench-run ARGS...

* ``fsync``: rows are written and flushed but not fsynced.
* ``sweep``: after an attempt only its process group is killed; no process of it is
  looked for elsewhere (by cgroup membership, marker or temp folder).
* ``scrub``: the attempt folder's files are not redacted.
"""

from __future__ import annotations

import runpy
import signal
import sys

from agent_benchmarks.isolation import process
from agent_benchmarks.records import storage
from agent_benchmarks.runner import engine

GUARANTEES = ("fsync", "sweep", "scrub")


def _append_without_fsync(self: storage.PredictionsWriter, row) -> None:
    self._fh.write(row.model_dump_json().encode("utf-8") + b"\n")
    self._fh.flush()


def _kill_group_only(marker: str, tmpdir: str, leader: int, cgroup) -> int:
    process._signal_group(leader, signal.SIGKILL)
    return 0


def _replace(owner: object, name: str, replacement: object) -> None:
    """Put ``replacement`` in place of ``owner.name``, which must exist: assigning a name the
    code no longer has would add an attribute nothing calls and ablate nothing."""
    if not hasattr(owner, name):
        sys.exit(f"ablate.py: {getattr(owner, '__name__', owner)}.{name} no longer exists")
    setattr(owner, name, replacement)


def patch(dropped: set[str]) -> None:
    if "fsync" in dropped:
        _replace(storage.PredictionsWriter, "append", _append_without_fsync)
    if "sweep" in dropped:
        _replace(process, "_kill_leftovers", _kill_group_only)
    if "scrub" in dropped:
        _replace(engine, "scrub_secrets", lambda folder: None)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit("usage: ablate.py GUARANTEES SCRIPT [ARGS...] (GUARANTEES: fsync,sweep,scrub)")
    dropped = {part for part in sys.argv[1].split(",") if part}
    unknown = dropped - set(GUARANTEES)
    if unknown:
        sys.exit(f"ablate.py: unknown {sorted(unknown)}; choose from {', '.join(GUARANTEES)}")
    script = sys.argv[2]
    patch(dropped)
    sys.argv = [script, *sys.argv[3:]]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
