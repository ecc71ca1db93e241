"""``loopkit doctor`` and ``loopkit send-test``: is this workspace ready to block well?

Each finding names one thing and, when it is a problem, how to fix it. Doctor never
changes anything and never sends a message; send-test sends exactly one. Doctor finds what
``run`` would trip on, early: what ``run`` refuses to start on (:mod:`readiness`: the same
words, and the same exit, 78), and what would fail later — a program that may run after
``&&``, ``||``, ``;`` or ``|`` and is not there, a command ``/bin/sh`` cannot read, the
task file, ``required_env``, the template, the agents' hooks (one that cannot start, or is
wrapped so that its deny is lost).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Literal

from loopkit import channels, clock
from loopkit.channels.slack_web import SlackCallError, SlackWeb
from loopkit.channels.telegram_api import BotApi, BotApiError
from loopkit.config import load
from loopkit.config.mayrun import may_be_missing, syntax_error
from loopkit.config.programs import missing_program, named_commands
from loopkit.datarecord import record
from loopkit.errors import (
    EXIT_CONFIG,
    EXIT_FAILURE,
    EXIT_OK,
    ChannelError,
    ConfigError,
    WorkspaceError,
)
from loopkit.escalation import blockfile
from loopkit.escalation.blockfile import Choice
from loopkit.escalation.escalator import answer_hint
from loopkit.fleet import schema
from loopkit.hooks import health
from loopkit.message import Message
from loopkit.setup import readiness
from loopkit.setup.kit import agent_problems
from loopkit.supervisor import stuck_counters
from loopkit.supervisor.childpath import child_environment
from loopkit.workspace import Workspace
from loopkit.workspace.state import StateFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from loopkit.channels import Outcome
    from loopkit.config import Config

Level = Literal["ok", "note", "problem"]


@record(frozen=True, slots=True)
class Finding:
    level: Level
    topic: str
    text: str
    stops_run: bool = False  # `loopkit run` refuses to start on it (exit 78)

    def line(self) -> str:
        return f"{self.level:<7} {self.topic}: {self.text}"


def exit_code(findings: list[Finding]) -> int:
    """78 when ``run`` would refuse to start (as ``run`` exits), 1 for any other problem,
    else 0."""
    if any(f.stops_run for f in findings):
        return EXIT_CONFIG
    return EXIT_FAILURE if any(f.level == "problem" for f in findings) else EXIT_OK


def _sample_vars(workspace: Workspace) -> dict[str, object]:
    return blockfile.template_vars(
        request_id="doctor",
        question="Which of the two payment flows should the checkout use?",
        context="Feature: checkout\nFile: app/pay.py",
        attempted=["read PROMPT.md: it names both flows"],
        choices=[Choice("Flow A", "keeps the old API"), Choice("Flow B", "needs a migration")],
        meta=["Trigger: agent"],
        answer_hint=answer_hint("none"),
        repo=workspace.repo_name(),
        trigger="agent",
        at=clock.iso_seconds(),
    )


def _refused(refusals: list[readiness.Refusal], topic: str) -> list[Finding]:
    """The refusals of ``topic`` (``config``, ``channel``, ``loop``) as findings."""
    return [
        Finding("problem", r.topic, r.text, stops_run=True)
        for r in refusals
        if r.topic.split()[0] == topic
    ]


def _config_findings(config: Config, refusals: list[readiness.Refusal]) -> list[Finding]:
    if config.file is None:
        return _refused(refusals, "config")
    return [Finding("ok", "config", f"{config.file} is valid")]


def _channel_findings(config: Config, refusals: list[readiness.Refusal]) -> list[Finding]:
    found = _refused(refusals, "channel")
    if found:
        return found
    for name in config.escalation.channels:
        if name == "none":
            text = "none: no message is sent, BLOCKED.md is the whole escalation"
            found.append(Finding("note", "channel", text))
        elif name == "telegram":
            found += _telegram_findings(config)
        elif name == "slack" and config.channels.slack_socket:
            found += _slack_app_findings(config)
        else:
            found.append(Finding("ok", f"channel {name}", "settings present (send-test sends one)"))
    return found


def _loop_findings(config: Config, refusals: list[readiness.Refusal]) -> list[Finding]:
    """What ``run`` refuses (no agent, a program that certainly runs and is not there); then
    each program that may run and is not there, a command ``/bin/sh`` cannot read, the task
    file, ``required_env`` and the stuck counters."""
    loop = config.loop
    if config.file is None:
        return []
    found = _refused(refusals, "loop")
    file = config.file
    env = child_environment()  # the PATH the loop's commands run with
    for name, command in named_commands(config):
        said = syntax_error(command, cwd=config.workspace)
        if said is not None:
            found.append(Finding("problem", "loop", f"[loop] {name}: /bin/sh cannot read it "
                                 f"({said}), so none of it runs; fix it in {file}"))  # fmt: skip
            continue
        certain = missing_program(command, cwd=config.workspace, env=env)
        for one in may_be_missing(command, cwd=config.workspace, env=env):
            if certain is not None and one.missing.program == certain.program:
                continue  # run refuses on it: said above
            text = f"[loop] {name}: {one.missing.text()} (it runs {one.where})"
            if one.where == "first":
                text = f"[loop] {name}: {one.missing.text()}"
            found.append(Finding("problem", "loop", f"{text}; {one.missing.fix} in {file}"))
    if loop.task_file and not (config.workspace / loop.task_file).is_file():
        text = f"[loop] task_file {loop.task_file!r} does not exist in {config.workspace}"
        found.append(Finding("problem", "loop", f"{text}; create it or fix the name"))

    # (a stream-json agent with no prompt is one of run's refusals: said above, in its words)
    found += [
        Finding("problem", "agent", text)
        for text in agent_problems(loop)
        if "reads its prompt on stdin" not in text
    ]
    missing = [name for name in loop.required_env if not os.environ.get(name)]
    if missing:
        found.append(Finding("problem", "loop", f"required_env not set now: {', '.join(missing)}; "
                             "export them where `loopkit run` starts"))  # fmt: skip
    return [*found, _stuck_finding(config)]


def _stuck_finding(config: Config) -> Finding:
    """The stuck triggers' thresholds and where their counters stand (SPEC section 19)."""
    try:
        saved = StateFile(Workspace.of(config)).load().stuck
    except WorkspaceError:
        saved = {}
    return Finding(
        "ok", "stuck", stuck_counters.describe(stuck_counters.report(config.stuck, saved))
    )


