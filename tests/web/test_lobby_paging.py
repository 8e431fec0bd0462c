"""The lobby follows the server's paging of GET /api/tables (``limit``, ``cursor``, ``X-Next-Cursor``): a list shows
its first page and a "More" button while more follow; each press loads the next page; the button goes when the
last page is shown."""

from __future__ import annotations

import json
import urllib.request

import pytest
from playwright.sync_api import Page, expect
from webhelpers import api

pytestmark = pytest.mark.browser

LOBBY_PAGE = 20  # lobby.js LOBBY_PAGE


def _open_ids(server: str) -> list[str]:
    """Every open table, oldest first, following the cursor."""
    ids: list[str] = []
    cursor = ""
    while True:
        url = f"{server}/api/tables?status=open&limit=50" + (f"&cursor={cursor}" if cursor else "")
        with urllib.request.urlopen(url, timeout=10) as res:
            ids += [t["id"] for t in json.loads(res.read())]
            cursor = res.headers.get("X-Next-Cursor") or ""
        if not cursor:
            return ids


def test_more_loads_the_next_page_of_open_tables(page: Page, server: str) -> None:
    made = [api(server, "POST", "/api/tables", {"game": "nerts", "options": {"players": 2}, "name": "pager"})["table"]["id"]
            for _ in range(LOBBY_PAGE + 5)]
    every = _open_ids(server)
    assert set(made) <= set(every) and len(every) > LOBBY_PAGE
    page.goto(server + "/")
    rows = page.locator("#open-tables li.table-row")
    more = page.locator('#open-tables button.more[data-more="open"]')
    expect(rows).to_have_count(LOBBY_PAGE)
    expect(more).to_be_visible()
    first = [r.get_attribute("data-table") for r in rows.all()]
    assert first == every[:LOBBY_PAGE]  # the server's first page, in its order
    shown = LOBBY_PAGE
    while more.is_visible():
        more.click()
        shown = min(shown + LOBBY_PAGE, len(_open_ids(server)))
        expect(rows).to_have_count(shown)
    listed = [r.get_attribute("data-table") for r in rows.all()]
    assert len(set(listed)) == len(listed)  # no table twice
    assert listed == _open_ids(server) and set(made) <= set(listed)
    # the list keeps its length at the next refresh (every 5 s)
    page.wait_for_timeout(5500)
    expect(rows).to_have_count(len(listed))
    expect(more).to_be_hidden()
