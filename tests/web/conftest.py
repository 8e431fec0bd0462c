"""Fixtures for the browser suite: Debian's Chromium driven by Playwright, and the real table server.

The server runs as a subprocess (``python -m cardtable serve``) on a free port with a fresh SQLite file,
quick bots and a short pause between hands. Tests are marked ``browser``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "screenshots"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the browser suite where Chromium is not installed."""
    if Path(CHROMIUM).exists():
        return
    skip = pytest.mark.skip(reason=f"{CHROMIUM} is not installed")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict[str, Any]:
    """Debian's Chromium, headless, with nothing that reaches the network on its own."""
    return {
        "executable_path": CHROMIUM,
        "args": [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
        ],
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start the real server, shared by the whole session; yields its base URL (``http://127.0.0.1:PORT``)."""
    with _serve(tmp_path_factory) as base:
        yield base


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of the module's own, on an empty database: for tests that count what the shared one accumulates
    (a bot level's matches, a leaderboard's rows)."""
    with _serve(tmp_path_factory) as base:
        yield base


@contextlib.contextmanager
def _serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Run ``cardtable serve`` on a free port with a new SQLite database and the tests' settings until the block
    ends; yields its base URL."""
    port = _free_port()
    db = tmp_path_factory.mktemp("db") / "cardtable.sqlite3"
    log = tmp_path_factory.mktemp("log") / "server.log"
    env = dict(os.environ)
    env.update({
        "CARDTABLE_HAND_PAUSE": "1.5",
        "CARDTABLE_BOT_PACE": "0.35",
        "CARDTABLE_ANEMONE_BOT_DELAY_MS": "60",
        "CARDTABLE_GRACE_SECONDS": "60",
        "CARDTABLE_CREATES_PER_MINUTE": "100000",  # one address opens every test's tables
        "CARDTABLE_CREATE_BURST": "100000",
        "CARDTABLE_LOBBY_READS_PER_SECOND": "100000",  # and reads every test's lobby lists
        "CARDTABLE_LOBBY_READ_BURST": "100000",
        "CARDTABLE_JOINS_PER_MINUTE": "100000",  # and takes every test's seats
        "CARDTABLE_JOIN_BURST": "100000",
        "CARDTABLE_MAX_SEATS_PER_ADDRESS": "100000",
        "CARDTABLE_SIGN_INS_PER_ADDRESS": "100000",
        "CARDTABLE_CHOSEN_SEEDS": "1",  # tests deal known hands at tables of two people (unrated)
        "CARDTABLE_PLAY_NOW_START": "3",
        "CARDTABLE_TURN_CLOCK_MIN_S": "1",  # turn-based tables with clocks of seconds (test_turn_based_page.py)
        "CARDTABLE_REVIEW_SIMULATIONS": "300",  # every finished match is reviewed: cheaply here
    })
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cardtable", "serve", "--port", str(port), "--db", f"sqlite+aiosqlite:///{db}"],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(base + "/api/games", timeout=2) as res:
                if res.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the server did not start:\n{log.read_text()}")
        time.sleep(0.2)
    try:
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """The folder screenshots go to (gitignored)."""
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS
