"""The oracle's recovery (``OraclePolicy(recover=True)``, in runs with ``--fault``): a failed
step makes it look at the page (accepting a consent wall) and try again, a second failure
makes it open the page again and redo what followed, an answer not found is read again,
and all of it at most MAX_RECOVERIES times, decided from the conversation alone."""

from __future__ import annotations

from collections.abc import Callable

from agent_benchmarks.localweb.models import (
    Conversation,
    FinalAnswer,
    Message,
    ToolCallAction,
    ToolResult,
    ToolSpec,
    ToolUse,
)
from agent_benchmarks.localweb.oracle import (
    LIGHTPANDA,
    MAX_RECOVERIES,
    Answer,
    Click,
    Follow,
    Go,
    Oracle,
    OraclePolicy,
    Read,
    WaitFor,
    sign_in,
)

ROOT = "http://127.0.0.1:9/t/x.a1/"
TOOLS = ["goto", "markdown", "click", "waitForSelector", "html", "fill"]
WALL = "# Before you continue\nAccept and continue"

Reply = Callable[[int, str, dict], tuple[str, bool]]


def conversation(exchanges: list[tuple[str, dict, str, bool]], task: str = "task") -> Conversation:
    messages = [Message(role="user", text=task)]
    for n, (name, args, text, error) in enumerate(exchanges):
        messages.append(
            Message(role="assistant", tool_calls=[ToolUse(id=f"c{n}", name=name, args=args)])
        )
        result = ToolResult(id=f"c{n}", text=text, name=name, is_error=error)
        messages.append(Message(role="tool", tool_results=[result]))
    return Conversation(
        protocol="openai_chat",
        task_id="x",
        request_number=len(exchanges) + 1,
        model="m",
        messages=messages,
        tools=[ToolSpec(name=t) for t in TOOLS],
    )


def play(
    policy: OraclePolicy, reply: Reply, task: str = "task"
) -> tuple[list[tuple[str, dict]], str]:
    """Run the policy against a browser whose reply to the n-th call ``reply`` gives."""
    exchanges: list[tuple[str, dict, str, bool]] = []
    for n in range(60):
        action = policy.step(conversation(exchanges, task))
        if isinstance(action, FinalAnswer):
            return [(name, args) for name, args, _, _ in exchanges], action.text
        assert isinstance(action, ToolCallAction)
        call = action.calls[0]
        text, error = reply(n, call.name, call.args)
        exchanges.append((call.name, call.args, text, error))
        # a retried request gets the same decision again
        assert policy.step(conversation(exchanges[:-1], task)) == action
    raise AssertionError("the policy never answered")


ADD = Oracle(
    (Go("/products/a"), Click("#add"), WaitFor("#added"), Read("main")),
    Answer(r"Total: (\$\d+)"),
)


def page_reply(failing: dict[int, str]) -> Reply:
    """A browser that fails the calls numbered in ``failing`` (with that text) and answers
    every other call as the page would."""

    def reply(n: int, name: str, args: dict) -> tuple[str, bool]:
        if n in failing:
            return failing[n], True
        if name == "markdown":
            return "# Cart\nTotal: $12", False
        return "ok", False

    return reply


def test_without_recovery_a_failed_step_is_read_as_it_came() -> None:
    calls, answer = play(OraclePolicy(ADD, LIGHTPANDA, ROOT), page_reply({1: "click failed"}))
    assert [name for name, _ in calls] == ["goto", "click", "waitForSelector", "markdown"]
    assert answer == "$12"  # as before: a scaffold run without --fault is unchanged


def test_a_failed_step_is_tried_again_after_a_look_at_the_page() -> None:
    policy = OraclePolicy(ADD, LIGHTPANDA, ROOT, recover=True)
    calls, answer = play(policy, page_reply({1: "stale element"}))
    assert [name for name, _ in calls] == [
        "goto", "click", "markdown", "click", "waitForSelector", "markdown",
    ]  # fmt: skip
    assert answer == "$12"


def test_a_second_failure_opens_the_page_again_and_redoes_what_followed() -> None:
    policy = OraclePolicy(ADD, LIGHTPANDA, ROOT, recover=True)
    calls, answer = play(policy, page_reply({1: "gone", 3: "still gone"}))
    assert [name for name, _ in calls] == [
        "goto", "click", "markdown", "click",  # failed, looked, failed again
        "goto", "markdown", "click", "waitForSelector", "markdown",  # reopened, redone
    ]  # fmt: skip
    assert calls[4] == ("goto", {"url": ROOT + "products/a"})
    assert answer == "$12"


