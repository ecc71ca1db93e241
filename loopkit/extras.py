"""loopkit's optional parts (the extras in ``pyproject.toml``), and the one line that says how
to get one that is missing.

A command that needs a part the install lacks — Slack's app without ``slack_sdk``, channel
``apprise`` without Apprise, a fleet without psycopg — is a configuration error (exit 78)
that names the ``pip install`` fixing it, in ``doctor``, ``send-test``, ``run`` and ``serve``
alike; never "an unexpected error". Looked up with ``importlib.util.find_spec``, never
imported here.
"""

from __future__ import annotations

# The module each extra brings → (the extra's name, what needs it).
EXTRAS: dict[str, tuple[str, str]] = {
    "slack_sdk": ("slack", 'the Slack app (slack_mode = "socket")'),
    "apprise": ("apprise", "sending through Apprise"),
    "psycopg": ("fleet", "a fleet (a DSN is set: [fleet] dsn or LOOPKIT_FLEET_DSN)"),
}


def installed(module: str) -> bool:
    """Whether ``module`` can be imported here (looked up, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def needs(module: str) -> str:
    """The line for a missing ``module`` of :data:`EXTRAS`: what needs it, and the fix."""
    extra, what = EXTRAS[module]
    return f"{what} needs {module}, which is not installed: pip install 'loopkit[{extra}]'"


def missing(exc: BaseException) -> str | None:
    """:func:`needs`'s line when ``exc`` is the import of an extra's module failing (a path
    that did not look first), else None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.partition(".")[0]
    return needs(top) if top in EXTRAS else None
