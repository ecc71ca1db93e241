"""An unexpected error (a bug) is one redacted line on stderr and a traceback in the event log."""

from __future__ import annotations

from pathlib import Path

import pytest

TOKEN = "987654:AAFakeTokenForTestsOnly_abcdefghijk"


def test_a_bug_is_one_redacted_line_and_a_logged_traceback(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopkit import log as events
    from loopkit.cli.context import report_bug
    from loopkit.commands.app import App
    from loopkit.redact import Redactor

    monkeypatch.setenv("LOOPKIT_HITL_TELEGRAM_TOKEN", TOKEN)
    app = App(root=ws)
    app.config()
    try:
        raise RuntimeError(f"POST https://api.telegram.org/bot{TOKEN}/sendMessage failed")
    except RuntimeError as exc:
        report_bug(exc, app)
        report_bug(exc, app, traceback=True)
    finally:
        events.setup(None, Redactor(), console=False)  # no handlers left for other tests
    err = capsys.readouterr().err
    first = err.split("\n")[0]
    assert first.startswith("loopkit: unexpected error (a bug, please report it): RuntimeError")
    assert "Traceback (most recent call last)" in err  # only with traceback=True
    events = (ws / ".loopkit" / "events.jsonl").read_text()
    assert "unexpected_error" in events and "Traceback" in events
    assert TOKEN not in err + events
