"""``cardtable serve`` takes every server setting as an option beside its environment variable (issue 10): the
option reaches a real server's settings, the variable still works, and the option wins over it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from cardtable.cli import app
from cardtable.server.core.settings import HELP, Settings, env_name, option_name, settings_from_env
from services import start_server

SMALL = {"game": "anemone", "options": {"players": 2}}


def test_every_setting_has_an_option_with_its_help_and_variable() -> None:
    assert set(HELP) == {field.name for field in dataclasses.fields(Settings)}
    result = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "250", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    for field in dataclasses.fields(Settings):
        assert option_name(field.name) in result.output
        assert env_name(field.name) in result.output
    assert option_name("max_body_bytes") == "--max-body-bytes" and option_name("default_grace_s") == "--grace-seconds"


def test_every_setting_is_documented_in_deploy_md() -> None:
    """docs/deploy.md has a table row for every setting (the cluster's ``lease_ms``, ``sweep_s``, ``call_timeout_s``
    too): its name in backticks at the start of a row."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "deploy.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip() for line in doc.splitlines() if line.startswith("| `")}
    named = {part.strip(" `") for row in rows for part in row.split(",")}
    assert {field.name for field in dataclasses.fields(Settings)} <= named


def test_options_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARDTABLE_MAX_SPECTATORS", "7")
    monkeypatch.setenv("CARDTABLE_HAND_PAUSE", "0.5")
    settings = settings_from_env(max_spectators=9)
    assert (settings.max_spectators, settings.hand_pause_s, settings.page_size) == (9, 0.5, Settings().page_size)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A real ``cardtable serve`` given two settings as options, and two as variables (one also given as an
    option, which wins)."""
    server = start_server(f"sqlite+aiosqlite:///{tmp_path / 's.db'}", options=["--max-body-bytes", "300", "--create-burst", "2"],
                          env={"CARDTABLE_PAGE_SIZE": "1", "CARDTABLE_CREATE_BURST": "100"}, log=tmp_path / "serve.log")
    yield server.base
    server.stop()


@pytest.mark.slow  # a real server process
def test_options_and_variables_reach_a_real_server(server: str) -> None:
    with httpx.Client(base_url=server, timeout=10) as http:
        big = http.post("/api/tables", json={**SMALL, "name": "x" * 30, "padding": "y" * 300})
        assert big.status_code == 413 and big.json()["code"] == "request.too_large"  # --max-body-bytes 300
        assert [http.post("/api/tables", json=SMALL).status_code for _ in range(3)] == [201, 201, 429]  # --create-burst
        page = http.get("/api/tables", params={"status": "open"})  # CARDTABLE_PAGE_SIZE=1
        assert page.status_code == 200 and len(page.json()) == 1 and page.headers.get("X-Next-Cursor")
