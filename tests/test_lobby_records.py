"""The replay of a finished table (``server/lobby/records.py``, ``GET /api/tables/{id}/replay``, ``docs/protocol.md``):
beside its steps, each hand's scores and the match totals, which the replay page shows per hand."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from clients import MakeClient, fast_settings
from polling import wait_status


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    return make_client(fast_settings(chosen_seeds=True))


def test_a_nerts_replay_gives_each_hands_scores_and_the_totals(client: TestClient) -> None:
    made = client.post(
        "/api/tables",
        json={
            "game": "nerts",
            "options": {"players": 2, "nerts_pile_size": 5, "target_score": 12},
            "name": "ana",
            "seed": 3,
            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "greedy:medium"}],
            "autostart": False,
        },
    ).json()
    tid = made["table"]["id"]
    assert client.post(f"/api/tables/{tid}/start", json={"token": made["token"]}).status_code == 200
    assert (
        client.post(f"/api/tables/{tid}/leave", json={"token": made["token"]}).status_code == 200
    )  # a stand-in plays
    table = wait_status(client, tid)
    replay: dict[str, Any] = client.get(f"/api/tables/{tid}/replay").json()
    record, steps, hands = replay["record"], replay["steps"], replay["hands"]
    assert len(hands) == len(record["hands"]) >= 2, hands  # a match of several hands
    assert replay["totals"] == table["totals"]
    assert [sum(column) for column in zip(*(hand["scores"] for hand in hands), strict=True)] == replay[
        "totals"
    ]
    for number, hand in enumerate(hands):
        last = [step for step in steps if step["hand"] == number][-1]
        assert last["view"]["over"] and hand["ended"] in ("nerts", "stuck", "stalled")
        assert hand["scores"] == last["view"]["scores"]  # what the board shows at the hand's end