def test_a_consent_wall_is_accepted_before_the_step_is_tried_again() -> None:
    def reply(n: int, name: str, args: dict) -> tuple[str, bool]:
        if n == 2:  # the wait, on the wall
            return "NodeNotFound: the selector matched nothing on the current page.", False
        if n == 3:
            return WALL, False
        return ("# Cart\nTotal: $12" if name == "markdown" else "ok"), False

    calls, answer = play(OraclePolicy(ADD, LIGHTPANDA, ROOT, recover=True), reply)
    assert calls[2:6] == [
        ("waitForSelector", {"selector": "#added"}),
        ("markdown", {}),
        ("click", {"selector": "#accept-wall"}),
        ("waitForSelector", {"selector": "main"}),
    ]
    assert calls[6] == ("waitForSelector", {"selector": "#added"})
    assert answer == "$12"


def test_an_answer_not_found_is_read_again_and_looks_do_not_count_as_reads() -> None:
    pages = Oracle(
        (Go("/p1"), Read("main"), Follow(r"\[Next\]\(([^)]+)\)"), Read("main")),
        lambda reads: str(len(reads)) if "Glacier" in reads[-1] else None,
    )
    shown = {"n": 0}

    def reply(n: int, name: str, args: dict) -> tuple[str, bool]:
        if name == "markdown":
            shown["n"] += 1
            # the second page shows its product only from the fourth look on
            text = "[Next](/p2)" if shown["n"] == 1 else "Glacier" if shown["n"] > 3 else ""
            return text, False
        return "ok", False

    calls, answer = play(OraclePolicy(pages, LIGHTPANDA, ROOT, recover=True), reply)
    # not found: a look at the page, then the last read again, which finds it
    names = ["goto", "markdown", "goto", "markdown", "markdown", "markdown"]
    assert [name for name, _ in calls] == names
    assert answer == "2"  # two reads of the task's own, whatever was looked at meanwhile


def test_recovery_gives_up_after_its_limit() -> None:
    always = page_reply({n: "dead" for n in range(1, 60)})
    calls, answer = play(OraclePolicy(ADD, LIGHTPANDA, ROOT, recover=True), always)
    assert answer.startswith("stuck:")
    assert len(calls) < 20 and MAX_RECOVERIES == 3


def test_a_native_lightpanda_failure_is_read_from_its_text() -> None:
    failed = "NodeNotFound: the selector or backendNodeId matched nothing on the current page."
    assert LIGHTPANDA.failed(ToolResult(id="1", text=failed))
    assert LIGHTPANDA.failed(ToolResult(id="1", text="FrameNotLoaded: no page is loaded"))
    assert not LIGHTPANDA.failed(ToolResult(id="1", text="Warranty: 24 months"))
    assert not LIGHTPANDA.failed(ToolResult(id="1", text="Error messages page"))


TASK = "Sign in (username ada, password `s3cret-run-pw`) and read the total."


def test_credentials_are_read_from_the_task_and_a_sign_in_form_is_filled_in() -> None:
    # a site whose session ends after the first look at the orders: the task's own sign-in,
    # and a second one where the site asks again
    oracle = Oracle(
        (Go("/account/orders"), *sign_in(), WaitFor("#orders"), Read("main")),
        Answer(r"Total: (\$\d+)"),
    )
    site = {"signed_in": False, "waits": 0}

    def reply(n: int, name: str, args: dict) -> tuple[str, bool]:
        if name == "click" and args == {"selector": "#login-button"}:
            site["signed_in"] = True
        if name == "waitForSelector" and args == {"selector": "#orders"}:
            site["waits"] += 1
            if site["waits"] == 1:  # the session expires: the orders page is not shown
                site["signed_in"] = False
                return "NodeNotFound: the selector matched nothing.", False
        if name == "markdown" and not site["signed_in"]:
            return "# Sign in\nUsername\nPassword\nSign in", False
        return ("# Orders\nTotal: $37" if name == "markdown" else "ok"), False

    calls, answer = play(OraclePolicy(oracle, LIGHTPANDA, ROOT, recover=True), reply, TASK)
    fills = [args for name, args in calls if name == "fill"]
    assert (
        fills
        == [
            {"selector": "#username", "value": "ada"},
            {"selector": "#password", "value": "s3cret-run-pw"},
        ]
        * 2
    )
    assert [name for name, _ in calls[:6]] == [
        "goto", "markdown", "fill", "fill", "click", "waitForSelector",
    ]  # fmt: skip
    assert answer == "$37"
    # a look at the page when signed in already fills nothing in
    site.update(signed_in=True, waits=1)
    calls, _ = play(OraclePolicy(oracle, LIGHTPANDA, ROOT, recover=True), reply, TASK)
    assert [name for name, _ in calls] == ["goto", "markdown", "waitForSelector", "markdown"]
