"""Shared moves for the browser tests: drag with the mouse, read the page's state, seat tokens."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from typing import Any

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Locator, Page

from polling import wait_for

AXE = Axe()


def state(page: Page) -> dict[str, Any]:
    """The page's latest known table state (``window.__ct``: seat, view, legal, v, table)."""
    return page.evaluate("() => JSON.parse(JSON.stringify(window.__ct || {}))")


def drag(page: Page, src: Locator, dst: Locator, steps: int = 8) -> bool:
    """Drag from the middle of ``src`` to the middle of ``dst`` with the mouse (pointer events).

    Returns False (and does nothing) when either end is not on the page any more: the table moves on while a
    test decides, since bots play at the same time.
    """
    try:
        a = src.bounding_box(timeout=500)
        b = dst.bounding_box(timeout=500)
    except Exception:
        return False
    if not (a and b):
        return False
    page.mouse.move(a["x"] + a["width"] / 2, a["y"] + min(12, a["height"] / 2))
    page.mouse.down()
    page.mouse.move(a["x"] + a["width"] / 2 + 8, a["y"] + 20, steps=2)
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2, steps=steps)
    page.mouse.up()
    return True


def sit(page: Page, base: str, table_id: str, seat: int, token: str) -> None:
    """Store a seat token the way the lobby does, then open the table."""
    page.goto(base + "/?howto=nerts")
    page.evaluate("([id, seat, token]) => localStorage.setItem(`ct.seat.${id}`, JSON.stringify({seat, token}))",
                  [table_id, seat, token])
    page.goto(f"{base}/?table={table_id}")


def api(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """Call the lobby API; returns the decoded JSON answer (raises on an HTTP error)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as res:
        return json.loads(res.read() or b"null")


def axe_serious(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on ``page`` as it is now: ``[{"id", "impact", "nodes"}]`` (the
    first five nodes' selectors), after cards have landed (a card mid-animation is half transparent)."""
    page.wait_for_timeout(300)
    results = AXE.run(page)
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in results.response["violations"] if v["impact"] in ("serious", "critical")
    ]


def started_table(base: str, body: dict[str, Any]) -> tuple[str, int, str]:
    """Create a table (``POST /api/tables`` with ``body``) and start it (a table of one person and bots may also start
    by itself); returns its id, the creator's seat and seat token."""
    res = api(base, "POST", "/api/tables", body)
    tid, token = res["table"]["id"], res["token"]
    with contextlib.suppress(Exception):
        api(base, "POST", f"/api/tables/{tid}/start", {"token": token})
    return tid, res["seat"], token


def wait_finished(base: str, table_id: str, timeout_s: float = 300) -> None:
    """Wait (a look every 0.5 s, ``timeout_s`` seconds at most: ``AssertionError`` after) until the match of table
    ``table_id`` is over (``GET /api/tables/{id}`` says ``finished``)."""
    wait_for(
        lambda: api(base, "GET", f"/api/tables/{table_id}")["status"] == "finished",
        timeout_s,
        "the match's end",
        every=0.5,
    )


def left_to_finish(base: str, body: dict[str, Any], timeout_s: float = 300) -> tuple[str, str]:
    """Create a table (``POST /api/tables`` with ``body``, best with ``"grace_seconds": 0`` so that the stand-in plays
    the creator's seat at once), start it, leave the creator's seat and wait for the match's end
    (:func:`wait_finished`); returns its id and the creator's seat token."""
    made = api(base, "POST", "/api/tables", body)
    tid, token = made["table"]["id"], made["token"]
    api(base, "POST", f"/api/tables/{tid}/start", {"token": token})
    api(base, "POST", f"/api/tables/{tid}/leave", {"token": token})
    wait_finished(base, tid, timeout_s)
    return tid, token
