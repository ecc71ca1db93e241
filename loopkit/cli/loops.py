"""``ps``, ``pause``, ``resume``, ``stop``, ``note``, ``say`` and ``tail``: every loop, steering
one, and watching one (SPEC §22, §24)."""

from __future__ import annotations

import getpass
from pathlib import Path

import click

from loopkit.cli.body import runs
from loopkit.errors import EXIT_FAILURE, EXIT_OK, EXIT_SIGINT, LoopkitError, LoopNotFound
from loopkit.home import Registered, Registry
from loopkit.loops import (
    find,
    listing,
    live_line,
    loops,
    note,
    pick,
    read_loop,
    said_to,
    say,
    steer,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App
    from loopkit.loops import (
        Loop,
    )
    from loopkit.workspace.steer import Command


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the loops as JSON (one array).")
@click.pass_obj
@runs("loopkit.commands.ps:ps")
def ps() -> None:
    """Every loop of this machine (with a fleet, of every machine): state, task, verify, spend.

    With a fleet (LOOPKIT_FLEET_DSN), other machines' loops are listed with their machine.

    States: running, blocked (BLOCKED.md stands), paused (waits for `loopkit resume`),
    finished (done said so), stopped, dead (its supervisor's pid is gone), unknown (another
    machine's loop whose machine the fleet has not heard from for a while). Below the table:
    each open question, each pause (who, via, when), the notes waiting for a loop's next
    agent run, and what is unknown. Works from any folder.
    """


def _target(app: App, repo: str | None) -> Loop:
    """The loop ``repo`` names (a repo name, ``MACHINE:REPO`` or a workspace path; with a
    fleet, any machine's), else this workspace's."""
    if repo is None:
        root = app.root.resolve()
        for one in loops():
            if one.workspace == str(root):
                return one
        if not ((root / "loopkit.toml").exists() or (root / ".loopkit").is_dir()):
            raise LoopNotFound(f"{root} is no loopkit workspace; name a loop (`loopkit ps` "
                               "lists them) or run this in one")  # fmt: skip
        return read_loop(Registered(root, root.name, ""))
    found = listing(app.hubs)
    if found.unreached and not find(repo, found.loops):  # it may be another machine's
        raise LoopkitError(
            f"cannot reach the fleet database to find {repo!r} (no loop of this machine has "
            "that name): steer it on its own machine, or when the database is back"
        )
    return pick(repo, found.loops)


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "human"


def _steer(app: App, repo: str | None, command: Command) -> int:
    loop = _target(app, repo)
    if command == "stop" and loop.state == "dead" and loop.machine is None:
        ended = _end_dead(loop)
        if ended is not None:
            click.echo(ended)
            return EXIT_OK
        loop = _target(app, repo)  # a supervisor started meanwhile: it gets the order
    line = steer(loop, command, by=_who(), via="cli", fleet=app.hubs)
    click.echo(line)
    return EXIT_FAILURE if command == "stop" and loop.pid is None else EXIT_OK


def _end_dead(loop: Loop) -> str | None:
    """``stop`` of a dead loop here: what its agent left running, stopped; None when a
    supervisor holds the workspace now."""
    from loopkit.config import load
    from loopkit.supervisor.leftovers import end_dead_loop

    root = Path(loop.workspace)
    grace = load(root, lenient=True).loop.kill_grace
    stopped = end_dead_loop(root, grace=grace, by=_who(), via="cli")
    if stopped is None:
        return None
    left = (f"stopped {stopped.count} process(es) its agent left running" if stopped.count
            else "nothing of its agent was left running")  # fmt: skip
    return f"{loop.repo}: its supervisor was gone (dead); {left}; it is stopped now"


REPO = click.argument("repo", required=False, metavar="[REPO]")


@click.command()
@REPO
@click.pass_obj
def pause(app: App, repo: str | None) -> int:
    """Pause a loop after its running iteration; no question is sent.

    REPO: a name from `loopkit ps`, MACHINE:REPO when two machines of the fleet have a repo
    of that name, or a workspace path (default: this workspace). Not a block: no question is
    sent; `ps`, `status` and the inbox say paused. A pause holds across restarts of the
    supervisor until `loopkit resume`. Another machine's loop is paused through the fleet.
    """
    return _steer(app, repo, "pause")


@click.command()
@REPO
@click.pass_obj
def resume(app: App, repo: str | None) -> int:
    """Resume a paused loop (REPO as for `pause`)."""
    return _steer(app, repo, "resume")


@click.command()
@REPO
@click.pass_obj
def stop(app: App, repo: str | None) -> int:
    """Stop a loop's supervisor, as SIGTERM does (REPO as for `pause`; exit 1: none runs).

    A dead loop (its supervisor was killed) on this machine: what its agent left running —
    its recorded process groups and cgroup — is stopped now, and the loop marked stopped
    (exit 0). A pause of a paused loop and a resume of one not paused say so, and change
    nothing.
    """
    return _steer(app, repo, "stop")


@click.command(name="note")
@click.argument("text", nargs=-1, required=True)
@click.option("--repo", "repo", metavar="REPO", help="The loop (default: this workspace).")
@click.pass_obj
def note_command(app: App, text: tuple[str, ...], repo: str | None) -> int:
    """Guidance for a loop's next agent run, without a question: it gets LOOPKIT_GUIDANCE.

    The run gets the text (and .loopkit/guidance.json), once; notes given before it starts
    all go to that run. `loopkit ps` shows the notes waiting."""
    loop = _target(app, repo)
    click.echo(note(loop, " ".join(text), by=_who(), via="cli", fleet=app.hubs))
    if loop.machine is None and not any(
        one.workspace == loop.workspace for one in loops(Registry())
    ):
        click.echo("(this workspace is not registered yet: its first `loopkit run` registers it)")
    return EXIT_OK


@click.command(name="say")
@click.argument("words", nargs=-1, required=True, metavar="[REPO] TEXT")
@click.pass_obj
def say_command(app: App, words: tuple[str, ...]) -> int:
    """Tell the agent something now, in its running turn; else it is its next run's note.

    `loopkit say TEXT` in a workspace, `loopkit say REPO TEXT` anywhere (REPO as for
    `pause`: when the first word names a loop and more words follow, it is the loop; quote
    the text to keep its first word). Where the agent takes input mid-turn (Claude Code in
    stream-json) the message goes into the turn that runs; otherwise — another agent, no
    turn running, no loopkit running — the next agent run gets it as LOOPKIT_GUIDANCE, as
    `loopkit note` does. The line printed says which.
    """
    repo, text = said_to(words, listing(app.hubs).loops if len(words) > 1 else [])
    loop = _target(app, repo)
    click.echo(say(loop, text, by=_who(), via="cli", fleet=app.hubs))
    return EXIT_OK


@click.command(name="tail")
@REPO
@click.option("-n", "--lines", "count", default=20, show_default=True,
              type=click.IntRange(min=0), help="Lines of history printed first.")  # fmt: skip
@click.option(
    "--follow/--no-follow",
    default=True,
    show_default=True,
    help="Go on printing what the loop does, as `tail -f` does (Ctrl-C ends it).",
)
@click.pass_obj
def tail_command(app: App, repo: str | None, count: int, follow: bool) -> int:
    """A loop's recent history, then what it does as it does it (redacted).

    REPO as for `pause` (default: this workspace). It prints the loop's state and the
    agent's running turn, the last lines of its iteration logs — every command's output;
    for an agent whose events loopkit reads, its turn as text: what it says, each call,
    each failure, each message a human gave it — and then follows them, into the next
    iteration too, until Ctrl-C.
    """
    from loopkit import config as config_mod
    from loopkit.redact import Redactor
    from loopkit.tail import Follow

    loop = _target(app, repo)
    if loop.machine is not None:
        raise LoopkitError(f"{loop.where} is on another machine: `loopkit tail` there")
    root = Path(loop.workspace)
    try:
        secrets = config_mod.load(root, lenient=True).channels.secrets()
    except LoopkitError:
        secrets = ()
    head = f"==> {loop.repo}: {loop.state}, iteration {loop.iteration}"
    click.echo(head + (f" · {live_line(loop.live)}" if loop.live else ""))
    follower = Follow(root / ".loopkit" / "logs", click.echo, Redactor(secrets))
    try:
        follower.run(count, follow=follow)
    except KeyboardInterrupt:
        return EXIT_SIGINT
    return EXIT_OK
