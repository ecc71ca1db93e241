"""The web inbox in a real browser: the distribution's Chromium driven by Playwright
(``executable_path``: nothing downloads a browser), on a phone-sized screen, against a real
``loopkit serve`` on 127.0.0.1.

Where Chromium is not installed these tests skip with a loud reason — except on CI
(``CI`` set), where ``.ci/run`` installs it and a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    LOOPKIT,
    Daemon,
    clean_env,
    loopkit,
    records,
    runs,
    setup,
    wait_until,
    write_config,
)  # fmt: skip

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PHONE = {"viewport": {"width": 360, "height": 740}, "is_mobile": True, "has_touch": True}

if CHROMIUM is None:
    if os.environ.get("CI"):
        raise RuntimeError(
            "chromium is not installed: .ci/run installs it (apt-get install chromium)"
        )
    pytest.skip(
        "LOUD SKIP: no chromium on this machine (apt-get install chromium); the browser tests "
        "did not run",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


class Serve:
    def __init__(self, tmp_path: Path) -> None:
        out = tmp_path / "serve.out"
        with out.open("wb") as sink:
            self.proc = subprocess.Popen(
                [str(LOOPKIT), "serve", "--listen", "127.0.0.1:0", "--user", "ana"],
                env=clean_env(), stdout=sink, stderr=subprocess.STDOUT, cwd=tmp_path,
                start_new_session=True,
            )  # fmt: skip
        found = wait_until(lambda: re.search(r"http://[\d.]+:\d+", out.read_text()), 20, "serve up")
        assert isinstance(found, re.Match)
        self.base = found.group(0)
        home = Path(os.environ["LOOPKIT_HOME"])
        self.token = (home / "inbox.token").read_text().strip()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    server = Serve(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def phone(browser: Browser, serve: Serve) -> Iterator[Page]:
    context = browser.new_context(**PHONE)  # type: ignore[arg-type]
    page = context.new_page()
    page.seen = []  # type: ignore[attr-defined]
    page.on("request", lambda r: page.seen.append(r.url))  # type: ignore[attr-defined]
    yield page
    context.close()


def escalate(ws: Path, question: str = "Which flow?") -> str:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    done = loopkit("-C", str(ws), "escalate", "-q", question, "-c", "checkout", "-a", "read",
                   "--choice", "Keep — as is", "--choice", "Migrate — to v2")  # fmt: skip
    assert done.returncode == 2, done.stderr
    return next((ws / "requests").glob("*.json")).stem


def record(ws: Path, request_id: str) -> dict[str, Any]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


def test_without_the_token_there_is_nothing_but_401(phone: Page, serve: Serve, ws: Path) -> None:
    escalate(ws)
    response = phone.goto(serve.base + "/")
    assert response is not None and response.status == 401
    assert "Which flow" not in phone.content()


def test_the_list_on_a_phone_every_asset_from_loopback(phone: Page, serve: Serve, ws: Path) -> None:
    escalate(ws)
    phone.goto(f"{serve.base}/?token={serve.token}")
    assert serve.token not in phone.url and phone.url.rstrip("/") == serve.base
    (cookie,) = phone.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert phone.get_by_text("Which flow?").is_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 360  # no sideways scroll
    for button in phone.locator("button").all():
        box = button.bounding_box()
        assert box is not None and box["height"] >= 44 and box["width"] >= 300
    # The live update's own fetch is part of the page too.
    phone.wait_for_event("request", lambda r: "fragment=list" in r.url, timeout=5000)
    seen: list[str] = phone.seen  # type: ignore[attr-defined]
    assert seen and all(url.startswith(serve.base) for url in seen), seen
    assert any(url.endswith("/static/inbox.css") for url in seen)
    assert any(url.endswith("/static/inbox.js") for url in seen)


def test_a_tap_resumes_the_waiting_supervisor(phone: Page, serve: Serve, ws: Path) -> None:
    setup(ws, 'max_verify_failures = 1\n[escalation]\nchannel = "none"')
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked")
        phone.goto(f"{serve.base}/?token={serve.token}")
        phone.get_by_role("button", name="A) Retry with a hint").click()
        phone.wait_for_url(re.compile(r"done=1"))
        assert "Answered" in phone.content()
        wait_until(lambda: len(runs(ws)) >= 2, 20, "the agent runs again")
        answered = [r for r in records(ws) if r.get("resolution")]
        resolution = answered[0]["resolution"]
        assert isinstance(resolution, dict)
        assert resolution["via"] == "inbox" and resolution["by"] == "ana"
        assert runs(ws)[1][1] != ""  # the decision reached the next agent run


def test_the_list_follows_an_answer_given_elsewhere(phone: Page, serve: Serve, ws: Path) -> None:
    rid = escalate(ws)
    phone.goto(f"{serve.base}/?token={serve.token}")
    assert phone.get_by_text("Which flow?").is_visible()
    done = loopkit("-C", str(ws), "reply", "--request-id", rid, "--reply", "A")
    assert done.returncode == 0, done.stderr
    phone.get_by_text("No open questions").wait_for(timeout=2000)  # within 2 s


def test_a_stale_button_says_already_answered(phone: Page, serve: Serve, ws: Path) -> None:
    rid = escalate(ws)
    # No live update, from before the page's script runs: the button stays stale. (Turned
    # off after the page loaded, a tick already in flight could still bring the answer.)
    phone.add_init_script("window.fetch = undefined")
    phone.goto(f"{serve.base}/?token={serve.token}")
    assert loopkit("-C", str(ws), "reply", "--request-id", rid, "--reply", "A").returncode == 0
    phone.get_by_role("button", name="B) Migrate").click()
    # The click returns when the answer's page commits, before it is parsed: wait for it.
    expect(phone.get_by_text(re.compile(r"Already answered by .+ via cli"))).to_be_visible()
    assert record(ws, rid)["resolution"]["chosen_option"] == "keep"


def test_a_review_approve_waits_for_i_checked_it(phone: Page, serve: Serve, ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    asked = loopkit("-C", str(ws), "ask", "-s", "Notes drafted.", "-p", "reviews need a human",
                    "-q", "Approve the release notes?", "--kind", "review",
                    "--check-target", "docs/RELEASE.md", "--json")  # fmt: skip
    rid = json.loads(asked.stdout)["request_id"]
    phone.goto(f"{serve.base}/?token={serve.token}")
    phone.get_by_role("link", name="Review it").click()
    approve = phone.get_by_role("button", name="A) Approve")
    expect(approve).to_be_disabled()  # by the page's script, which runs after the click
    phone.get_by_label("I checked it").check()
    expect(approve).to_be_enabled()
    approve.click()
    phone.wait_for_url(re.compile(r"done=1"))
    assert record(ws, rid)["resolution"]["outcome"] == "approved"


def test_a_gate_approved_in_the_browser_runs(phone: Page, serve: Serve, ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    first = loopkit("-C", str(ws), "gate", "--", "sh", "-c", "echo ran > gated.txt", cwd=ws)
    assert first.returncode == 2, first.stderr
    phone.goto(f"{serve.base}/?token={serve.token}")
    assert phone.get_by_text("Approve running").is_visible()
    phone.get_by_role("button", name="A) Approve").click()
    # An irreversible approval takes two taps: the first asks again and records nothing.
    phone.get_by_text("This cannot be undone.").wait_for(timeout=10_000)
    [path] = (ws / "requests").glob("*.json")
    assert record(ws, path.stem)["status"] == "open"
    phone.get_by_role("button", name="Yes, approve").click()
    phone.wait_for_url(re.compile(r"done=1"))
    again = loopkit("-C", str(ws), "gate", "--", "sh", "-c", "echo ran > gated.txt", cwd=ws)
    assert again.returncode == 0, again.stderr
    assert (ws / "gated.txt").read_text() == "ran\n"


def test_dismiss_takes_two_taps_and_resumes_nothing(phone: Page, serve: Serve, ws: Path) -> None:
    rid = escalate(ws)
    (ws / "BLOCKED.md").unlink()  # a ghost: nobody will answer it now
    phone.goto(f"{serve.base}/?token={serve.token}")
    assert phone.get_by_text("nobody will answer it").is_visible()
    phone.get_by_role("link", name="Which flow?").click()
    phone.get_by_role("button", name="Dismiss", exact=True).click()
    phone.get_by_text("Dismiss this request?").wait_for(timeout=10_000)
    assert record(ws, rid)["status"] == "open"
    assert phone.evaluate("document.documentElement.scrollWidth") <= 360
    phone.get_by_label("Why (optional)").fill("asked by an old run")
    phone.get_by_role("button", name="Dismiss it").click()
    phone.get_by_text("Dismissed (nobody was to answer it)").wait_for(timeout=10_000)
    resolution = record(ws, rid)["resolution"]
    assert record(ws, rid)["status"] == "dismissed"
    assert (resolution["by"], resolution["reason"]) == ("ana", "asked by an old run")
    phone.goto(f"{serve.base}/")
    assert phone.get_by_text("No open questions").is_visible()


def test_ten_requests_weigh_under_30_kb(phone: Page, serve: Serve, tmp_path: Path) -> None:
    for number in range(10):
        folder = tmp_path / f"loop{number}"
        folder.mkdir()
        escalate(folder, f"Question number {number}: which way?")
    sizes: dict[str, int] = {}
    phone.on(
        "response", lambda r: sizes.__setitem__(r.url, len(r.body())) if r.status == 200 else None
    )
    phone.goto(f"{serve.base}/?token={serve.token}")
    assert phone.locator("article").count() == 10
    total = sum(v for k, v in sizes.items() if "fragment" not in k)
    print(f"inbox list with 10 requests: {total} bytes (HTML+JS+CSS)")
    assert total <= 30_000
