"""``run``, ``status`` and ``unskip``: the supervisor and its state."""

from __future__ import annotations

import click

from loopkit.cli.body import runs
from loopkit.errors import EXIT_FAILURE, EXIT_OK, ConfigError

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
    78 before the first iteration: no loopkit.toml, no agent, a channel that reaches
    nobody, or a program of agent / resume / verify / done / preflight not found (named,
    with the fix; `loopkit doctor` says the same).
    SIGHUP reloads loopkit.toml at the next iteration.
    """
    from loopkit.setup import readiness
    from loopkit.supervisor.loop import Options, Supervisor

    app.long_running = True
    config = app.config(console_level="info")
    # No loopkit.toml, a channel that reaches nobody, no agent, a program that is not there:
    # named now, not after three failed iterations (`loopkit doctor` says the same).
    readiness.check(config)
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


@click.command()
@click.option(
    "--done",
    "done",
    is_flag=True,
    help="Exit 0 when no task is left (each ticked or skipped), 1 when one is.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the tasks as JSON.")
@click.pass_obj
def tasks(app: App, done: bool, as_json: bool) -> int:  # fmt: skip
    """The tasks left in [loop] task_file; with --done, exit 0 once none is left.

    Lists the open tasks (the first is the current one) and the skipped ones. `--done` is
    what `init --task-file` writes as [loop] done: a skipped task counts as done, so a loop
    whose last open task was skipped finishes. A task file that is not there yet is not
    done.

    \b
    Exit: 0 (with --done: no task left) · 1 with --done: a task is left · 78 no task_file.
    """
    import json

    from loopkit.supervisor.tasks import read_tasks
    from loopkit.workspace.skipped import SkippedTasks

    config = app.config()
    task_file = config.loop.task_file
    if not task_file:
        raise ConfigError(
            f"no [loop] task_file in {config.workspace / 'loopkit.toml'}: the loop is one task; "
            "set task_file to a list of `- [ ] task` lines"
        )
    found = read_tasks(config.workspace, task_file, config.loop.task_pattern,
                       SkippedTasks(app.workspace()).tasks())  # fmt: skip
    if as_json:
        click.echo(json.dumps({"task_file": task_file, "exists": found.exists,
                               "open": found.open, "skipped": found.skipped,
                               "done": found.none_left}, ensure_ascii=False))  # fmt: skip
    elif not found.exists:
        click.echo(f"{task_file} does not exist yet: no task, and not done")
    else:
        skipped = f", {len(found.skipped)} skipped" if found.skipped else ""
        click.echo(f"{task_file}: {len(found.open)} open{skipped}")
        for n, task in enumerate(found.open):
            click.echo(f"  - {task}" + ("  (current)" if n == 0 else ""))
        for task in found.skipped:
            click.echo(f"  - {task}  (skipped: `loopkit unskip` takes it back)")
    if done and not found.none_left:
        return EXIT_FAILURE
    return EXIT_OK
