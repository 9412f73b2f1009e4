"""A run as a person watches it, in a terminal 80 columns wide (a real pseudo-terminal with
its window size set, not COLUMNS): the run's header is the first thing it prints (no line
of the engine's above it: lightpanda's "config tips" used to land there), and every state
of the live progress line fits the 80 columns with done / total whole."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.support import REPO, check_time_limit, no_api_keys

pytestmark = pytest.mark.e2e

COLUMNS = 80
RUN_TIMEOUT_S = 120
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_in_terminal(args: list[str], columns: int, timeout: float) -> tuple[int, str]:
    """Run a console script with a pseudo-terminal of ``columns`` as its stdin, stdout and
    stderr; its exit status and all it wrote (a run's own timeouts bound it)."""
    check_time_limit(args[0], timeout)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update(no_api_keys(), TERM="xterm-256color")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / args[0]), *args[1:]],
        stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal's other end has closed it
                break
            if not chunk:
                break
            out += chunk
        else:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"{args[0]} still running after {timeout:g}s")
        return proc.wait(timeout=30), out.decode("utf-8", errors="replace")
    finally:
        os.close(master)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _screen_lines(text: str) -> list[str]:
    """What the terminal showed, line by line: the escape sequences dropped, and each
    redraw of the live line (after a carriage return) a line of its own."""
    return [line for line in re.split(r"[\r\n]", CSI.sub("", text)) if line.strip()]


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "command",
    [
        ["localweb-run"],  # the Lightpanda agent
        ["localweb-mcp-run", "--backend", "lightpanda"],  # Claude Code + lightpanda mcp
    ],
    ids=["native", "mcp-lightpanda"],
)
def test_a_run_at_80_columns_keeps_its_header_first_and_done_total_whole(
    tmp_path: Path, command: list[str]
) -> None:
    run_dir = tmp_path / "run"
    status, text = run_in_terminal(
        [*command, "--limit", "3", "--out-dir", str(run_dir)], COLUMNS, RUN_TIMEOUT_S
    )
    lines = _screen_lines(text)
    assert status == 0, "\n".join(lines[-40:])
    assert lines[0].startswith("localweb: 3 task(s) × 1"), lines[:5]
    progress = [line for line in lines if " ETA " in line]
    assert progress, lines
    too_wide = [line for line in progress if len(line) > COLUMNS]
    assert too_wide == []
    shown = [re.search(r"\b(\d+)/3\b", line) for line in progress]
    assert all(shown), progress
    done = [int(m.group(1)) for m in shown if m]
    assert done == sorted(done) and done[-1] == 3
    # After the first attempt, the ETA is a time (the observed rate), never "–".
    assert all(
        re.search(r"ETA \d+:\d\d", line) for line, n in zip(progress, done, strict=True) if n
    )
