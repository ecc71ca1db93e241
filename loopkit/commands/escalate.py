"""``loopkit escalate``: block the loop and ask the human (exit 2)."""

from __future__ import annotations

import json

from loopkit.commands.echo import echo
from loopkit.errors import EXIT_BLOCKED, ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App
    from loopkit.config import Config


def escalate(
    app: App,
    *,
    question: str,
    context: str,
    attempted: tuple[str, ...],
    choices: tuple[str, ...],
    trigger: str,
    as_json: bool,
) -> int:
    from loopkit.escalation.blockfile import Escalation
    from loopkit.escalation.repair import escalate as escalate_after_repair

    config, broken = app.config_for_a_block()
    app.register()
    escalator = app.escalator(config)
    result = escalate_after_repair(
        escalator, Escalation.of_texts(question, context, attempted, choices, trigger)
    )
    record = result.request
    if as_json:
        echo(json.dumps({"joined": result.joined, "request": record.to_dict()}, ensure_ascii=False))
        return _blocked(broken, config, record.request_id)
    if result.joined:
        echo(f"already blocked: joined request {result.joined}; nothing was sent")
        return _blocked(broken, config, result.joined)
    echo(record.message(escalator.workspace.repo_name()).text)
    echo("")
    where = "sent" if result.outcome and result.outcome.ok else "not sent"
    channel = config.escalation.channel
    if channel == "none":
        where = "channel none: BLOCKED.md is the escalation"
    elif escalator.agent_session:
        where = f"{channel}: the supervisor sends it"
    else:
        where = f"{channel}: {where}"
    echo(
        f"blocked: {config.escalation.blocked_file} written, "
        f"request requests/{record.request_id}.json ({where})"
    )
    return _blocked(broken, config, record.request_id)


def _blocked(broken: ConfigError | None, config: Config, request_id: str) -> int:
    """Exit 2 — or 78 when loopkit.toml is broken (SPEC), the block raised all the same."""
    if broken is not None:
        raise ConfigError(
            f"{broken}; the block was raised anyway, with the settings that are valid "
            f"({config.escalation.blocked_file}, requests/{request_id}.json) — fix loopkit.toml"
        )
    return EXIT_BLOCKED
