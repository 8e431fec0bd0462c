"""Issue 11's "done when", in the browser: ``docs/deploy.md``'s two ``cardtable serve --redis`` processes on one
PostgreSQL and one Redis; a person opens a table with bots (Nerts, then Enemy Anemone) in the lobby of one process, a second person joins
it from the lobby of the other (so one of them is relayed), both play real moves through the page; then the
process that owns the table is killed (SIGKILL). The browser on the surviving process reconnects by itself; the
one whose process died is pointed at the survivor (as a person would open the other address; behind the nginx of
``docs/deploy.md`` it would reconnect by itself, which ``tests/test_server_cluster_nginx.py`` checks). Both play on,
past the kill, and every action either browser was acknowledged (``ack``: its ``seq`` and version, read from the
page's WebSocket frames) is in the stored record, at that version, as that seat's action.

Screenshots before and after the kill: ``screenshots/cluster-{game}-{before,after}-{owner,relayed}-1280x720.png``.
"""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, WebSocket, expect
from redis import Redis
from webhelpers import sit, state

from cluster_harness import Proc, stored_actions, wait_for
from services import Postgres, new_database

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

PACE = {"CARDTABLE_BOT_PACE": "1", "CARDTABLE_HAND_PAUSE": "1", "CARDTABLE_DEFAULT_READY_S": "1",
        "CARDTABLE_CREATES_PER_MINUTE": "1000"}
"""Nerts bots at a person's pace, so that the hand is still on when the owner dies."""

BOTS = {"nerts": "greedy:easy", "anemone": "heuristic"}
BOARD = {"nerts": ".layout.mine", "anemone": ".anemone-table .myhand"}
"""The page's own board in each game."""


@dataclass
class Person:
    """One browser (its own context) and the WebSocket frames its page sent and received, by socket."""

    name: str
    page: Page
    frames: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    """``(socket number, "sent" | "received", message)`` in order."""
    sockets: int = 0

    def watch(self) -> None:
        def on_socket(ws: WebSocket) -> None:
            number = self.sockets
            self.sockets += 1

            def keep(direction: str, payload: str | bytes) -> None:
                with contextlib.suppress(ValueError):
                    self.frames.append((number, direction, json.loads(payload)))

            ws.on("framesent", lambda payload: keep("sent", payload))
            ws.on("framereceived", lambda payload: keep("received", payload))

        self.page.on("websocket", on_socket)

    def acks(self) -> list[tuple[int, dict[str, Any]]]:
        """Every acknowledged action: ``(version, action)``."""
        sent = {(n, m["seq"]): m["action"] for n, d, m in list(self.frames) if d == "sent" and m.get("type") == "action"}
        return [(int(m["v"]), sent[(n, m["seq"])]) for n, d, m in list(self.frames)
                if d == "received" and m.get("type") == "ack"]

    def last_version(self) -> int:
        """The highest version this page was sent (snapshots, updates, acks)."""
        return max((int(m["v"]) for _, d, m in list(self.frames) if d == "received" and "v" in m), default=-1)


