"""What ``loopkit run`` refuses to start on (exit 78, before its first iteration), decided in
one place: ``run`` raises the first, ``doctor`` lists them all in the same words and exits
78 too — the same verdict, before hours pass.

In order: no ``loopkit.toml`` (nothing to run; the folder is no workspace); a channel that
reaches nobody (an unknown name, missing settings, a missing extra, the dial command's
program, an Apprise URL Apprise cannot parse: :func:`loopkit.channels.problems`); no
``[loop] agent``; a program that certainly runs and is not there (agent, resume, verify,
done, preflight: :mod:`loopkit.config.programs`, looked up on the ``PATH`` they run with:
:mod:`loopkit.supervisor.childpath`); an agent that reads its prompt on stdin
with no ``[loop] prompt``.
"""

from __future__ import annotations

from loopkit import channels
from loopkit.config import CONFIG_NAME
from loopkit.config.programs import loop_problems
from loopkit.datarecord import record
from loopkit.errors import ConfigError
from loopkit.supervisor.childpath import child_environment
from loopkit.supervisor.claudestream import speaks_stream_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.config import Config


NO_PROMPT = (
    "[loop] agent reads its prompt on stdin (--input-format stream-json) and {file} has no "
    "[loop] prompt; set it to what the agent is asked each turn"
)


@record(frozen=True, slots=True)
class Refusal:
    """One reason ``run`` will not start: ``topic`` (``config``, ``channel telegram``,
    ``loop``) and what is wrong, with its fix."""

    topic: str
    text: str

    def line(self) -> str:
        return (
            self.text
            if self.topic in ("config", "loop", "channel")
            else (f"{self.topic}: {self.text}")
        )


def no_config(config: Config) -> str:
    where = config.workspace / CONFIG_NAME
    return (
        f"no {where}: this folder is not a loopkit workspace; run `loopkit init --agent "
        "claude|codex|gemini|COMMAND` here, or run this in (or -C) the workspace"
    )


def refusals(config: Config) -> list[Refusal]:
    """Every reason ``run`` refuses to start with ``config``, in the order it looks."""
    found = [Refusal("config", no_config(config))] if config.file is None else []
    found += [Refusal(p.topic, p.text) for p in channels.problems(config)]
    if config.file is None:
        return found  # no agent, no commands: the missing file says it all
    if config.loop.agent is None:
        found.append(Refusal("loop", f"no [loop] agent in {config.file}; set the agent command "
                             "(`loopkit init --agent …` writes one)"))  # fmt: skip
    found += [Refusal("loop", text) for text in loop_problems(config, child_environment())]
    if speaks_stream_json(config.loop.agent) and not config.loop.prompt:
        found.append(Refusal("loop", NO_PROMPT.format(file=config.file)))
    return found


def check(config: Config) -> None:
    """Raise ConfigError with the first refusal (and how many more ``doctor`` lists)."""
    found = refusals(config)
    if found:
        more = f" (and {len(found) - 1} more: `loopkit doctor` lists them)" if found[1:] else ""
        raise ConfigError(found[0].line() + more)
