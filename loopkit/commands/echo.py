"""A line on stdout or stderr, written as ``click.echo`` writes it — without importing click.

What click does for a ``str`` and we keep: the text and a newline, then a flush; ANSI escape
sequences stripped when the stream is no terminal; a stream whose encoding is ASCII (or
unknown) written in UTF-8, unencodable characters replaced.
"""

from __future__ import annotations

import sys


def echo(text: str = "", *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    out = text + "\n"
    if "\x1b" in out and not _isatty(stream):
        import re

        out = re.sub(r"\033\[[0-?]*[ -/]*[@-~]", "", out)  # click's _compat._ansi_re
    buffer = getattr(stream, "buffer", None)
    if buffer is not None and _is_ascii(getattr(stream, "encoding", None) or "ascii"):
        stream.flush()
        buffer.write(out.encode("utf-8", "replace"))
        buffer.flush()
        return
    stream.write(out)
    stream.flush()


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except Exception:
        return False


def _is_ascii(encoding: str) -> bool:
    import codecs

    try:
        return codecs.lookup(encoding).name == "ascii"
    except LookupError:
        return False
