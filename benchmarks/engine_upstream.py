"""Our engine benchmark beside upstream's own harness, on upstream's ``login_fx`` task: the
same configurations, the same binaries, one after the other on this machine.

    uv run python benchmarks/engine_upstream.py [--runs 20] [--warmup 2] [--pace 1]
        [--rounds 2] [--upstream SRC] [--upstream-ref REF] [--out DIR] [--record FILE]

Upstream's side is its ``pandascript-vs-cdp/harness/bench.py`` as its README runs it: a
clone of upstream (benchmarks/upstream_env.py's, no Python environment: the harness is
plain Python, run here with this environment's Python, whose Playwright its playwright-py
legs import), ``npm ci`` in its folder (its pinned puppeteer-core and playwright-core),
``LPD_PATH`` the lightpanda binary our ``lightpanda`` package ships, ``CHROME_PATH`` a
two-line wrapper running Debian's Chromium with ``--no-sandbox`` (Chromium refuses its
sandbox as root), its local login fixture on its fixed port 9280. It runs ``--task login_fx``
cold then warm. Our side is ``agent-benchmarks engine run --tasks login`` (the same steps on
the site's account area) with both modes interleaved. The measured rotations are split into
``--rounds``, each running both harnesses, in turn first (A B, B A, ...), so that the
machine's drift over the session weighs on both alike; each side's medians pool its rounds.

Absolute times differ by design (another site, other driver releases, our measurement of
each execution's cgroup), so the comparison is of ratios: each configuration's median over
the PandaScript replay's median in the same harness and mode, and how far ours is from
upstream's (ours ÷ upstream). Configurations only one side has are left out: upstream's
``lightpanda-py`` and ``pandascript-fresh``, our MCP stacks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from upstream_env import UpstreamUnavailable, add_upstream_args, checkout

REPO = Path(__file__).resolve().parents[1]
# upstream's configuration name -> ours
SHARED = {
    "pandascript": "pandascript/lightpanda",
    "puppeteer-lightpanda": "puppeteer/lightpanda",
    "puppeteer-chrome": "puppeteer/chromium",
    "playwright-lightpanda": "playwright/lightpanda",
    "playwright-chrome": "playwright/chromium",
    "playwright-py-lightpanda": "playwright-py/lightpanda",
    "playwright-py-chrome": "playwright-py/chromium",
}
REFERENCE = "pandascript"
MODES = ("cold", "warm")


def _lightpanda() -> str:
    sys.path.insert(0, str(REPO / "src"))
    from agent_benchmarks.backends.lightpanda import bundled_binary

    return str(bundled_binary())


def _npm_ci(folder: Path) -> None:
    stamp = folder / "node_modules" / ".engine-upstream-lock"
    lock = (folder / "package-lock.json").read_bytes()
    if stamp.exists() and stamp.read_bytes() == lock:
        return
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=folder, check=True)
    stamp.write_bytes(lock)


def run_upstream(
    folder: Path, out: Path, runs: int, args: argparse.Namespace, scratch: Path
) -> list[Path]:
    chrome = scratch / "chrome"
    chrome.write_text('#!/bin/sh\nexec /usr/bin/chromium --no-sandbox "$@"\n')
    chrome.chmod(0o755)
    env = {
        **os.environ,
        "LPD_PATH": _lightpanda(),
        "CHROME_PATH": str(chrome),
        "BENCH_SCRATCH": str(scratch),
    }
    raws = []
    for mode in MODES:
        subprocess.run(
            [
                sys.executable, "harness/bench.py", "--task", "login_fx", "--mode", mode,
                "--runs", str(runs), "--warmup", str(args.warmup),
                "--pace", str(args.pace), "--configs", ",".join(SHARED),
                "--out", str(out / mode),
            ],
            cwd=folder, env=env, check=True,
        )  # fmt: skip
        raws.append(out / mode / "raw.jsonl")
    return raws


def run_ours(out: Path, runs: int, args: argparse.Namespace) -> list[Path]:
    subprocess.run(
        [
            sys.executable, "-m", "agent_benchmarks", "engine", "run", "--tasks", "login",
            "--configs", ",".join(SHARED.values()), "--runs", str(runs),
            "--warmup", str(args.warmup), "--pace", str(args.pace), "--out-dir", str(out),
        ],
        cwd=REPO, check=True,
    )  # fmt: skip
    return [out / "raw.jsonl"]


def _pooled(raws: list[Path], key: str) -> dict[tuple[str, str], float]:
    """Median ms of the valid measured executions of all ``raws``, by (config, mode)."""
    times: dict[tuple[str, str], list[float]] = {}
    for raw in raws:
        for line in raw.read_text().splitlines():
            record = json.loads(line)
            if record.get("kind", "execution") != "execution" or record.get("warmup"):
                continue
            if record.get("ok") and record.get("ms") is not None:
                times.setdefault((record[key], record["mode"]), []).append(record["ms"])
    return {k: statistics.median(v) for k, v in times.items()}


def table(upstream: dict, ours: dict) -> list[dict]:
    rows = []
    for mode in MODES:
        up_ref, our_ref = upstream.get((REFERENCE, mode)), ours.get((SHARED[REFERENCE], mode))
        for theirs, mine in SHARED.items():
            up, me = upstream.get((theirs, mode)), ours.get((mine, mode))
            up_ratio = up / up_ref if up and up_ref else None
            our_ratio = me / our_ref if me and our_ref else None
            rows.append(
                {
                    "mode": mode,
                    "configuration": mine,
                    "upstream_ms": up,
                    "ours_ms": me,
                    "upstream_x_pandascript": up_ratio,
                    "ours_x_pandascript": our_ratio,
                    "ours_over_upstream": our_ratio / up_ratio if up_ratio and our_ratio else None,
                }
            )
    return rows


def _fmt(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def print_table(rows: list[dict]) -> None:
    head = ("mode", "configuration", "upstream ms", "ours ms", "upstream ×PS", "ours ×PS",
            "ours ÷ upstream")  # fmt: skip
    print(" | ".join(head))
    for row in rows:
        print(
            " | ".join(
                [
                    row["mode"],
                    row["configuration"],
                    _fmt(row["upstream_ms"], 0),
                    _fmt(row["ours_ms"], 0),
                    _fmt(row["upstream_x_pandascript"], 2),
                    _fmt(row["ours_x_pandascript"], 2),
                    _fmt(row["ours_over_upstream"], 2),
                ]
            )
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="measured rotations (20)")
    parser.add_argument("--warmup", type=int, default=2, help="warm-up rotations (2)")
    parser.add_argument("--pace", type=float, default=1.0, help="seconds between executions")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, each side in turn first")
    parser.add_argument("--out", type=Path, help="keep both sides' raw files here")
    parser.add_argument("--record", type=Path, help="write the table as JSON here")
    add_upstream_args(parser)
    args = parser.parse_args()
    try:
        upstream = checkout(args.upstream, args.upstream_ref, args.upstream_cache)
    except UpstreamUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    folder = upstream.root / "pandascript-vs-cdp"
    _npm_ci(folder)
    out = args.out or Path(tempfile.mkdtemp(prefix="engine-upstream-"))
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="engine-upstream-scratch-"))
    runs = -(-args.runs // args.rounds)  # per round, rounded up
    upstream_raws: list[Path] = []
    ours_raws: list[Path] = []
    try:
        for n in range(args.rounds):
            for side in ("upstream", "ours") if n % 2 == 0 else ("ours", "upstream"):
                if side == "upstream":
                    upstream_raws += run_upstream(
                        folder, out / f"upstream-{n}", runs, args, scratch
                    )
                else:
                    ours_raws += run_ours(out / f"ours-{n}", runs, args)
        rows = table(_pooled(upstream_raws, "config"), _pooled(ours_raws, "config"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)
    print(f"\nupstream {upstream.commit[:12]} (login_fx) beside ours (login); ×PS: over the "
          "PandaScript replay's median, same harness and mode")  # fmt: skip
    print_table(rows)
    if args.record:
        recorded = {
            "upstream_commit": upstream.commit,
            "args": sys.argv[1:],
            "runs_per_round": runs,
            "rows": rows,
        }
        args.record.write_text(json.dumps(recorded, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