def _telegram_findings(config: Config) -> list[Finding]:
    """getMe (the token), getChat (the chat), getWebhookInfo (taps need getUpdates)."""
    bot = BotApi(config.channels)
    api = config.channels.telegram_api
    topic = "channel telegram"
    found: list[Finding] = []
    try:
        me = bot.call("getMe", {}, timeout=5)
        name = me.get("username") if isinstance(me, dict) else None
        found.append(Finding("ok", topic, f"the token works: bot @{name}"))
        # With [[escalation.people]]: each person's chat on Telegram (SPEC §29).
        people = [p.address for p in config.escalation.people if p.channel == "telegram"]
        chats: list[str | None] = [a for a in people if a] or [config.channels.telegram_chat]
        for chat_id in chats:
            chat = bot.call("getChat", {"chat_id": chat_id}, timeout=5)
            title = "?"
            if isinstance(chat, dict):
                title = str(chat.get("title") or chat.get("username") or chat.get("type") or "?")
            found.append(Finding("ok", topic, f"the bot can see chat {chat_id} ({title})"))
        hook = bot.call("getWebhookInfo", {}, timeout=5)
        if isinstance(hook, dict) and hook.get("url"):
            found.append(
                Finding(
                    "problem",
                    topic,
                    "a webhook is set on this bot, so loopkit cannot read taps with getUpdates; "
                    f"clear it: curl -X POST {api}/bot<TOKEN>/deleteWebhook",
                )
            )
        else:
            found.append(Finding("ok", topic, "no webhook: taps and replies can be read"))
    except BotApiError as exc:
        text = str(exc)
        fix = "check LOOPKIT_HITL_TELEGRAM_TOKEN (from @BotFather)"
        if text.startswith("getChat"):
            fix = ("send the bot a message (or add it to the group), then check "
                   "LOOPKIT_HITL_TELEGRAM_CHAT")  # fmt: skip
        elif exc.kind == "network":
            fix = (
                f"check the network, or LOOPKIT_HITL_TELEGRAM_API ({config.channels.telegram_api})"
            )
        found.append(Finding("problem", topic, f"{text}; {fix}"))
    finally:
        bot.close()
    return found


def _slack_app_findings(config: Config) -> list[Finding]:
    """The Slack app (``slack_mode = "socket"``): the bot token (``auth.test``), the channel
    (``conversations.info``: there, and the app in it), the app-level token and Socket Mode
    (``apps.connections.open``, whose one-use URL is never opened). Each problem is one line
    with its fix."""
    topic = "channel slack"
    web = SlackWeb(config.channels)
    channel = config.channels.slack_channel
    found: list[Finding] = []
    try:
        me = web.call("auth.test", {}, budget=5)
        found.append(Finding("ok", topic, f"the bot token works: {me.get('user')} in "
                             f"{me.get('team')}"))  # fmt: skip
    except SlackCallError as exc:
        return [Finding("problem", topic, str(exc))]
    try:
        info = web.call("conversations.info", {"channel": channel}, budget=5)
        raw = info.get("channel")
        about: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if about.get("is_member") is False:
            found.append(Finding("problem", topic, f"the app is not in {channel}: type "
                                 "/invite @<your app> there"))  # fmt: skip
        else:
            found.append(Finding("ok", topic, f"the app is in #{about.get('name') or channel}"))
    except SlackCallError as exc:
        if exc.code == "missing_scope":  # reading a channel's details is a scope of its own
            found.append(Finding("note", topic, f"cannot look at {channel} without "
                                 "channels:read; `loopkit send-test` posts there"))  # fmt: skip
        else:
            found.append(Finding("problem", topic, str(exc)))
    try:
        web.call("apps.connections.open", {}, budget=5)
        found.append(Finding("ok", topic, "the app-level token opens Socket Mode: clicks and "
                             "thread replies can be read"))  # fmt: skip
    except SlackCallError as exc:
        found.append(Finding("problem", topic, f"{exc} (and Socket Mode must be on in the "
                             "app's settings)"))  # fmt: skip
    return found


