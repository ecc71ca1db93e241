"""``run``, ``status`` and ``unskip``: the supervisor and its state."""

from __future__ import annotations

import click

from loopkit.cli.body import runs
from loopkit.errors import EXIT_OK, ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


@click.command()
@click.option(
    "--exit-on-block", is_flag=True, help="Print the head of BLOCKED.md and exit 2 when blocked."
)
@click.option(
    "--max-iterations",
    type=click.IntRange(min=0),
    metavar="N",
    help="Stop (exit 0) after N iterations.",
)
@click.pass_obj
def run(app: App, exit_on_block: bool, max_iterations: int | None) -> int:
    """Supervise the loop: agent, verify, escalate when stuck, resume when answered.

    \b
    Exit: 0 done (or --max-iterations reached) · 2 blocked (--exit-on-block)
    3 aborted · 1 another supervisor holds this workspace · 130/143 interrupted
    78 before the first iteration: no agent, a channel that reaches nobody, or a
    program of agent / verify / done / preflight not found (named, with the fix).
    SIGHUP reloads loopkit.toml at the next iteration.
    """
    from loopkit.config.programs import check_loop
    from loopkit.supervisor.loop import Options, Supervisor

    app.long_running = True
    config = app.config(console_level="info")
    from loopkit import channels

    problem = channels.unusable(config)
    if problem:  # an overnight run must not start unable to reach its human
        raise ConfigError(problem)
    if config.loop.agent is None:  # before iteration 1, not at it
        raise ConfigError(
            f"no [loop] agent in {config.workspace / 'loopkit.toml'}; set the agent command "
            "(`loopkit init --agent …` writes one)"
        )
    check_loop(config)  # a typo in a command is named now, not after three failed iterations
    from loopkit.supervisor.claudestream import speaks_stream_json

    if speaks_stream_json(config.loop.agent) and not config.loop.prompt:
        raise ConfigError(
            f"[loop] agent reads its prompt on stdin (--input-format stream-json) and "
            f"{config.workspace / 'loopkit.toml'} has no [loop] prompt; set it to what the "
            "agent is asked each turn"
        )
    app.register()
    options = Options(exit_on_block=exit_on_block, max_iterations=max_iterations)
    return Supervisor(config, options=options, hubs=app.hubs).run()  # its hub: its Config's


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON.")
@click.pass_obj
@runs("loopkit.commands.status:status")
def status() -> None:
    """Show the supervisor's state: running / blocked / finished, iteration, task, request.

    The state is one of running, blocked, idle (stopped by --max-iterations), finished,
    aborted or stopped; it says blocked whenever BLOCKED.md stands, supervised or not. It
    lists the skipped tasks (`loopkit unskip TASK` takes one back). While blocked it adds
    since when, the request, the deadline and its timeout action, the last delivery per
    channel and the next send.
    """


@click.command()
@click.argument("task")
@click.pass_obj
def unskip(app: App, task: str) -> int:
    """Take back a skipped task: the loop works on it again when it is the first open one.

    TASK is the task as `loopkit status` lists it. A running supervisor takes it up at its
    next iteration.

    \b
    Exit: 0 taken back · 66 TASK is not skipped (the error names the skipped ones).
    """
    from loopkit.workspace.skipped import SkippedTasks

    config = app.config()
    taken = SkippedTasks(app.workspace()).take_back(task)
    where = f" in {config.loop.task_file}" if config.loop.task_file else ""
    click.echo(f"task {taken.task!r} is no longer skipped: the loop works on it again when "
               f"it is the first open task{where}")  # fmt: skip
    return EXIT_OK
