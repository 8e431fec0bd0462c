"""Names link to player pages where the seat belongs to an account: in the lobby's table lists and at the table
(seat labels, scores); guests (even one using an account's name) and bots at a live table stay plain text."""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect
from webhelpers import api, sit

pytestmark = pytest.mark.browser

SIGN_UP_AND_CREATE = """async ([name, game, seats]) => {
  const json = { 'Content-Type': 'application/json' };
  const made = await fetch('/api/accounts', { method: 'POST', headers: json,
    body: JSON.stringify({ name, password: 'long enough password' }) });
  if (made.status !== 201) throw new Error(`sign up: ${made.status}`);
  const options = game === 'nerts' ? { players: seats.length, nerts_pile_size: 13 } : { players: seats.length, rounds: 2 };
  const res = await fetch('/api/tables', { method: 'POST', headers: json, body: JSON.stringify({ game, options, seats }) });
  return await res.json();
}"""


def _account_table(browser: Browser, server: str, game: str) -> tuple[str, dict[str, Any], Any]:
    """A new account (this browser signed in) makes a table: its seat, a guest who takes the account's name, a bot.
    Returns the account's name, the guest's join answer and the signed-in browser context."""
    name = f"링크{secrets.token_hex(3)}"
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    page.goto(server + "/")
    bot = "expert:easy" if game == "nerts" else "heuristic"
    made = page.evaluate(SIGN_UP_AND_CREATE, [name, game, [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": bot}]])
    assert made["table"]["seats"][0]["account"] == name
    guest = api(server, "POST", f"/api/tables/{made['table']['id']}/join", {"name": name})  # no cookie: a guest
    return name, {"id": made["table"]["id"], "token": made["token"], "guest": guest}, ctx


def _links(page: Page, scope: str) -> list[tuple[str, str | None]]:
    return [(a.inner_text(), a.get_attribute("href")) for a in page.locator(f"{scope} a.playerlink").all()]


def test_lobby_links_account_seats_only(browser: Browser, server: str) -> None:
    name, table, ctx = _account_table(browser, server, "nerts")
    page = ctx.pages[0]
    page.goto(server + "/")
    row = page.locator(f'#open-tables li.table-row[data-table="{table["id"]}"]')
    expect(page.locator("#open-tables li.table-row").first).to_be_visible(timeout=10000)
    more = page.locator('#open-tables button.more')
    while not row.count() and more.is_visible():  # other tests' open tables may come first: page on
        count = page.locator("#open-tables li.table-row").count()
        more.click()
        expect(page.locator("#open-tables li.table-row")).not_to_have_count(count)
    expect(row).to_be_visible()
    # the account's seat is a link; the guest with the same name and the bot are plain text
    assert _links(page, f'#open-tables li.table-row[data-table="{table["id"]}"]') == [(name, f"/?player={_q(name)}")]
    expect(row.locator(".tseats .pname")).to_have_count(3)
    # a click opens the player page in the same tab
    row.locator("a.playerlink").click()
    expect(page).to_have_url(f"{server}/?player={_q(name)}")
    expect(page.locator("main.player-page")).to_contain_text(name)
    ctx.close()


def test_table_links_account_seats_in_a_new_tab(browser: Browser, server: str) -> None:
    name, table, owner = _account_table(browser, server, "anemone")
    api(server, "POST", f"/api/tables/{table['id']}/start", {"token": table["token"]})
    owner.close()
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    guest = table["guest"]
    sit(page, server, table["id"], guest["seat"], guest["token"])
    seat0 = page.locator('.aseat[data-seat="0"] header a.playerlink')
    expect(seat0).to_have_text(name)
    assert seat0.get_attribute("href") == f"/?player={_q(name)}"
    assert seat0.get_attribute("target") == "_blank"  # a click does not leave the game
    expect(page.locator('.aseat[data-seat="1"] header a.playerlink')).to_have_count(0)  # the guest (you)
    expect(page.locator('.aseat[data-seat="2"] header a.playerlink')).to_have_count(0)  # a bot
    ctx.close()


def test_waiting_room_links_account_seats(browser: Browser, server: str) -> None:
    name, table, ctx = _account_table(browser, server, "nerts")
    ctx.close()
    viewer = browser.new_context(viewport={"width": 390, "height": 844})
    page = viewer.new_page()
    guest = table["guest"]
    sit(page, server, table["id"], guest["seat"], guest["token"])
    expect(page.locator(".seatlist li").first).to_be_visible()
    assert _links(page, ".seatlist") == [(name, f"/?player={_q(name)}")]
    viewer.close()


def _q(name: str) -> str:
    return quote(name, safe="")
