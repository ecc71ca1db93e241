"""Each workspace answers through the hub its own configuration names (SPEC section 15),
in process, against a real PostgreSQL server.

"Machines" are LOOPKIT_HOMEs: a PgHub takes its machine's name from the home it was made
under. The defect this guards against: loading a workspace without ``[fleet] dsn`` switched
a process-wide hub to the local one, so a fleet workspace's own answers skipped the fleet's
compare-and-set and two machines could both answer one request.

The Loops page on one machine lists another machine's loop (as that machine's follower
publishes it) and steers it through the fleet (SPEC section 22).
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from loopkit import config, loops
from loopkit.answering import answer
from loopkit.errors import RequestConflict
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs, LoopRows
from loopkit.fleet.follow import Follower
from loopkit.fleet.pg import PgHub
from loopkit.fleet.publishing import Publishing
from loopkit.home import Registry
from loopkit.inbox.auth import InboxToken, Throttle
from loopkit.inbox.pages import remote_key
from loopkit.inbox.web import Inbox, app
from loopkit.liveness import start_ticks
from loopkit.requests.hub import LocalHub
from loopkit.requests.locate import Stores
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from helpers import Browser, wait_until


@pytest.fixture
def made() -> Iterator[list[Hubs]]:
    hubs: list[Hubs] = []
    yield hubs
    for each in hubs:
        each.close()


def hubs_of(
    monkeypatch: pytest.MonkeyPatch, home: Path, made: list[Hubs], dsn: str, *, env: bool = False
) -> Hubs:
    """A machine's hubs: its fleet's hub made while LOOPKIT_HOME names its home (a PgHub
    takes its machine's name then). ``env``: the machine has LOOPKIT_FLEET_DSN set."""
    monkeypatch.setenv("LOOPKIT_HOME", str(home))
    made.append(Hubs(environ={"LOOPKIT_FLEET_DSN": dsn} if env else {}))
    made[-1].for_dsn(dsn)
    return made[-1]


def workspace(root: Path, toml: str) -> config.Config:
    root.mkdir(parents=True)
    (root / "loopkit.toml").write_text(toml)
    return config.load(root, environ={"LOOPKIT_HITL_CHANNEL": "none"})


def ask(cfg: config.Config, store: RequestStore) -> str:
    escalation = Escalation(
        "Which flow?", "checkout", ["read the spec"],
        [parse_choice("Keep — as is"), parse_choice("Migrate — to v2")],
    )  # fmt: skip
    return Escalator(cfg, store=store).escalate(escalation).request.request_id


def asked_on_a(
    tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch, made: list[Hubs]
) -> tuple[Hubs, config.Config, RequestStore, str]:
    """Machine a's hubs, its fleet workspace, that workspace's store, and a question asked."""
    hubs_a = hubs_of(monkeypatch, tmp_path / "home-a", made, dsn)
    fleet_cfg = workspace(tmp_path / "fleet-ws", f'[fleet]\ndsn = "{dsn}"\n')
    store = RequestStore(Workspace.of(fleet_cfg), hub=hubs_a.for_config(fleet_cfg))
    return hubs_a, fleet_cfg, store, ask(fleet_cfg, store)


def test_loading_a_workspace_without_a_fleet_changes_no_other_workspace_hub(
    tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch, made: list[Hubs]
) -> None:
    hubs_a, fleet_cfg, store, request_id = asked_on_a(tmp_path, dsn, monkeypatch, made)

    # The process now loads a workspace of this machine alone, as serve, the relay, the
    # follower and the inbox do: nothing about the fleet workspace's store changes.
    plain_cfg = workspace(tmp_path / "plain-ws", "[loop]\npause = 1\n")
    stores = Stores(hubs_a.for_config)
    stores.add(fleet_cfg, store)
    assert isinstance(stores.of(plain_cfg.workspace).hub, LocalHub)
    assert isinstance(stores.of(fleet_cfg.workspace).hub, PgHub)
    assert stores.of(fleet_cfg.workspace) is store

    # Machine b answers first, through the fleet's compare-and-set ...
    hubs_b = hubs_of(monkeypatch, tmp_path / "home-b", made, dsn)
    found = hubs_b.for_dsn(dsn).find(request_id)
    assert found is not None
    hubs_b.for_dsn(dsn).answer_remote(found, "B", by="bo", via="cli", about=None)
    # ... so machine a's own answer, given after loading the plain workspace, must lose.
    with pytest.raises(RequestConflict):
        answer(store, request_id, "A", by="ana", via="cli")
    assert store.load(request_id).is_open  # the follower applies b's answer; a's never stood


def race(*answers: Callable[[], object]) -> list[int]:
    """Run the answers at once; the indexes of those that were not refused."""
    start = threading.Barrier(len(answers))
    won: list[int] = []

    def one(index: int) -> None:
        start.wait()
        try:
            answers[index]()
            won.append(index)
        except RequestConflict:
            pass

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(answers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return won


def test_two_machines_answering_at_once_make_one_winner(
    tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch, made: list[Hubs]
) -> None:
    hubs_a = hubs_of(monkeypatch, tmp_path / "home-a", made, dsn)
    hubs_b = hubs_of(monkeypatch, tmp_path / "home-b", made, dsn)
    for round_ in range(5):
        fleet_cfg = workspace(tmp_path / f"fleet-{round_}", f'[fleet]\ndsn = "{dsn}"\n')
        store = RequestStore(Workspace.of(fleet_cfg), hub=hubs_a.for_config(fleet_cfg))
        request_id = ask(fleet_cfg, store)
        Stores(hubs_a.for_config).of(workspace(tmp_path / f"plain-{round_}", "").workspace)
        remote = hubs_b.for_dsn(dsn).find(request_id)
        assert remote is not None
        on_b = hubs_b.for_dsn(dsn).answer_remote
        won = race(
            partial(answer, store, request_id, "A", by="ana", via="cli"),
            partial(on_b, remote, "B", by="bo", via="cli", about=None),
        )
        assert len(won) == 1, f"round {round_}: {won} both answered one request"


def test_one_hub_per_dsn_and_the_local_one_without(dsn: str, made: list[Hubs]) -> None:
    hubs = Hubs(environ={"LOOPKIT_FLEET_DSN": dsn})
    made.append(hubs)
    assert hubs.for_dsn(dsn) is hubs.for_dsn(dsn)
    assert hubs.for_dsn(None) is hubs.local
    assert hubs.fleets() == [hubs.for_dsn(dsn)]
    assert Hubs(environ={}).fleets() == []


def test_other_machines_loops_say_whether_a_fleet_was_not_reached(
    dsn: str, made: list[Hubs]
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        nobody = f"postgresql://loopkit@127.0.0.1:{sock.getsockname()[1]}/gone"
    both = Hubs(environ={"LOOPKIT_FLEET_DSN": dsn})
    made.append(both)
    both.for_dsn(nobody)
    assert both.remote_loop_rows() == LoopRows([], unreached=True)
    reached = Hubs(environ={"LOOPKIT_FLEET_DSN": dsn})
    made.append(reached)
    assert reached.remote_loop_rows() == LoopRows([], unreached=False)
    assert Hubs(environ={}).remote_loop_rows() == LoopRows([], unreached=False)


def test_a_tap_in_the_web_inbox_on_another_machines_request_shows_its_answer(
    tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch, made: list[Hubs]
) -> None:
    hubs_a, fleet_cfg, _, request_id = asked_on_a(tmp_path, dsn, monkeypatch, made)

    hubs_b = hubs_of(monkeypatch, tmp_path / "home-b", made, dsn, env=True)
    token = InboxToken(tmp_path / "home-b")
    token.ensure()
    client = Browser(app(Inbox(token, "ana", Throttle(), Stores(hubs_b.for_config), hubs_b)))
    client.get(f"/?token={token.value()}", follow_redirects=False)
    listing = client.get("/").text
    assert "Which flow?" in listing
    machine_a = hubs_a.pg_hubs()[0].machine
    url = f"/r/{remote_key(machine_a, str(fleet_cfg.workspace))}/{request_id}"
    assert f'href="{url}"' in listing
    csrf = listing.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    done = client.post(f"{url}/answer", data={"csrf": csrf, "reply": "B"}, follow_redirects=False)
    assert done.status_code == 303, done.text
    page = client.get(done.headers["location"]).text
    assert 'data-status="resolved"' in page
    assert "Answered: open" not in page
    assert 'name="reply"' not in page, "the buttons are still there"
    assert "No open questions" in client.get("/").text


def test_the_loops_page_lists_and_steers_another_machine_s_loop(
    tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch, made: list[Hubs]
) -> None:
    # Machine a: a fleet workspace whose supervisor runs (this process plays it), and a's
    # follower as `serve` runs it — publishing every loop of a, landing orders for them.
    hubs_a = hubs_of(monkeypatch, tmp_path / "home-a", made, dsn)
    shop = workspace(tmp_path / "shop", f'[fleet]\ndsn = "{dsn}"\n')
    state = {"status": "running", "pid": os.getpid(), "pid_start": start_ticks(os.getpid()),
             "iteration": 4, "task": "add the price endpoint"}  # fmt: skip
    (shop.workspace / ".loopkit").mkdir()
    (shop.workspace / ".loopkit" / "state.json").write_text(json.dumps(state))
    Registry().register(shop.workspace, "shop")
    stop = threading.Event()
    follower = Follower(hubs_a.pg_hubs()[0], Stores(hubs_a.for_config), stop, None,
                        Publishing(loops.describe))  # fmt: skip
    thread = threading.Thread(target=follower.run, daemon=True)
    thread.start()
    try:
        # Machine b's inbox: a's loop is there, with its machine, and its buttons work.
        hubs_b = hubs_of(monkeypatch, tmp_path / "home-b", made, dsn, env=True)
        token = InboxToken(tmp_path / "home-b")
        token.ensure()
        client = Browser(app(Inbox(token, "ana", Throttle(), Stores(hubs_b.for_config), hubs_b)))
        client.get(f"/?token={token.value()}", follow_redirects=False)
        machine_a = hubs_a.pg_hubs()[0].machine
        wait_until(lambda: f"on {machine_a}" in client.get("/loops").text, 10, "a's loop listed")
        page = client.get("/loops").text
        assert 'data-repo="shop" data-state="running"' in page
        key = loops.remote_key(machine_a, str(shop.workspace))
        assert f'action="/loops/{key}/pause"' in page and f'action="/loops/{key}/stop"' in page
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        done = client.post(f"/loops/{key}/pause", data={"csrf": csrf}, follow_redirects=False)
        assert done.status_code == 303, done.text
        assert "pause+sent" in done.headers["location"]
        noted = client.post(f"/loops/{key}/note", data={"csrf": csrf, "note": "use staging"},
                            follow_redirects=False)  # fmt: skip
        assert noted.status_code == 303, noted.text
        steer = shop.workspace / ".loopkit" / "control" / "steer.json"
        wait_until(steer.exists, 10, "a's follower lands the pause")
        order = json.loads(steer.read_text())
        assert (order["command"], order["by"], order["via"]) == ("pause", "ana", "inbox")
        notes = shop.workspace / ".loopkit" / "control" / "notes"
        wait_until(lambda: notes.exists() and len(list(notes.iterdir())) == 1, 10, "the note")
        # …and b's page says so within a beat: paused given, one note waiting.
        wait_until(lambda: "1 note(s) waiting" in client.get("/loops").text, 12, "a republished")
        assert "Paused: pause by ana via inbox" in client.get("/loops").text
    finally:
        stop.set()
        thread.join(10)