def settle(page: Page, condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait for ``condition`` while Playwright runs (its events, such as WebSocket frames, are delivered only while
    a Playwright call waits, never during ``time.sleep``); ``AssertionError`` naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        page.wait_for_timeout(50)


def answers(person: Person) -> int:
    """How many ``ack`` and ``reject`` messages the page received."""
    return sum(1 for _, d, m in list(person.frames) if d == "received" and m.get("type") in ("ack", "reject"))


def nerts_move(page: Page, st: dict[str, Any]) -> bool:
    """One Nerts move as a person makes it: a double-click sends a card to a foundation; else the Flip, Cycle,
    Stuck or Nerts button. False when there is nothing to do."""
    legal = st["legal"]
    fits = [a for a in legal if a["type"] == "move" and a["to"].startswith("foundation") and "as" not in a]
    if fits:
        page.locator(f'.layout.mine .pile[data-pile="{fits[0]["from"]}"] .card[data-card]').last.dblclick(timeout=2000)
        return True
    kinds = {a["type"] for a in legal}
    button = next((b for b in ("flip", "cycle", "stuck", "nerts") if b in kinds), None)
    if button is None:
        return False
    page.locator("#call-nerts" if button == "nerts" else f"#{button}").click(timeout=2000)
    return True


def anemone_move(page: Page, st: dict[str, Any]) -> bool:
    """One Enemy Anemone play on the person's turn: a click on a marked card (or on a card to discard)."""
    view = st["view"]
    if view.get("turn") != st["seat"]:
        return False
    if page.locator("section.trick.held").count():  # the last trick is held on the table: click to go on
        page.locator("section.trick.held").click(timeout=2000)
        return False
    card = view["hand"][0] if view.get("must_discard") else (view.get("playable") or [None])[-1]
    if card is None:
        return False
    # force: a card the page points at (a hint) pulses, and Playwright waits for a still element before a click
    page.locator(f'.handcards .ccard[data-card="{card}"]').click(timeout=2000, force=True)
    return True


MOVES = {"nerts": nerts_move, "anemone": anemone_move}


def move(person: Person, game: str) -> bool:
    """Make one move through the page, if there is one to make, and wait for its answer; True when it was
    acknowledged."""
    page = person.page
    st = state(page)
    view = st.get("view")
    if not st.get("legal") or not view or view.get("over"):
        return False
    before, answered = len(person.acks()), answers(person)
    try:
        if not MOVES[game](page, st):
            return False
        settle(page, lambda: answers(person) > answered, 5, "an answer")
    except Exception:
        return False  # the table moved on under the click (a bot played first, the hand ended)
    return len(person.acks()) > before


def play(people: list[Person], game: str, moves: int, timeout: float, above: int = -1) -> None:
    """Make moves in every page until each has ``moves`` more acknowledged (at versions above ``above``)."""
    def done(person: Person) -> int:
        return sum(1 for v, _ in person.acks() if v > above)

    targets = [done(p) + moves for p in people]
    deadline = time.monotonic() + timeout
    while any(done(p) < t for p, t in zip(people, targets, strict=True)):
        assert time.monotonic() < deadline, f"{[done(p) for p in people]} of {targets} moves acknowledged"
        if not any([move(p, game) for p in people]):
            people[0].page.wait_for_timeout(200)


@pytest.fixture
def cluster(postgres: Postgres, redis_url: str, tmp_path: Path) -> Any:
    """``docs/deploy.md``'s two processes (short leases, as ``--lease-ms``/``--sweep-s`` allow) and their database."""
    db = new_database(postgres)  # Playwright's event loop may be running in this thread (services.run_async)
    procs = [Proc(db, redis_url, tmp_path / f"{n}.log", env=PACE) for n in "ab"]
    for proc in procs:
        proc.start(wait=False)
    try:
        for proc in procs:
            wait_for(proc.ready, 90, f"the server on port {proc.port} to answer")
        yield db, procs
    finally:
        for proc in procs:
            if proc.alive:
                proc.stop(signal.SIGKILL)


@pytest.mark.parametrize("game", ["nerts", "anemone"])
def test_two_browsers_on_two_processes_play_on_after_the_owner_dies(browser: Browser, cluster: Any, redis_url: str,
                                                                     screenshots: Path, game: str) -> None:
    db, (a, b) = cluster
    errors: list[str] = []
    people: list[Person] = []
    for name in ("ana", "bea"):
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        person = Person(name, context.new_page())
        person.page.on("pageerror", lambda e: errors.append(str(e)))
        person.watch()
        people.append(person)
    ana, bea = people

    # ana opens a table in the lobby of process a: two people, two bots.
    ana.page.goto(a.base + "/")
    ana.page.wait_for_selector(".playnow-btn")
    ana.page.fill("#player-name", "ana")
    ana.page.click("#custom > summary")
    if game == "anemone":
        ana.page.click("button[data-game=anemone]")
        ana.page.fill("[name=players]", "4")
    else:
        ana.page.fill("[name=target_score]", "1000")
    ana.page.select_option("select.seat-kind[data-seat='1']", "open")
    for seat in (2, 3):
        ana.page.select_option(f"select.seat-kind[data-seat='{seat}']", BOTS[game])
    ana.page.click("#create")
    ana.page.wait_for_url("**/?table=*")
    tid = ana.page.url.split("table=")[1]
    ana.page.wait_for_selector("#start")

    # bea finds it in the lobby of process b (read from the shared database) and joins.
    bea.page.goto(b.base + "/")
    bea.page.locator(f"[data-join='{tid}']").click(timeout=20000)
    bea.page.fill("#join-name", "bea")
    bea.page.click("#join")
    bea.page.wait_for_selector(".waiting, .layout.mine")
    expect(ana.page.locator("#start")).to_be_enabled(timeout=20000)
    ana.page.click("#start")
    for person in people:
        person.page.wait_for_selector(BOARD[game], timeout=30000)
        person.page.wait_for_function("() => window.__ct?.view", timeout=30000)
    assert [state(p.page)["seat"] for p in people] == [0, 1]

    play(people, game, 3, 90)
    lease = Redis.from_url(redis_url).get(f"ct:lease:{tid}")
    assert lease is not None
    owner_pid = int(lease.decode().rsplit(":", 1)[0].split("-")[-2])
    owner, survivor = (a, b) if a.proc is not None and a.proc.pid == owner_pid else (b, a)
    on_owner, relayed = (ana, bea) if owner is a else (bea, ana)
    for person, role in ((on_owner, "owner"), (relayed, "relayed")):
        person.page.screenshot(path=str(screenshots / f"cluster-{game}-before-{role}-1280x720.png"))

    owner.stop(signal.SIGKILL)
    killed_at = time.monotonic()
    at_kill = max(p.last_version() for p in people)
    acked_before = {p.name: p.acks() for p in people}

    # The relayed browser's page reconnects by itself (conn.js) to its own process, which takes the table; the
    # browser whose process died opens the survivor's address with its seat (kept in that origin's storage).
    seat_of_dead = state(on_owner.page)["seat"]
    token = on_owner.page.evaluate(f"() => JSON.parse(localStorage.getItem('ct.seat.{tid}')).token")
    sit(on_owner.page, survivor.base, tid, seat_of_dead, token)
    for person in people:
        person.page.wait_for_selector(BOARD[game], timeout=60000)
    play(people, game, 2, 90, above=at_kill)
    print(f"{game}: both browsers had two moves acknowledged past the kill {time.monotonic() - killed_at:.1f} s after it")
    for person, role in ((on_owner, "owner"), (relayed, "relayed")):
        person.page.screenshot(path=str(screenshots / f"cluster-{game}-after-{role}-1280x720.png"))

    # Nothing acknowledged is lost: every ack, before and after the kill, is that seat's action at that version.
    stored = stored_actions(db, tid)
    for seat, person in enumerate(people):
        acks = person.acks()
        assert acks[:len(acked_before[person.name])] == acked_before[person.name]
        assert any(v > at_kill for v, _ in acks), f"{person.name} moved after the kill"
        for v, action in acks:
            assert v <= len(stored), f"{person.name}: version {v} acknowledged but not stored ({len(stored)})"
            assert stored[v - 1] == (seat, action), f"{person.name}: version {v} stored as {stored[v - 1]}"
    assert not errors, errors
