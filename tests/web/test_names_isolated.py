"""Names are isolated from the text around them (``<bdi>``, web/static/js/names.js): a right-to-left name, or an
old name holding a U+202E RIGHT-TO-LEFT OVERRIDE, never turns the rest of its lobby row around. The server refuses
such an override in any new name (tests/test_server_names.py); a name stored before that rule is shown isolated."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from webhelpers import api

pytestmark = pytest.mark.browser

ARABIC = "عمر ١٢"
"""A right-to-left guest name (Arabic letters and Arabic-Indic digits): welcome, and shown isolated."""

ROW_WITH_OVERRIDE = """async ([name, after]) => {
  const { nameEl } = await import('/js/names.js');
  const row = document.createElement('p');
  row.id = 'override-row';
  row.append(nameEl(name, null), ', ', nameEl(after, null), ' ok');
  document.body.prepend(row);
  // the left edge of each character of the name after the override, in the order they are written
  const text = row.querySelectorAll('.pname')[1].firstChild;
  const xs = [];
  for (let i = 0; i < text.length; i++) {
    const range = document.createRange();
    range.setStart(text, i); range.setEnd(text, i + 1);
    xs.push(range.getBoundingClientRect().left);
  }
  return { xs, isolated: [...row.querySelectorAll('.pname')].map((el) => el.tagName) };
}"""


def _refused(server: str, name: str) -> tuple[int, Any]:
    req = urllib.request.Request(server + "/api/tables", data=json.dumps({"game": "anemone", "name": name}).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_name_never_turns_its_lobby_row_around(page: Page, server: str, screenshots: Path) -> None:
    status, answer = _refused(server, "\u202eevil")
    assert status == 422 and answer["code"] == "name.invisible"
    made = api(server, "POST", "/api/tables", {"game": "anemone", "name": ARABIC, "options": {"players": 3},
                                               "seats": [{"kind": "open"}, {"kind": "open"}, {"kind": "open"}]})
    api(server, "POST", f"/api/tables/{made['table']['id']}/join", {"name": "bo"})
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(server + "/")
    row = page.locator(f'#open-tables li.table-row[data-table="{made["table"]["id"]}"]')
    more = page.locator("#open-tables button.more")
    expect(page.locator("#open-tables li.table-row").first).to_be_visible(timeout=10000)
    while not row.count() and more.is_visible():  # other tests' open tables may come first: page on
        count = page.locator("#open-tables li.table-row").count()
        more.click()
        expect(page.locator("#open-tables li.table-row")).not_to_have_count(count)
    names = row.locator(".tseats .pname")
    expect(names).to_have_count(3)
    assert [names.nth(i).evaluate("(el) => el.tagName") for i in range(3)] == ["BDI"] * 3
    expect(names.nth(0)).to_have_text(ARABIC)
    # the seats read left to right in seat order, the Arabic name's digits staying with it
    boxes = [names.nth(i).bounding_box() for i in range(3)]
    assert all(box is not None for box in boxes)
    assert boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"] + 0.5  # type: ignore[index]
    assert boxes[1]["x"] + boxes[1]["width"] <= boxes[2]["x"] + 0.5  # type: ignore[index]
    # an old name holding an override, rendered as the lobby renders names: the text after it still reads left
    # to right
    shown = page.evaluate(ROW_WITH_OVERRIDE, ["\u202eevil", "bo"])
    assert shown["isolated"] == ["BDI", "BDI"]
    assert shown["xs"][0] < shown["xs"][1], shown
    row.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "names_isolated_lobby.png"))
