"""Every key of ``loopkit.toml``, once (SPEC §27): its table, how its value is read, and what
it means. The loader reads the parsers (:mod:`loopkit.config`), ``docs/generate.py`` the
meanings (docs/configuration.md), ``loopkit init`` both (a line above each key it writes);
a key added here is known to all three.
"""

from __future__ import annotations

from loopkit.config import values as v
from loopkit.config.people import people
from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


@record(frozen=True, slots=True)
class Key:
    """One key: the parser of its value (raises ValueError, said to the user with the file
    and line) and its meaning, for a human (Markdown)."""

    parse: Callable[[object], Any]
    meaning: str


KEYS: dict[str, dict[str, Key]] = {
    "loop": {
        "agent": Key(
            v.optional_command,
            "The agent command. `loopkit run` needs it, and checks at start that the programs of "
            "agent, resume, verify, done and preflight that certainly run are there: exit 78 "
            "before the first iteration, naming a missing one (shell syntax such as `!`, `if`, "
            "`( … )`, `VAR=x cmd` is read as `/bin/sh` reads it). `loopkit doctor` says the "
            "same, and also names every program that may run — after `&&`, `||`, in a "
            "pipeline, an `if` or a loop — that is not there, and a command `/bin/sh` cannot "
            "read.",
        ),
        "resume": Key(
            v.resume_command,
            "The agent's own session continued after an answer, with `{session_id}` (e.g. `claude "
            "-p --resume {session_id} --output-format json`); the human's decision comes on "
            "stdin (or, for an agent that reads stream-json, as its turn's message). Absent, or a "
            "session that does not resume: a fresh `agent` run with `LOOPKIT_DECISION`. "
            "`loopkit init --agent claude` writes it.",
        ),
        "prompt": Key(
            v.nonempty_string,
            "What the agent is asked when its command reads its prompt on stdin as stream-json "
            "(`claude -p --input-format stream-json …`: loopkit speaks Claude Code's SDK protocol "
            "with it); needed for such an agent (`loopkit run` exits 78 without it), unused "
            "otherwise. `loopkit init --agent claude` writes it.",
        ),
        "verify": Key(
            v.optional_command, "Exit 0 = the iteration passed. Absent: every iteration passes."
        ),
        "done": Key(v.optional_command, "Exit 0 = the loop is finished (`loopkit run` exits 0)."),
        "pause": Key(v.parse_duration, "The wait between iterations."),
        "iteration_timeout": Key(
            v.parse_duration,
            "The agent's process group is stopped after this; it counts as a failure.",
        ),
        "max_verify_failures": Key(
            v.positive_int,
            "Consecutive verify failures on the same task before loopkit escalates, each "
            "breaking no new ground (SPEC §25: one that reached new files or lines, or failed a "
            "way not seen before in the task, starts the count again).",
        ),
        "task_file": Key(
            v.relative_file,
            "Where the current task is read: the first line matching `task_pattern` (its group "
            "1). A path inside the workspace. Absent: one task.",
        ),
        "task_pattern": Key(
            v.pattern,
            "The pattern that finds the current task in `task_file`. One of your own is given 5 s "
            "on the file: one that backtracks without end (`(a+)+`) stops the loop with a config "
            "error (78), never hangs it.",
        ),
        "required_env": Key(
            v.strings,
            "Variables that must be set and non-empty at the head of each iteration; one missing "
            "escalates (missing credential).",
        ),
        "preflight": Key(
            v.commands,
            "Commands run before the agent; one failing 3 times in a row escalates (dependency "
            "down).",
        ),
        "preflight_backoff": Key(
            v.parse_duration,
            "The wait before a preflight command's 2nd try, doubled before the 3rd.",
        ),
        "dependency_wait": Key(
            v.parse_duration,
            "How long the agent's API may be down (Claude Code's `rate_limit`, `overloaded`) "
            "before loopkit asks; meanwhile it waits with backoff, and no iteration counts as a "
            "failure.",
        ),
        "stop_agent_on_block": Key(
            v.flag,
            "Stop an agent that wrote `BLOCKED.md` once `block_grace` has passed, instead of "
            "letting its turn end.",
        ),
        "block_grace": Key(
            v.parse_duration, "With `stop_agent_on_block`: how long the agent may go on."
        ),
        "kill_grace": Key(
            v.parse_duration, "SIGTERM → SIGKILL grace when a command's process group is stopped."
        ),
        "max_log": Key(
            v.parse_size,
            "The most one iteration's log keeps, and the most the console shows of one command's "
            "output; the rest is dropped with a `[… N bytes cut]` line (a runaway agent cannot "
            "fill the disk).",
        ),
    },
    "escalation": {
        "channel": Key(
            v.ladder,
            "Where the question goes: `telegram`, `slack`, `dial`, `apprise`, `ntfy`, "
            '`pagerduty`, `none`, or a ladder such as `["telegram", "dial"]` (the next rung '
            "when one fails hard, or with `escalate_after`). `LOOPKIT_HITL_CHANNEL` overrides it. "
            "Not needed when `people` are listed: they are the ladder then. Each channel's "
            "settings: [channels](channels.md).",
        ),
        "blocked_file": Key(
            v.relative_file,
            "The block file. A path inside the workspace: an absolute path or one climbing out "
            "with `..` is a config error.",
        ),
        "timeout_minutes": Key(
            v.minutes,
            "A request's `timeout_default` for blocks without one of their own (the supervisor's, "
            "an agent's, an adopted file, a non-P0 question).",
        ),
        "timeout_action": Key(
            v.timeout_action,
            "What happens when a request times out: `queue` keeps waiting, so nothing "
            "irreversible happens while a loop waits; `skip` and `retry` unblock and go on; "
            "`abort` exits 3. P0 and `--irreversible` asks, approvals, reviews and gates use "
            "`abort`.",
        ),
        "send_timeout": Key(v.parse_duration, "One send, its single retry included."),
        "retry_backoff": Key(
            v.parse_duration,
            "A failed delivery is retried after this, doubled each time, at most 15 minutes.",
        ),
        "escalate_after": Key(
            v.optional_duration,
            'No answer by then (e.g. `"20m"`) ⇒ the next channel of the ladder.',
        ),
        "remind_every": Key(
            v.optional_duration,
            'A one-line reminder this often (e.g. `"2h"`): `[loopkit] still blocked in <repo> for '
            "2h: <question>`.",
        ),
        "max_reminders": Key(v.count, "At most this many reminders per block."),
        "slack_mode": Key(
            v.slack_mode,
            '`"webhook"` (one-way, an incoming webhook) or `"socket"` (a Slack app: buttons and '
            "thread replies over Socket Mode; needs `loopkit[slack]`). `LOOPKIT_HITL_SLACK_MODE` "
            "wins.",
        ),
        "people": Key(
            people,
            "Who is asked, in order, as `[[escalation.people]]` tables: `name`, `channel` "
            "(`telegram`, `slack`, `apprise`, `ntfy`, `dial`, `pagerduty`), `address` on it (a "
            "chat id, a Slack user id, an Apprise URL, an ntfy topic URL; none for `dial` and "
            '`pagerduty`), `after` (from the block: `"0m"`, `"20m"`) and optional `quiet` hours '
            '(`"22:00-07:00"`) in `tz` (default the machine\'s). An unanswered block reaches the '
            "next person when their `after` passes; a person in their quiet hours is skipped. "
            "Listed, only they may answer (`loopkit reply --by NAME`), and everyone asked is told "
            "who answered. Listed, they replace `channel` and `escalate_after`. "
            "[Answering](answering.md#a-team).",
        ),
    },
    "stuck": {
        "no_progress": Key(
            v.count,
            "Iterations in a row that break no new ground before loopkit asks: the task's change "
            "(committed or not, on any branch) reaches no file or line it had not reached, "
            "verify fails no way it had not, no task is ticked while verify passes. Rewriting "
            "the same lines, flipping them back, re-committing, touching only timestamps, "
            "comments, counters or versions is no new ground. `0` turns it off. "
            "[Stuck detection](stuck.md).",
        ),
        "same_error": Key(
            v.count,
            "Verify failures in a row with the same failure (its failing tests and their first "
            "error lines, run-to-run noise masked), each breaking no new ground or ticking a task "
            "over it — across tasks too. `0` turns it off.",
        ),
        "repeated_output": Key(
            v.count,
            "Agent outputs in a row, breaking no new ground, that are near-copies (similarity ≥ "
            "0.9, head and tail) of one of the last four. `0` turns it off.",
        ),
        "crash_loop": Key(
            v.count,
            "Agent runs in a row that exit non-zero, time out or cannot start, and reach nothing "
            "new (a run naming a rate limit or an overload is the agent's API down, not a "
            "crash). `0` turns it off.",
        ),
        "max_task_iterations": Key(
            v.count, "Iterations on one task before loopkit asks whether to go on (`0`: no limit)."
        ),
        "task_timeout": Key(
            v.optional_duration,
            'Wall time on one task before loopkit asks (e.g. `"2h"`; `0` or `"off"`: no limit). '
            "Looked at before each iteration starts.",
        ),
        "max_cost_usd": Key(
            v.optional_money,
            "US dollars the agent reports spending, summed: Claude's `total_cost_usd`, Codex's and "
            "Gemini's token usage priced at list prices (JSON output); past it loopkit asks "
            'before spending more (`0` or `"off"`: no limit). An answer approves another as much.',
        ),
        "same_call": Key(
            v.count,
            "Inside one agent turn, read from its event stream as it runs: the same tool call "
            "with the same input (what it runs, masked as for `same_error`; not the agent's "
            "description of it) this many times in a row, and loopkit stops the turn, keeps "
            "the session and asks. `0` turns it off. [The live turn](agents.md#the-live-turn).",
        ),
        "ping_pong": Key(
            v.count,
            "Inside one agent turn: two calls alternating (A, B, A, B, …) for this many cycles, "
            "and loopkit stops the turn and asks. `0` turns it off.",
        ),
        "silent": Key(
            v.optional_duration,
            'Inside one agent turn: no event and no output for this long (e.g. `"10m"`), and '
            'loopkit stops the turn and asks. `0` or `"off"`: never.',
        ),
    },
    "policy": {
        "escalate_words": Key(
            v.strings,
            "Extra words that make `loopkit ask` always escalate (a P0 signal in the situation).",
        ),
        "proceed_words": Key(
            v.strings,
            "Words that let `loopkit ask` proceed when no confidence is stated (never past a P0 "
            "gate).",
        ),
        "answers": Key(
            v.policy_answers,
            '`[[policy.answers]]` tables: routine questions answered at once, `by = "policy"`, '
            "never waking anyone. Each has `answer` (an option's value, or words) and `why`, and "
            "matches by `category` (not a P0 one), `request_key` (a glob) and/or `words` (one of "
            "them in the question) — every one given must hold. A P0 question, an approval, a "
            "review and a gate are never answered by policy. The human gets a one-line FYI and "
            "may reply `override` ([answering](answering.md#policy-answers)).",
        ),
    },
    "gate": {
        "rules": Key(
            v.gate_rules,
            "Which Bash commands wait for a human's approval: regular expressions searched in "
            "the command as written and as the shell reads it (case-insensitive), or "
            "`tool:<glob>` for a tool by name. Set, they replace the defaults below.",
        ),
        "protect": Key(
            v.strings,
            "Globs for the files the file tools (Write / Edit / MultiEdit / NotebookEdit, "
            "apply_patch, write_file) and the shell's writes touch, case aside: a name "
            "(`.env*`), or a path relative to the session's folder (`**/migrations/**`). Set, "
            "they replace the defaults below. Under `loopkit run` loopkit's own files are "
            "guarded besides.",
        ),
        "extend_defaults": Key(v.flag, "Keep the default rules and add yours."),
    },
    "hooks": {
        "wait": Key(
            v.hook_wait,
            "Outside a supervisor: how long the PreToolUse hook waits for an approval before it "
            "denies the call (under Claude Code's 600 s hook timeout).",
        ),
    },
    "fleet": {
        "dsn": Key(
            v.fleet_dsn,
            "A `postgresql://` URL: share requests, answers and the bot with other machines "
            "([fleet](fleet.md)). Needs `pip install 'loopkit[fleet]'`. `LOOPKIT_FLEET_DSN` "
            "overrides it.",
        ),
    },
}