def _workspace_findings(config: Config) -> list[Finding]:
    workspace = Workspace.of(config)
    found: list[Finding] = []
    sample = _sample_vars(workspace)
    override = blockfile.check_override(workspace, sample)
    if override:
        found.append(
            Finding("problem", "template", f"{override}; fix it, or delete it to use the default")
        )
    elif workspace.template_override.exists():
        found.append(Finding("ok", "template", f"{workspace.template_override} renders"))
    try:
        blockfile.render_packaged(sample)
        if not workspace.template_override.exists():
            found.append(Finding("ok", "template", "the packaged BLOCKED.md template renders"))
    except Exception as exc:  # the packaged template is part of the install
        found.append(Finding("problem", "template", f"packaged template fails: {exc}; reinstall"))
    if not os.access(workspace.root, os.W_OK):
        found.append(
            Finding(
                "problem",
                "workspace",
                f"{workspace.root} is not writable; loopkit cannot "
                "write requests/ or BLOCKED.md there",
            )
        )
    state = blockfile.state(workspace.blocked)
    if state == "other":
        found.append(Finding("problem", "blocked", str(blockfile.not_a_file(workspace.blocked))))
    elif state == "file":
        found.append(Finding("note", "blocked", f"{workspace.blocked.name} exists: blocked now"))
    return found


def _hook_findings(root: Path) -> list[Finding]:
    """loopkit's hooks (Claude Code's, Codex's, Gemini CLI's), each run once as the agent runs
    it: one that cannot start exits 127, and the agent lets the call through."""
    found = []
    hooks = health.installed(health.settings_files(root, Path.home()))
    agents = health.installed_agents(root, Path.home())
    for hook in hooks + agents:
        result = health.check(hook, root)
        found.append(Finding("ok" if result.ok else "problem", "hook", result.text))
    # A hook that runs is not enough: the agent must load it (its trust).
    for result in health.trust({hook.agent for hook in agents}, root):
        found.append(Finding("ok" if result.ok else "problem", "trust", result.text))
    return found


def diagnose(root: Path) -> list[Finding]:
    """Every finding for the workspace at ``root``, in order: config, channel, workspace,
    loop, hooks, fleet. A config that does not load is the one finding (``run`` exits 78
    on it too)."""
    try:
        config = load(root)
    except ConfigError as exc:
        return [Finding("problem", "config", str(exc), stops_run=True)]
    refusals = readiness.refusals(config)
    found = _config_findings(config, refusals) + _channel_findings(config, refusals)
    found += _workspace_findings(config) + _loop_findings(config, refusals)
    found += _hook_findings(config.workspace)
    if config.channels.fleet_dsn:
        said = schema.check(config.channels.fleet_dsn)
        if said is not None:
            found.append(Finding(said[0], "fleet", said[1]))
    return found


def test_message(workspace: Workspace) -> Message:
    return Message(
        request_id="send-test",
        repo=workspace.repo_name(),
        at=clock.iso_seconds(),
        question="Test from loopkit send-test: does this reach you?",
        context=f"loopkit send-test on {socket.gethostname()} in {workspace.root.resolve()}",
        attempted=("nothing: this is only a test, no answer is needed",),
        choices=("Got it",),
    )


def send_test(
    config: Config, *, factory: Callable[[str], channels.Channel] | None = None
) -> tuple[Outcome, Message]:
    name = config.escalation.channel
    if name == "none":
        raise ChannelError(
            "the channel is none, so there is nothing to send; set LOOPKIT_HITL_CHANNEL "
            "to telegram, slack, apprise, ntfy, pagerduty or dial"
        )
    unusable = channels.unusable(config)
    if unusable:  # as `run` refuses to start on it: a config error (78), never a bug
        raise ConfigError(unusable)
    people = config.escalation.people  # with [[escalation.people]]: the first of them
    settings = config.channels.for_person(people[0]) if people else config.channels
    create = factory or (
        lambda n: channels.create(n, settings, budget=config.escalation.send_timeout)
    )
    try:
        channel = create(name)
    except ConfigError as exc:
        raise ChannelError(str(exc)) from None
    message = test_message(Workspace.of(config))
    return channel.send(message), message
