"""What a run process loads: only what its command needs, when it needs it.

Each check runs a fresh interpreter and reads its ``sys.modules``: the suites' run modules
load no backend and no heavy library, ``--help`` loads no SDK, office reader or ``datasets``,
and reading a dataset table leaves ``datasets``, pandas and pyarrow in the child that read
it, not in the run process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Libraries a run process must not hold unless its work calls for them: the Hub loader and
# its table stack, the office readers behind attachments, the model SDKs, MCP, psutil.
HEAVY = frozenset(
    {
        "anthropic",
        "datasets",
        "docx",
        "google",
        "huggingface_hub",
        "mcp",
        "numpy",
        "openai",
        "openpyxl",
        "pandas",
        "pptx",
        "psutil",
        "pyarrow",
        "scipy",
        "tavily",
    }
)
SUITES = ("gaia", "assistantbench", "webbench", "localweb")


def loaded_after(code: str, env: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Run ``code`` in a fresh interpreter (``env`` added to the environment); the top-level
    packages and the ``agent_benchmarks`` modules it left loaded."""
    report = (
        "\nimport json, sys\n"
        "names = sorted(sys.modules)\n"
        "print(json.dumps({'top': sorted({n.split('.')[0] for n in names}), "
        "'ours': [n for n in names if n.startswith('agent_benchmarks')]}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code + report],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("suite", SUITES)
def test_a_suites_console_scripts_load_no_backend(suite: str) -> None:
    loaded = loaded_after(
        f"from agent_benchmarks.{suite}.run import native, mcp, chat\n"
        f"from agent_benchmarks.{suite}.grade import main"
    )
    backends = {m for m in loaded["ours"] if m.startswith("agent_benchmarks.backends.")}
    assert backends <= {"agent_benchmarks.backends.base"}, backends  # the interface alone
    assert not HEAVY & set(loaded["top"])


@pytest.mark.parametrize("command", ["native", "mcp", "chat"])
def test_help_loads_only_its_own_backend_and_no_heavy_library(command: str) -> None:
    loaded = loaded_after(
        f"from agent_benchmarks.webbench.run import {command}\n"
        "try:\n"
        f"    {command}(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    backends = {m for m in loaded["ours"] if m.startswith("agent_benchmarks.backends.")}
    own = {
        "native": "agent_benchmarks.backends.lightpanda",
        "mcp": "agent_benchmarks.backends.mcp_run",
        "chat": "agent_benchmarks.backends.agent_browser_chat",
    }[command]
    assert own in backends
    # What the backends share: Lightpanda's binary checks and trace, the MCP stream parser,
    # the browser MCP servers (and the cli backend's shell names), the stacks' routing
    # through a recorded web's proxy, the attachments' agent side (the interface's).
    assert backends - {own} <= {
        "agent_benchmarks.backends.base",
        "agent_benchmarks.backends.attachments",
        "agent_benchmarks.backends.mcp_servers",
        "agent_benchmarks.backends.mcp_options",
        "agent_benchmarks.backends.cli_shell",
        "agent_benchmarks.backends.lightpanda",
        "agent_benchmarks.backends.lightpanda_trace",
        "agent_benchmarks.backends.programs",
        "agent_benchmarks.backends.claude_stream",
        "agent_benchmarks.backends.web_routing",
    }, backends
    assert not HEAVY & set(loaded["top"]), HEAVY & set(loaded["top"])


def test_reading_a_table_leaves_datasets_in_the_child(tmp_path: Path) -> None:
    # An empty cache folder: the table is really read (a cached read starts no reader).
    cache = tmp_path / "cache"
    loaded = loaded_after(
        "from agent_benchmarks.spec.datasets import load_dataset_bundled\n"
        "from agent_benchmarks.webbench import DATASET\n"
        "tasks = load_dataset_bundled(DATASET, 'train').tasks\n"
        "assert len(tasks) == 1637 and tasks[0].web_name == 'acehardware.com', len(tasks)\n",
        env={"XDG_CACHE_HOME": str(cache)},
    )
    assert not {"datasets", "pandas", "pyarrow"} & set(loaded["top"])
    assert list((cache / "agent-benchmarks" / "tables").iterdir())  # read, then kept


def test_the_agent_browser_attempt_driver_loads_neither_engine_nor_pydantic() -> None:
    # Started once per attempt of an -ab-run: its start is the attempt's overhead.
    loaded = loaded_after("import agent_benchmarks.backends.agent_browser_chat_attempt")
    assert not {"pydantic", "rich"} & set(loaded["top"])
    assert "agent_benchmarks.runner.engine" not in loaded["ours"]
