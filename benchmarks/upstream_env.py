"""Upstream's harness (lightpanda-io/agent-benchmarks) installed in a throwaway environment,
so benchmarks/ can run its console scripts beside ours.

    uv run python benchmarks/upstream_env.py [--upstream SRC] [--upstream-ref REF]
                                             [--upstream-cache DIR]

SRC is a git URL (default: upstream's public repository) or a local clone; REF a branch,
tag or commit (default: SRC's HEAD). The commit is cloned into
``DIR/<sha>/`` (default ``~/.cache/agent-benchmarks/upstream/``) and ``uv sync --frozen``
installs its locked dependencies there with the Python running this script (upstream's
``.python-version`` names one that may not be installed). A finished install is reused.
Run alone, it prints the commit and where its console scripts are.

Offline, clone from a mirror: ``--upstream /path/to/agent-benchmarks.git``; ``uv sync``
then needs upstream's locked wheels in uv's cache.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SOURCE = "https://github.com/lightpanda-io/agent-benchmarks"
DEFAULT_CACHE = Path.home() / ".cache" / "agent-benchmarks" / "upstream"
# Written last: a folder without it is an interrupted install, redone from scratch.
INSTALLED_MARK = ".agent-benchmarks-installed"


class UpstreamUnavailable(Exception):
    """Upstream could not be cloned or installed; the message says which step and why."""


@dataclass(frozen=True)
class Upstream:
    source: str
    commit: str
    root: Path

    @property
    def bin_dir(self) -> Path:
        return self.root / ".venv" / "bin"

    def script(self, name: str) -> Path:
        path = self.bin_dir / name
        if not path.exists():
            raise UpstreamUnavailable(f"upstream {self.commit[:12]} has no console script {name}")
        return path

    def describe(self) -> str:
        return f"upstream {self.commit[:12]} installed from {self.source}"

    def compile_bytecode(self) -> None:
        """Bytecode caches for its source and its environment, as a first run leaves them
        wherever Python may write them (see :func:`measuring.compile_bytecode`). Its source
        must compile; a file of its environment that does not (a package's template or
        fixture for another Python) is never imported, so it is passed over, as
        ``uv sync --compile-bytecode`` does."""
        compileall = [str(self.bin_dir / "python"), "-m", "compileall", "-q", "-j", "0"]
        _run([*compileall, str(self.root / "src")], "compileall")
        subprocess.run(
            [*compileall, str(self.root / ".venv" / "lib")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )


def uv_binary() -> str:
    """The real uv executable. ``shutil.which('uv')`` may find pyenv's shim, which fails in
    upstream's folder (its .python-version names a Python the shim cannot find); ``uv run``
    puts its own path in $UV, and pip-installed uv sits beside the interpreter."""
    candidates = [
        os.environ.get("UV"),
        str(Path(sys.executable).parent / "uv"),
        str(Path(sys.base_prefix) / "bin" / "uv"),
    ]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("uv")
    if found and "/shims/" not in found:
        return found
    raise UpstreamUnavailable(
        "no uv executable found (tried $UV, beside this Python, and PATH without pyenv shims)"
    )


def _run(argv: list[str], what: str, cwd: Path | None = None) -> str:
    # No credential prompt: a private or mistyped URL fails at once instead of waiting.
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env)
    if proc.returncode != 0:
        raise UpstreamUnavailable(
            f"{what} failed (exit {proc.returncode}): {' '.join(argv)}\n{proc.stderr.strip()}"
        )
    return proc.stdout


def resolve_commit(source: str, ref: str | None) -> str:
    if ref and len(ref) == 40 and all(c in "0123456789abcdef" for c in ref.lower()):
        return ref.lower()
    out = _run(["git", "ls-remote", source, ref or "HEAD"], f"looking up {ref or 'HEAD'}")
    lines = [line.split() for line in out.splitlines() if line.strip()]
    if not lines:
        raise UpstreamUnavailable(f"{source} has no ref {ref or 'HEAD'}")
    # A tag may be listed twice (the tag object, then the commit as ^{}): take the commit.
    peeled = [sha for sha, name in lines if name.endswith("^{}")]
    return (peeled or [lines[0][0]])[0]


def checkout(source: str, ref: str | None = None, cache: Path = DEFAULT_CACHE) -> Upstream:
    """Upstream's source at ref, cloned into the cache (or the clone already there), without
    installing its Python environment (what benchmarks/engine_upstream.py needs: upstream's
    engine benchmark harness is plain Python)."""
    if Path(source).exists():
        source = str(Path(source).resolve())
    commit = resolve_commit(source, ref)
    root = cache / commit
    if (root / ".git").exists():
        return Upstream(source, commit, root)
    if root.exists():
        shutil.rmtree(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    print(f"cloning upstream {commit[:12]} from {source} into {root} …", file=sys.stderr)
    _run(["git", "clone", "--quiet", "--no-checkout", source, str(root)], "git clone")
    _run(["git", "-C", str(root), "checkout", "--quiet", "--detach", commit], "git checkout")
    return Upstream(source, commit, root)


def install(source: str, ref: str | None = None, cache: Path = DEFAULT_CACHE) -> Upstream:
    """Clone upstream at ref and install it, or reuse a finished install of that commit."""
    if Path(source).exists():
        source = str(Path(source).resolve())
    commit = resolve_commit(source, ref)
    root = cache / commit
    if (root / INSTALLED_MARK).exists():
        return Upstream(source, commit, root)
    if root.exists():
        shutil.rmtree(root)
    print(f"installing upstream {commit[:12]} from {source} into {root} …", file=sys.stderr)
    checkout(source, commit, cache)
    # The interpreter itself, not this venv's python: uv builds upstream's own venv on it.
    python = getattr(sys, "_base_executable", None) or sys.executable
    env_argv = [uv_binary(), "sync", "--frozen", "--python", python]
    _run(env_argv, "uv sync", cwd=root)
    (root / INSTALLED_MARK).write_text(commit + "\n", encoding="utf-8")
    return Upstream(source, commit, root)


def add_upstream_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("upstream")
    group.add_argument(
        "--upstream",
        default=DEFAULT_SOURCE,
        metavar="SRC",
        help=f"upstream's git URL or a local clone (default {DEFAULT_SOURCE})",
    )
    group.add_argument("--upstream-ref", metavar="REF", help="branch, tag or commit (default HEAD)")
    group.add_argument(
        "--upstream-cache",
        type=Path,
        default=DEFAULT_CACHE,
        metavar="DIR",
        help=f"where installs are kept (default {DEFAULT_CACHE})",
    )


def install_from_args(args: argparse.Namespace) -> Upstream:
    return install(args.upstream, args.upstream_ref, args.upstream_cache)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_upstream_args(parser)
    args = parser.parse_args()
    try:
        upstream = install_from_args(args)
    except UpstreamUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"commit {upstream.commit}")
    print(f"console scripts in {upstream.bin_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
