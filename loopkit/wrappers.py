"""Programs that run another command after their own options: ``env``, ``nice``, ``timeout``,
``sudo`` … — each declared once, with the options that take a value (short and long) and
those after which it runs nothing (``command -v``, ``sudo -l``).

Two readers look through them: the gate (:mod:`loopkit.hooks.commandline`: ``sudo rm -rf``
is ``rm -rf``) and the check of which programs a configured command runs
(:mod:`loopkit.config.programs`, which follows the few whose program is surely looked up
on the same PATH). Standard library only, and none of it: the gate's fast path reads this.
"""

from __future__ import annotations

# name → (short options taking a value, long options taking a value, short options after
# which it runs nothing)
WRAPPERS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "command": ("", (), "vV"),
    "builtin": ("", (), ""),
    "exec": ("a", (), ""),
    "nohup": ("", (), ""),
    "time": ("fo", ("--format", "--output"), ""),
    "setsid": ("", (), ""),
    "stdbuf": ("ioe", ("--input", "--output", "--error"), ""),
    "nice": ("n", ("--adjustment",), ""),
    "ionice": ("cn", (), "p"),
    "timeout": ("sk", ("--signal", "--kill-after"), ""),
    "sudo": (
        "ugCDprtUTR",
        (
            "--user",
            "--group",
            "--chdir",
            "--close-from",
            "--prompt",
            "--role",
            "--type",
            "--other-user",
            "--host",
            "--command-timeout",
        ),
        "lvVkK",
    ),
    "doas": ("uC", (), ""),
    "env": ("uCSP", ("--unset", "--chdir", "--split-string"), ""),
    "xargs": (
        "adEILnPs",
        (
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-lines",
            "--max-procs",
            "--max-chars",
            "--replace",
            "--eof",
        ),
        "",
    ),
    "chronic": ("", (), ""),
    "unbuffer": ("", (), ""),
}

# Any wrapper's long option that takes a value: ``--user root`` is one option, whichever
# wrapper it follows.
LONG_VALUES = frozenset(name for _, longs, _ in WRAPPERS.values() for name in longs)


def taking_values(name: str) -> frozenset[str]:
    """Wrapper ``name``'s options that take a value, as written: ``-n``, ``--adjustment``."""
    short, longs, _ = WRAPPERS[name]
    return frozenset((*(f"-{c}" for c in short), *longs))
