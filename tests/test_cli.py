"""`cardtable simulate` writes records that `cardtable replay` accepts (issues 2 and 3, "Done when")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cardtable import records
from cardtable.cli import app
from cardtable.replay import fold

runner = CliRunner()


def replay_every_line(path: Path) -> list[dict[str, object]]:
    summaries = []
    for line in path.read_text().splitlines():
        record = records.loads(line)
        for hand in record.hands:
            assert "seed" not in hand.deal, "simulator records carry the cards themselves"
        summaries.append(fold(record).to_dict())
    return summaries


def test_simulated_nerts_hands_replay(tmp_path: Path) -> None:
    out = tmp_path / "nerts.jsonl"
    result = runner.invoke(app, ["simulate", "nerts", "--jobs", "1", "--players", "3", "--hands", "3", "--seed", "5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    summaries = replay_every_line(out)
    assert len(summaries) == 3
    for summary in summaries:
        hands = summary["hands"]
        assert isinstance(hands, list) and hands[0]["ended"] in {"nerts", "stuck", "stalled"}


def test_simulated_nerts_match_replays_to_a_winner(tmp_path: Path) -> None:
    out = tmp_path / "match.jsonl"
    args = ["simulate", "nerts", "--jobs", "1", "--players", "2", "--hands", "1", "--seed", "2", "--match", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (summary,) = replay_every_line(out)
    totals = summary["totals"]
    assert isinstance(totals, list) and max(totals) >= 100
    assert summary["winner"]


@pytest.mark.parametrize("players", [2, 4, 6])
def test_simulated_anemone_games_replay(tmp_path: Path, players: int) -> None:
    out = tmp_path / "anemone.jsonl"
    args = ["simulate", "anemone", "--players", str(players), "--games", "2", "--bots", "heuristic,random",
            "--seed", "3", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summaries = replay_every_line(out)
    assert len(summaries) == 2
    for summary in summaries:
        assert summary["winner"]
        assert all(hand["ended"] == "complete" for hand in summary["hands"])  # type: ignore[union-attr]
        assert len(summary["anemones"]) == players  # type: ignore[arg-type]


def test_simulate_refuses_an_unknown_bot(tmp_path: Path) -> None:
    result = runner.invoke(app, ["simulate", "anemone", "--games", "1", "--bots", "nobody"])
    assert result.exit_code != 0
    assert "nobody" in result.output


def test_replay_prints_a_summary_table(tmp_path: Path) -> None:
    out = tmp_path / "one.jsonl"
    runner.invoke(app, ["simulate", "nerts", "--jobs", "1", "--players", "2", "--hands", "1", "--seed", "9", "--out", str(out)])
    path = tmp_path / "one.json"
    path.write_text(out.read_text().splitlines()[0])
    result = runner.invoke(app, ["replay", str(path)])
    assert result.exit_code == 0, result.output
    assert "total" in result.stdout
    data = json.loads(path.read_text())
    assert data["seats"][0]["name"] in result.stdout


def test_simulate_nerts_on_the_clock_with_delays_prints_per_bot_figures(tmp_path: Path) -> None:
    out = tmp_path / "timed.jsonl"
    args = ["simulate", "nerts", "--jobs", "1", "--players", "2", "--hands", "4", "--bots", "greedy:hard,greedy:easy",
            "--delays", "0,120", "--cap-ms", "150", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "greedy:hard" in result.output and "greedy:easy" in result.output and "hands won" in result.output
    lines = out.read_text().splitlines()
    seats = [[s["bot"] for s in json.loads(line)["seats"]] for line in lines]
    assert seats == [["greedy:hard", "greedy:easy"], ["greedy:easy", "greedy:hard"]] * 2  # rotated over paired deals
    assert len(replay_every_line(out)) == 4


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--bots", "nobody"], "nobody"), (["--delays", "0,fast"], "--delays"), (["--delays", "-5"], "delays")],
)
def test_simulate_nerts_refuses_bad_options(extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["simulate", "nerts", "--jobs", "1", "--hands", "1", *extra])
    assert result.exit_code == 1
    assert message in result.output
