"""A suite's side of an attempt: how a task becomes a prompt, and a reply a prediction.

:class:`TaskSession` serves the dataset suites: the suite's prompt (or the user's
``--system-prompt-file``), GAIA attachments prepared for the agent, answer-source blocking,
and the ``<ANSWER>`` envelope. A suite with run-scoped services (localweb starts its site
and scripted model) subclasses it and overrides :meth:`TaskSession.prepare` and
:meth:`TaskSession.finish`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_benchmarks.backends.base import AgentOutcome, Backend, PreparedTask
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import Fetched, Mode, Task
from agent_benchmarks.runner.plan import AttemptKey
from agent_benchmarks.spec.answers import extract_answer, extract_plain_answer
from agent_benchmarks.spec.prompts import STANDARD, SuitePrompt, prompt_variant
from agent_benchmarks.spec.run_spec import RunSpec
from agent_benchmarks.spec.suites import SuiteDef, load_ref

# (suite, spec, mode, scripted model, backend) -> a context manager yielding the run's
# session; a suite with run-scoped services (localweb) starts them in it.
SessionFactory = Callable[
    [SuiteDef, RunSpec, Mode, "str | None", Backend], AbstractContextManager["TaskSession"]
]


class TaskSession:
    def __init__(
        self,
        suite: SuiteDef,
        mode: Mode,
        system_prompt: str | None = None,
        block_answer_sources: bool = False,
        prompt_name: str = STANDARD,
    ):
        assert suite.prompt is not None, f"suite {suite.name} declares no prompt"
        self.suite = suite
        # --prompt NAME: a variant of the suite's prompt (ValueError for one it lacks).
        self.prompt_name = prompt_name
        self.prompt = prompt_variant(suite.prompt, prompt_name)
        self.mode: Mode = mode
        self.system_prompt_file = system_prompt is not None
        self.system_prompt = system_prompt if system_prompt is not None else self.prompt.system
        self.block_answer_sources = block_answer_sources

    def settings(self) -> dict[str, Any]:
        """The prompt and blocking facts a manifest records."""
        return {
            # The variant named by --prompt (or the runner's default); its text is below,
            # unless --system-prompt-file replaced the text (then the variant still sets the
            # task's closing line and how the answer is read).
            "prompt": self.prompt_name,
            "system_prompt_source": "file" if self.system_prompt_file else "variant",
            "system_prompt": self.system_prompt,
            "system_prompt_sha256": hashlib.sha256(self.system_prompt.encode()).hexdigest(),
            "answer_format": self.prompt.answer,
            "block_answer_sources": (
                {"patterns": list(self.suite.answer_sources), "plus": "*<task id>*"}
                if self.block_answer_sources
                else None
            ),
        }

    def block_urls(self, task: Task) -> tuple[str, ...]:
        if not self.block_answer_sources:
            return ()
        return (*self.suite.answer_sources, f"*{task.id}*")

    def prepare(self, task: Task, key: AttemptKey, workdir: Path) -> PreparedTask:
        details: dict[str, Any] = {}
        attachments: list[Path] = []
        if task.attachment_path is not None and self.suite.attachments is not None:
            plan = load_ref(self.suite.attachments)(task.attachment_path, workdir)
            details["attachments"] = [plan.model_dump(exclude_none=True)]
            if plan.attached_path is not None:
                attachments.append(Path(plan.attached_path))
        elif task.attachment_path is not None:
            details["attachments"] = [
                {
                    "original": task.attachment_path.name,
                    "action": "skipped",
                    "note": f"the {self.suite.name} suite prepares no attachments",
                }
            ]
        elif task.file_name:
            details["attachments"] = [
                {"original": task.file_name, "action": "skipped", "note": "file not found"}
            ]
        task_input = task.to_input()
        return PreparedTask(
            task=task_input,
            attempt=key.attempt,
            text=self.prompt.task_text(task_input),
            system_prompt=self.system_prompt,
            attachments=tuple(attachments),
            block_urls=self.block_urls(task),
            workdir=workdir,
            details=details,
        )

    def fetched(self, prepared: PreparedTask) -> Fetched | None:
        """What the attempt's browser fetched, where the suite's own services saw it (a
        site's request log); None where they did not (the dataset suites: the live web)."""
        return None

    def finish(self, prepared: PreparedTask, outcome: AgentOutcome) -> tuple[str, dict[str, Any]]:
        """The prediction, and what the row should say about how it was read."""
        if self.prompt.answer == "raw":
            return outcome.output, {}
        read = extract_answer if self.prompt.answer == "envelope" else extract_plain_answer
        extracted = read(outcome.output)
        return extracted.answer, {
            "answer_envelope": extracted.envelope,
            "n_envelopes": extracted.n_envelopes,
        }


@contextmanager
def dataset_session(
    suite: SuiteDef, spec: RunSpec, mode: Mode, scripted_model: str | None, backend: Backend
) -> Iterator[TaskSession]:
    """The dataset suites' session: the suite's prompt (the spec's variant of it, or the
    user's system prompt file), answer-source blocking as the spec says."""
    yield TaskSession(
        suite,
        mode,
        system_prompt=read_system_prompt(spec.system_prompt_file),
        block_answer_sources=bool(spec.block_answer_sources),
        prompt_name=spec.prompt or STANDARD,
    )


def prompted_session(prompt_for: Callable[[SuiteDef], SuitePrompt]) -> SessionFactory:
    """The dataset session with a runner's own prompt under ``--prompt standard``
    (:attr:`~agent_benchmarks.backends.base.BackendDef.dataset_prompt`); a named variant
    stays the suite's."""

    @contextmanager
    def session(
        suite: SuiteDef, spec: RunSpec, mode: Mode, scripted_model: str | None, backend: Backend
    ) -> Iterator[TaskSession]:
        if spec.prompt == STANDARD:
            suite = replace(suite, prompt=prompt_for(suite))
        with dataset_session(suite, spec, mode, scripted_model, backend) as opened:
            yield opened

    return session


def read_system_prompt(path: str | None) -> str | None:
    """The text of ``--system-prompt-file``; None without one."""
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--system-prompt-file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"--system-prompt-file {path}: not UTF-8 text") from None
    if not text.strip():
        raise InputError(f"--system-prompt-file {path}: the file is empty")
    return text
