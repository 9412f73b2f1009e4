"""The ``shell`` MCP server (stdio) of the ``cli`` backend: one tool that runs command lines
of one named program (a browser CLI such as agent-browser), and nothing else.

Run by the harness as ``python -m agent_benchmarks.backends.cli_shell``, the agent's only
browser tool. Its environment says everything: the program's name as the agent types it
(:data:`PROGRAM_ENV`), the executable that runs (:data:`EXECUTABLE_ENV`), the log of every
command (:data:`LOG_ENV`) and the time one command may take (:data:`TIMEOUT_ENV`).

No shell runs: the command line is split into words the POSIX way and the program is run
with them directly. A line whose first word is not the program, or that uses shell syntax
(``;``, ``&&``, ``|``, redirections, subshells), is refused: the agent reads why, as a tool
error, and the log records the refusal, which the backend reports in the row's
``refused_calls`` like a tool the lockdown refused.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

PROGRAM_ENV = "CLI_SHELL_PROGRAM"
EXECUTABLE_ENV = "CLI_SHELL_EXECUTABLE"
LOG_ENV = "CLI_SHELL_LOG"
TIMEOUT_ENV = "CLI_SHELL_TIMEOUT_S"
TOOL_NAME = "shell"
DEFAULT_TIMEOUT_S = 110.0  # under Claude Code's MCP tool timeout (120 s by default)
# What shlex's punctuation mode splits out as words of their own: shell operators.
_OPERATOR_CHARS = set("();<>|&")


class Refused(Exception):
    """The command line is not one the tool runs; the message says why."""


class Unfinished(Exception):
    """The program ran but did not finish in time (a failure of the call, not a refusal)."""


def program_words(command: str, program: str) -> list[str]:
    """The arguments of ``command`` after ``program``; :class:`Refused` when the line is
    not ``program`` run with plain words."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError as exc:
        raise Refused(f"the command line cannot be split into words ({exc})") from None
    if not words:
        raise Refused("the command line is empty")
    operators = [w for w in words if set(w) <= _OPERATOR_CHARS]
    if operators:
        raise Refused(
            f"shell syntax is not run here ({' '.join(operators)}): no shell runs, one "
            f"{program} command per call"
        )
    if words[0] != program:
        raise Refused(f"only {program} runs here, not {words[0]}")
    return words[1:]


class Shell:
    """Runs the program's command lines, logging each one (refused or run)."""

    def __init__(self, program: str, executable: str, log: Path | None, timeout_s: float):
        self.program = program
        self.executable = executable
        self.log = log
        self.timeout_s = timeout_s

    def run(self, command: str) -> str:
        started = time.monotonic()
        entry: dict[str, object] = {"command": command}
        try:
            args = program_words(command, self.program)
        except Refused as refused:
            self._write(entry | {"refused": str(refused)})
            raise
        try:
            done = subprocess.run(
                [self.executable, *args],
                capture_output=True,
                text=True,
                errors="replace",
                stdin=subprocess.DEVNULL,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            self._write(entry | {"timeout": True, "seconds": self._since(started)})
            raise Unfinished(f"{self.program} did not finish in {self.timeout_s:g} s") from None
        self._write(entry | {"exit": done.returncode, "seconds": self._since(started)})
        output = done.stdout + (done.stderr if done.stderr.strip() else "")
        if done.returncode != 0:
            output += f"\n(exit status {done.returncode})"
        return output.strip() or "(no output)"

    @staticmethod
    def _since(started: float) -> float:
        return round(time.monotonic() - started, 3)

    def _write(self, entry: dict[str, object]) -> None:
        if self.log is not None:
            with self.log.open("a", encoding="utf-8") as out:
                out.write(json.dumps(entry) + "\n")


def read_refusals(log: Path) -> list[dict[str, str]]:
    """The refused command lines of a shell log, each with why, in order."""
    if not log.is_file():
        return []
    refusals = []
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("refused"):
            refusals.append({"command": entry["command"], "why": entry["refused"]})
    return refusals


def build_server(shell: Shell) -> MCPServer:
    # The MCP SDK only where the server runs: the backend reads this module's names too.
    import anyio
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(
        "agent-benchmarks-cli-shell",
        instructions=f"Runs {shell.program} command lines; nothing else.",
        log_level="WARNING",
    )

    async def run_command(command: str) -> str:
        try:
            return await anyio.to_thread.run_sync(shell.run, command)
        except Refused as refused:
            raise ToolError(f"refused: {refused}") from None
        except Unfinished as unfinished:
            raise ToolError(str(unfinished)) from None

    description = (
        f"Run one {shell.program} command line (`command`, starting with the program's name, "
        f"such as `{shell.program} --help`) and return what it prints. Only {shell.program} "
        "runs: no other program and no shell (pipes, redirections, `;` and `&&` are refused)."
    )
    server.add_tool(run_command, name=TOOL_NAME, description=description, structured_output=False)
    return server


def from_environment(environ: dict[str, str] | os._Environ[str]) -> Shell:
    log = environ.get(LOG_ENV)
    return Shell(
        program=environ[PROGRAM_ENV],
        executable=environ[EXECUTABLE_ENV],
        log=Path(log) if log else None,
        timeout_s=float(environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT_S),
    )


def main() -> None:
    build_server(from_environment(os.environ)).run("stdio")


if __name__ == "__main__":
    main()
