"""The Loops page in a real browser (SPEC §22): the distribution's Chromium driven by
Playwright at 360 px, against a real ``loopkit serve`` and a real ``loopkit run``.

Every loop of the machine with its state; buttons a thumb can hit (≥ 44 px); a change made
elsewhere (the CLI) shows within 2 s; Pause and Resume act on the running supervisor; Stop
needs a second tap. With ``LOOPS_SCREENSHOT=PATH`` the test also saves the page as the
docs show it (``docs/loops-page.png`` was taken so).
"""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Locator, Page, expect
from test_inbox_browser import CHROMIUM, Serve, escalate
from test_inbox_browser import browser as browser  # the fixtures, shared
from test_inbox_browser import phone as phone
from test_inbox_browser import serve as serve

from helpers import AGENT, Daemon, clean_env, loopkit, setup, wait_until

assert CHROMIUM is not None  # test_inbox_browser skipped this module otherwise


def _folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    return path


def _card(page: Page, repo: str) -> Locator:
    return page.locator(f"article.loop[data-repo='{repo}']")


def test_the_loops_page_steers_a_running_loop(phone: Page, serve: Serve, tmp_path: Path) -> None:
    billing = _folder(tmp_path, "billing")
    escalate(billing, "Drop the legacy invoices table?")  # blocked, with its question
    docs = _folder(tmp_path, "docs-site")
    setup(docs, 'done = ["true"]', verify="echo '12 passed'\n")
    assert loopkit("-C", str(docs), "run").returncode == 0  # finished
    shop = _folder(tmp_path, "shop-api")
    # A healthy loop: each run adds a module (new ground, SPEC §25), so nothing asks.
    working = (
        AGENT + 'echo "def step(): return $LOOPKIT_ITERATION" > "step_$LOOPKIT_ITERATION.py"\n'
    )
    setup(shop, 'pause = "0.2s"', agent=working + "sleep 0.3\n", verify="echo '48 passed'\n")
    with Daemon(shop) as daemon:
        daemon.wait_state(status="running")
        phone.goto(f"{serve.base}/loops?token={serve.token}")
        card = _card(phone, "shop-api")
        expect(card).to_have_attribute("data-state", "running")
        expect(_card(phone, "billing")).to_have_attribute("data-state", "blocked")
        expect(_card(phone, "billing")).to_contain_text("Drop the legacy invoices table?")
        expect(_card(phone, "docs-site")).to_have_attribute("data-state", "finished")
        assert phone.evaluate("document.documentElement.scrollWidth") <= 360
        # Every button (and the note box's summary) a thumb can hit, measured in one go (the
        # live update replaces the cards every second); a closed note box's button is hidden,
        # and measured once it is opened below.
        sizes = phone.evaluate(
            "[...document.querySelectorAll('button, summary')].filter(e => e.offsetParent)"
            ".map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })"
        )
        assert len(sizes) >= 6 and all(w >= 44 and h >= 44 for w, h in sizes), sizes
        # Paused elsewhere (the CLI): the page shows it within 2 s, without a reload.
        assert loopkit("-C", str(shop), "pause").returncode == 0
        expect(card).to_have_attribute("data-state", "paused", timeout=2000)
        expect(card).to_contain_text("Paused: pause by")
        daemon.wait_state(status="paused")
        # Resume from the page: the loop goes on.
        card.get_by_role("button", name="Resume").click()
        expect(phone.get_by_role("status")).to_contain_text("shop-api: resumed")
        wait_until(lambda: daemon.state().get("status") == "running", what="resumed")
        # A message from the page: the agent takes none mid-turn, so its next run gets it.
        card = _card(phone, "shop-api")
        card.locator("summary").click()
        send = card.get_by_role("button", name="Send message").bounding_box()
        assert send is not None and send["height"] >= 44
        card.locator("textarea").fill("use the staging database")
        card.get_by_role("button", name="Send message").click()
        expect(phone.get_by_role("status")).to_contain_text("noted for its next agent run")
        wait_until(lambda: not list((shop / ".loopkit" / "control" / "notes").iterdir()),
                   what="the note taken by the next agent run")  # fmt: skip
        # Pause from the page, then the screenshot the docs show.
        _card(phone, "shop-api").get_by_role("button", name="Pause").click()
        expect(_card(phone, "shop-api")).to_have_attribute("data-state", "paused", timeout=5000)
        shot = os.environ.get("LOOPS_SCREENSHOT")
        if shot:
            phone.screenshot(path=shot, full_page=True)
        # Stop: the first tap only asks; the loop runs on.
        _card(phone, "shop-api").get_by_role("button", name="Stop").click()
        expect(phone.get_by_role("heading", name="Stop shop-api?")).to_be_visible()
        assert daemon.proc.poll() is None
        phone.get_by_role("button", name="Yes, stop it").click()
        assert daemon.wait() == 143
    events = (shop / ".loopkit" / "events.jsonl").read_text()
    assert '"event": "steer_stop_given"' in events and '"via": "inbox"' in events
    assert '"by": "ana"' in events
    rows = loopkit("ps", "--json", env=clean_env()).stdout
    assert '"repo": "shop-api", "workspace"' in rows
