"""The HTTP lobby of cardtable.server (docs/protocol.md, "HTTP lobby"), including every refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardtable.refusals import PARAMS
from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app


def create(client: TestClient, **body: Any) -> dict[str, Any]:
    body.setdefault("game", "anemone")
    body.setdefault("options", {"players": 2, "rounds": 1})
    response = client.post("/api/tables", json=body)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


def test_games_lists_options_and_bots(client: TestClient) -> None:
    games = {g["game"]: g for g in client.get("/api/games").json()}
    assert set(games) == {"nerts", "anemone"}
    assert any(o["name"] == "nerts_pile_size" for o in games["nerts"]["options"])
    assert "greedy:medium" in [b["spec"] for b in games["nerts"]["bots"]]
    assert "heuristic" in [b["spec"] for b in games["anemone"]["bots"]]


def test_create_join_start_and_table_shape(client: TestClient) -> None:
    made = create(client, name="ana", seats=[{"kind": "open"}, {"kind": "open"}])
    table = made["table"]
    assert made["seat"] == 0 and made["invite"] == f"/?table={table['id']}"
    assert table["status"] == "open" and table["options"]["rounds"] == 1 and "random_first_leader" in table["options"]
    assert table["seats"][0]["name"] == "ana" and table["seats"][1] == {"seat": 1, "kind": "open"}
    assert made["token"] not in str(table)
    assert [t["id"] for t in client.get("/api/tables").json()] == [table["id"]]
    joined = client.post(f"/api/tables/{table['id']}/join", json={"name": "bo"}).json()
    assert joined["seat"] == 1 and joined["token"] != made["token"]
    started = client.post(f"/api/tables/{table['id']}/start", json={"token": joined["token"]})
    assert started.status_code == 200 and started.json()["status"] == "playing"
    assert client.get("/api/tables").json() == []
    assert [t["id"] for t in client.get("/api/tables?status=playing").json()] == [table["id"]]
    assert client.get(f"/api/tables/{table['id']}").json()["status"] == "playing"


@pytest.mark.parametrize(
    ("body", "needle", "code", "params"),
    [
        ({"game": "chess"}, "game: Input should be 'nerts' or 'anemone'", "request.invalid", {"field": "game"}),
        ({"game": "nerts", "options": {"nerts_pile_size": 99}}, "nerts_pile_size", "options.invalid",
         {"option": "nerts_pile_size"}),
        ({"game": "nerts", "options": {"colour": "blue"}}, "colour", "options.invalid", {"option": "colour"}),
        ({"game": "anemone", "options": {"players": 9}}, "players", "options.invalid", {"option": "players"}),
        ({"game": "anemone", "options": {"players": 2}, "seats": [{"kind": "open"}]}, "seats", "seats.count",
         {"count": 1, "players": 2}),
        ({"game": "anemone", "options": {"players": 2}, "seats": [{"kind": "open"}, {"kind": "bot", "bot": "x"}]},
         "unknown anemone bot", "seats.bad_bot", {"seat": 1, "bot": "x"}),
        ({"game": "anemone", "options": {"players": 2}, "seats": [{"kind": "bot", "bot": "random"}] * 2},
         "open", "seats.none_open", {}),
        ({"game": "anemone", "surprise": 1}, "surprise: Extra inputs are not permitted", "request.invalid",
         {"field": "surprise"}),
        ({"game": "anemone", "seats": [{"kind": "robot"}]}, "seats.0.kind: Input should be 'open' or 'bot'",
         "request.invalid", {"field": "seats.0.kind"}),
        ({"game": "anemone", "grace_seconds": -1}, "grace_seconds: Input should be greater than or equal to 0",
         "request.invalid", {"field": "grace_seconds"}),
    ],
)
def test_create_refusals_are_422_with_a_reason_and_a_code(
    client: TestClient, body: dict[str, Any], needle: str, code: str, params: dict[str, Any]
) -> None:
    response = client.post("/api/tables", json=body)
    assert response.status_code == 422, response.text
    answer = response.json()
    assert isinstance(answer["detail"], str) and needle in answer["detail"]
    assert answer["code"] == code and params.items() <= answer["params"].items(), answer
    assert set(answer["params"]) == set(PARAMS[code])


def test_join_refusals(client: TestClient) -> None:
    made = create(client)
    tid = made["table"]["id"]
    assert client.post("/api/tables/nope/join", json={"name": "x"}).status_code == 404
    taken = client.post(f"/api/tables/{tid}/join", json={"name": "x", "seat": 0})
    assert taken.status_code == 409 and "taken" in taken.json()["detail"]
    assert taken.json()["code"] == "seat.taken" and taken.json()["params"] == {"seat": 0}
    no_seat = client.post(f"/api/tables/{tid}/join", json={"name": "x", "seat": 5})
    assert no_seat.status_code == 422 and no_seat.json()["code"] == "seat.no_such"
    assert client.post(f"/api/tables/{tid}/join", json={"name": "bo"}).status_code == 200
    full = client.post(f"/api/tables/{tid}/join", json={"name": "cy"})
    assert full.status_code == 409 and "full" in full.json()["detail"] and full.json()["code"] == "table.full"
    unknown = client.post("/api/tables/nope/join", json={"name": "x"}).json()
    assert unknown == {"detail": "no table 'nope'", "code": "table.not_found", "params": {"table": "nope"}}
    route = client.get("/api/no-such-route")
    assert route.status_code == 404 and route.json()["code"] == "http.error"
    assert route.json()["params"] == {"status": 404}


def test_token_refusals_and_start_rules(client: TestClient) -> None:
    made = create(client)
    tid = made["table"]["id"]
    bad = client.post(f"/api/tables/{tid}/start", json={"token": "wrong"})
    assert bad.status_code == 403 and "token" in bad.json()["detail"] and bad.json()["code"] == "token.bad"
    assert client.post(f"/api/tables/{tid}/leave", json={"token": "wrong"}).status_code == 403
    assert client.post(f"/api/tables/{tid}/start", json={}).status_code == 422
    early = client.post(f"/api/tables/{tid}/start", json={"token": made["token"]})
    assert early.status_code == 409 and "seat" in early.json()["detail"] and early.json()["code"] == "table.not_ready"
    assert client.post("/api/tables/nope/start", json={"token": made["token"]}).status_code == 404
    assert client.get("/api/tables/nope").status_code == 404
    assert client.get("/api/tables/nope/record").status_code == 404
    unfinished = client.get(f"/api/tables/{tid}/record")
    assert unfinished.status_code == 409 and unfinished.json()["code"] == "table.not_finished"


def test_leave_before_start_opens_the_seat(client: TestClient) -> None:
    made = create(client)
    tid = made["table"]["id"]
    table = client.post(f"/api/tables/{tid}/leave", json={"token": made["token"]}).json()
    assert table["seats"][0] == {"seat": 0, "kind": "open"}
    assert client.post(f"/api/tables/{tid}/start", json={"token": made["token"]}).status_code == 403
    assert client.post(f"/api/tables/{tid}/join", json={"name": "bo"}).json()["seat"] == 0


def test_leave_after_start_a_bot_plays_to_the_end(client: TestClient) -> None:
    made = create(client, seats=[{"kind": "open"}, {"kind": "bot", "bot": "random"}], autostart=False)
    tid = made["table"]["id"]
    assert client.post(f"/api/tables/{tid}/start", json={"token": made["token"]}).status_code == 200
    assert client.post(f"/api/tables/{tid}/join", json={"name": "late"}).status_code == 409
    table = client.post(f"/api/tables/{tid}/leave", json={"token": made["token"]}).json()
    assert table["seats"][0]["standin"] == "heuristic"
    for _ in range(400):
        if client.get(f"/api/tables/{tid}").json()["status"] == "finished":
            break
        assert client.portal is not None
        client.portal.call(_sleep)
    finished = client.get("/api/finished").json()
    assert [t["id"] for t in finished] == [tid] and finished[0]["winners"]
    record = client.get(f"/api/tables/{tid}/record").json()
    assert record["format"] == "cardtable/1" and record["seats"][1] == {"name": "bot-1", "bot": "random"}
    assert record["hands"][0]["deal"]["hands"] and len(record["hands"][0]["actions"]) > 10
    replay = client.get(f"/api/tables/{tid}/replay").json()
    steps = replay["steps"]
    assert len(steps) == 1 + len(record["hands"][0]["actions"])
    assert steps[0]["index"] is None and len(steps[0]["hands"]) == 2 and steps[0]["hands"][0]
    assert steps[0]["view"]["seat"] is None and "hand" not in steps[0]["view"]


async def _sleep() -> None:
    import asyncio

    await asyncio.sleep(0.02)  # not a wait: a slow step, injected


def page_ids(client: TestClient, status: str, **params: Any) -> tuple[list[str], str | None]:
    response = client.get("/api/tables", params={"status": status, **params})
    assert response.status_code == 200, response.text
    return [t["id"] for t in response.json()], response.headers.get("x-next-cursor")


def all_pages(client: TestClient, status: str, limit: int) -> list[str]:
    ids, cursor = page_ids(client, status, limit=limit)
    while cursor is not None:
        more, cursor = page_ids(client, status, limit=limit, cursor=cursor)
        ids += more
    return ids


def test_open_and_playing_lists_keep_creation_order_as_tables_start_and_leave(tmp_path: Path) -> None:
    """The live lists (``server/lobby/listing.py``) page oldest first (by ``created``, then id); a table that starts moves from the open list to the
    playing one at once, in its place; a closed one leaves; after a restart the lists are rebuilt in the same
    order."""
    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=60_000)
    db = f"sqlite+aiosqlite:///{tmp_path / 'order.db'}"
    with TestClient(create_app(db, settings)) as client:
        made = [create(client, seats=[{"kind": "open"}, {"kind": "bot", "bot": "random"}], autostart=False)
                for _ in range(7)]
        made.sort(key=lambda m: (m["table"]["created"], m["table"]["id"]))  # created: to the second
        ids = [m["table"]["id"] for m in made]
        assert all_pages(client, "open", 2) == ids and page_ids(client, "playing") == ([], None)
        for i in (4, 1):
            started = client.post(f"/api/tables/{ids[i]}/start", json={"token": made[i]["token"]})
            assert started.status_code == 200, started.text
        assert all_pages(client, "playing", 1) == [ids[1], ids[4]]  # before any open page passes them
        assert all_pages(client, "open", 2) == [ids[0], ids[2], ids[3], ids[5], ids[6]]
        first, cursor = page_ids(client, "open", limit=2)
        assert first == [ids[0], ids[2]] and cursor is not None
        left = client.post(f"/api/tables/{ids[3]}/leave", json={"token": made[3]["token"]})
        assert left.status_code == 200  # still open, its seat open again
        manager = client.app.state.manager  # type: ignore[attr-defined]
        assert client.portal is not None
        client.portal.call(manager._end, manager.tables[ids[5]], "closed")
        assert page_ids(client, "open", limit=2, cursor=cursor)[0] == [ids[3], ids[6]]
    with TestClient(create_app(db, settings)) as client:
        assert all_pages(client, "open", 3) == [ids[0], ids[2], ids[3], ids[6]]
        assert all_pages(client, "playing", 3) == [ids[1], ids[4]]


def test_lobby_reads_are_limited_per_address_with_retry_after(tmp_path: Path) -> None:
    settings = Settings(lobby_reads_per_second=0.5, lobby_read_burst=3)
    with TestClient(create_app(f"sqlite+aiosqlite:///{tmp_path / 'reads.db'}", settings)) as client:
        tid = create(client)["table"]["id"]
        assert [client.get(path).status_code for path in ("/api/tables", "/api/finished", "/api/tables?status=playing")
                ] == [200, 200, 200]
        for path in ("/api/tables", "/api/finished", f"/api/tables/{tid}/record", f"/api/tables/{tid}/replay"):
            refused = client.get(path)
            assert refused.status_code == 429, (path, refused.text)
            assert refused.headers["retry-after"] == "2"  # one read every 2 s
            assert refused.json() == {
                "detail": "too many lobby requests from your address: at most 0.5 a second; try again in 2 s",
                "code": "lobby.read_limit", "params": {"rate": "0.5", "retry_after_s": 2}}
        # a single table, the games and the other routes are not lobby reads
        assert client.get(f"/api/tables/{tid}").status_code == 200
        assert client.get("/api/games").status_code == 200
        assert client.post(f"/api/tables/{tid}/join", json={"name": "bo"}).status_code == 200
