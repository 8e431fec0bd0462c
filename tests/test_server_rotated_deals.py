"""Rotated deals at a real table (issue 30, "Done when"): a table created with ``options.deals: "rotated"`` deals
each deal once from every seat in turn (``Match.deal_cards`` through ``server/table/owner.py``), its record says
so and ``cardtable replay`` accepts it; the replay route groups the hands by deal; a bad ``deals`` is a coded 422."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.testclient import TestClient
from typer.testing import CliRunner

from cardtable.cli import app
from clients import play_out
from polling import wait_status

ORIGIN = {"Origin": "http://testserver"}




def test_a_rotated_table_of_three_deals_one_deal_rotated_and_its_record_replays(
    client: TestClient, tmp_path: Path
) -> None:
    body = {
        "game": "anemone",
        "options": {"players": 3, "rounds": 3, "deals": "rotated"},
        "name": "Ada",
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}, {"kind": "bot", "bot": "heuristic"}],
    }
    made = client.post("/api/tables", json=body, headers=ORIGIN)
    assert made.status_code == 201, made.text
    table_id, token = made.json()["table"]["id"], made.json()["token"]
    assert made.json()["table"]["options"]["deals"] == "rotated"
    assert client.post(f"/api/tables/{table_id}/start", json={"token": token}).status_code == 200
    play_out(client, table_id, token)
    wait_status(client, table_id)

    record = client.get(f"/api/tables/{table_id}/record").json()
    assert record["options"]["deals"] == "rotated"
    deals = [hand["deal"]["hands"] for hand in record["hands"]]
    assert len(deals) == 3
    first = deals[0]
    assert deals[1] == [first[2], first[0], first[1]] and deals[2] == [first[1], first[2], first[0]]

    replay = client.get(f"/api/tables/{table_id}/replay").json()
    assert [hand["deal"] for hand in replay["hands"]] == [0, 0, 0]

    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    done = CliRunner().invoke(app, ["replay", str(path), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["totals"] == replay["totals"]


def test_a_fresh_table_replays_without_deal_numbers(client: TestClient) -> None:
    body = {
        "game": "anemone",
        "options": {"players": 2, "rounds": 1},
        "name": "Ada",
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}],
    }
    made = client.post("/api/tables", json=body, headers=ORIGIN).json()
    assert made["table"]["options"]["deals"] == "fresh"
    client.post(f"/api/tables/{made['table']['id']}/start", json={"token": made["token"]})
    play_out(client, made["table"]["id"], made["token"])
    wait_status(client, made["table"]["id"])
    assert "deal" not in client.get(f"/api/tables/{made['table']['id']}/replay").json()["hands"][0]


def test_a_bad_deals_option_is_a_coded_422_and_makes_no_table(client: TestClient) -> None:
    for game in ("anemone", "nerts"):
        refused = client.post(
            "/api/tables",
            json={"game": game, "options": {"deals": "shuffled"}, "name": "Ada"},
            headers=ORIGIN,
        )
        assert refused.status_code == 422, refused.text
        error = refused.json()
        assert error["code"] == "options.invalid" and error["params"]["option"] == "deals", error
        assert "'fresh' or 'rotated'" in error["params"]["detail"]
    assert client.get("/api/tables?status=open").json() == []
