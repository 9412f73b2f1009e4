"""The cli backend's shell tool: only the named program runs, with plain words, and every
command line (run or refused) is logged; refusals reach the row as refused calls."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from agent_benchmarks.backends.cli_shell import (
    EXECUTABLE_ENV,
    LOG_ENV,
    PROGRAM_ENV,
    Refused,
    Shell,
    Unfinished,
    program_words,
    read_refusals,
)
from agent_benchmarks.backends.mcp_servers import (
    CLI_LOG,
    SERVERS,
    find_server_programs,
)
from agent_benchmarks.common.errors import InputError


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("agent-browser open http://x/", ["open", "http://x/"]),
        # quoted shell syntax is a plain word: nothing interprets it
        ("agent-browser eval 'a && b; c | d > e'", ["eval", "a && b; c | d > e"]),
        ("agent-browser click '#terms'", ["click", "#terms"]),
        ("agent-browser eval $HOME", ["eval", "$HOME"]),
    ],
)
def test_the_program_runs_with_plain_words(command: str, words: list[str]) -> None:
    assert program_words(command, "agent-browser") == words


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("curl http://127.0.0.1/", "only agent-browser runs here, not curl"),
        ("/usr/bin/agent-browser open x", "only agent-browser runs here"),
        ("agent-browser open x; cat /etc/passwd", "shell syntax is not run here (;)"),
        ("agent-browser open x && curl y", "shell syntax is not run here (&&)"),
        ("agent-browser snapshot | head", "shell syntax is not run here (|)"),
        ("agent-browser snapshot > out.txt", "shell syntax is not run here (>)"),
        ("agent-browser eval $(cat /etc/passwd)", "shell syntax is not run here"),
        ("agent-browser 'unterminated", "cannot be split into words"),
        ("   ", "the command line is empty"),
    ],
)
def test_anything_else_is_refused_with_why(command: str, why: str) -> None:
    with pytest.raises(Refused, match=re.escape(why)):
        program_words(command, "agent-browser")


def test_the_shell_runs_the_program_and_logs_every_line(tmp_path: Path) -> None:
    log = tmp_path / "shell.jsonl"
    shell = Shell("echo", shutil.which("echo") or "/bin/echo", log, timeout_s=10)
    assert shell.run("echo hello 'two words'") == "hello two words"
    with pytest.raises(Refused, match="only echo runs here, not ls"):
        shell.run("ls /")
    false = Shell("false", shutil.which("false") or "/bin/false", log, timeout_s=10)
    assert false.run("false") == "(exit status 1)"
    assert read_refusals(log) == [{"command": "ls /", "why": "only echo runs here, not ls"}]
    lines = log.read_text().splitlines()
    assert len(lines) == 3 and '"exit": 0' in lines[0] and '"exit": 1' in lines[2]
    assert read_refusals(tmp_path / "absent.jsonl") == []


def test_a_slow_command_is_cut_and_logged(tmp_path: Path) -> None:
    log = tmp_path / "shell.jsonl"
    shell = Shell("sleep", shutil.which("sleep") or "/bin/sleep", log, timeout_s=0.2)
    with pytest.raises(Unfinished, match=r"did not finish in 0\.2 s"):
        shell.run("sleep 5")
    assert '"timeout": true' in log.read_text()
    assert read_refusals(log) == []  # it ran: a failed call, not a refused one


async def _over_mcp(env: dict[str, str], commands: list[str]) -> tuple[list[str], list[bool]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent_benchmarks.backends.cli_shell"],
        env=env,
    )
    texts, errors = [], []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == ["shell"]
        for command in commands:
            reply = await session.call_tool("shell", {"command": command})
            texts.append(reply.content[0].text)
            errors.append(bool(reply.is_error))
    return texts, errors


def test_the_server_refuses_over_mcp_and_the_backend_reads_the_refusals(tmp_path: Path) -> None:
    env = {
        **os.environ,
        PROGRAM_ENV: "echo",
        EXECUTABLE_ENV: shutil.which("echo") or "/bin/echo",
        LOG_ENV: str(tmp_path / CLI_LOG),
    }
    texts, errors = anyio.run(_over_mcp, env, ["echo hi", "cat /etc/passwd"])
    assert texts[0] == "hi" and not errors[0]
    assert errors[1] and "refused: only echo runs here, not cat" in texts[1]
    assert "root:" not in texts[1]
    assert SERVERS["cli"].refusals(tmp_path) == [
        {
            "name": "mcp__browser__shell",
            "args": {"command": "cat /etc/passwd"},
            "why": "only echo runs here, not cat",
        }
    ]
    assert SERVERS["playwright"].refusals(tmp_path) == []


def test_the_cli_backend_and_its_flag_go_together() -> None:
    with pytest.raises(InputError, match="--backend cli needs --cli PROGRAM"):
        find_server_programs(SERVERS["cli"])
    with pytest.raises(InputError, match="--cli PROGRAM goes with --backend cli"):
        find_server_programs(SERVERS["lightpanda"], cli="agent-browser")
    with pytest.raises(InputError, match="--cli no-such-cli: no such program on PATH"):
        find_server_programs(SERVERS["cli"], cli="no-such-cli")
    with pytest.raises(InputError, match="--mcp-server: --backend lightpanda does not start"):
        find_server_programs(SERVERS["lightpanda"], mcp_server=Path("/bin/true"))
    echo = find_server_programs(SERVERS["cli"], cli=shutil.which("echo"))
    assert echo.cli == "echo" and echo.server_program == shutil.which("echo")
