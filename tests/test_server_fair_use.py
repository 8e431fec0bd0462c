"""Shared resources used fairly (issue 25, items 8 and 10): the bot process pool's search work scheduled per table
with a quota per creator, and its processes ending with the server; Argon2 checks bounded, sign-ins limited per
address, failures locked per name and address; joins limited per address with a cap on seats held; finished
tables let go after a bounded time."""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from argon2 import PasswordHasher
from starlette.testclient import TestClient

from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from cardtable.server.players import accounts, passwords
from cardtable.server.table.bots import SearchScheduler
from polling import until, wait_for
from services import Server, run_async, start_server

ORIGIN = {"Origin": "http://testserver"}
PASSWORD = "correct horse battery"


# -- the bot pool's processes end with the server ---------------------------------------------------------------

def _children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is ``pid``, from ``/proc``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[1]) == pid:
            out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait(check: Any, timeout: float) -> bool:
    """Poll ``check()`` every 50 ms (:func:`polling.wait_for`) for up to ``timeout`` seconds; whether it came true."""
    try:
        wait_for(check, timeout, "the check", every=0.05)
    except AssertionError:
        return False
    return True


@pytest.fixture
def bot_server(tmp_path: Path) -> Iterator[Server]:
    """A real ``cardtable serve`` with an Enemy Anemone table of a person (absent, so a stand-in plays at once) and a
    searching bot, which starts the bot pool."""
    env = {"CARDTABLE_SOLO_START": "0.05", "CARDTABLE_ANEMONE_BOT_DELAY_MS": "0", "CARDTABLE_HAND_PAUSE": "0.05", "CARDTABLE_DEFAULT_READY_S": "0.05"}
    server = start_server(f"sqlite+aiosqlite:///{tmp_path / 'pool.db'}", env=env, log=tmp_path / "server.log")
    try:
        made = httpx.post(f"{server.base}/api/tables", timeout=10, json={
            "game": "anemone", "options": {"players": 2}, "grace_seconds": 0,
            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "ismcts:easy"}]})
        assert made.status_code == 201, made.text
        yield server
    finally:
        server.stop(signal.SIGKILL, timeout=10)
        for pid in _children(server.proc.pid):  # should the test fail, leave nothing behind
            os.kill(pid, signal.SIGKILL)


def _pool_workers(server: Server) -> list[int]:
    assert _wait(lambda: any("spawn_main" in _cmdline(p) for p in _children(server.proc.pid)), 60), \
        f"the bot pool never started: {server.output()}"
    return [p for p in _children(server.proc.pid) if "spawn_main" in _cmdline(p)]


@pytest.mark.slow  # a real server process and its process pool, started and killed
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_the_bot_pools_processes_end_with_the_server(bot_server: Server, sig: int) -> None:
    workers = _pool_workers(bot_server)
    assert workers
    bot_server.stop(sig, timeout=30)
    assert _wait(lambda: not any(_alive(p) for p in workers), 10), \
        f"pool processes still running after {signal.Signals(sig).name}: {[p for p in workers if _alive(p)]}"


# -- the bot pool is shared fairly -------------------------------------------------------------------------------

CHOICE_S = 0.3
"""How long each stand-in choice (a ``time.sleep`` in a pool process) takes in the scheduling tests."""


def _spawn_pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


async def _warm(scheduler: SearchScheduler, pool: ProcessPoolExecutor) -> None:
    """Start every pool process (spawning one takes longer than a choice)."""
    await asyncio.gather(*(scheduler.run(f"warm{i}", f"warm{i}", pool, time.sleep, 0.01)
                           for i in range(scheduler.workers)))


@pytest.mark.parametrize("per_creator", [1, 2])
def test_a_flood_of_tables_delays_another_tables_bot_by_about_one_choice(per_creator: int) -> None:
    """Twelve busy tables of one creator queue a choice each; another creator's table then waits at most about one
    choice (it waited for all twelve, six rounds of two workers, when every table submitted to the pool directly)."""

    async def main() -> float:
        pool = _spawn_pool(2)
        try:
            scheduler = SearchScheduler(workers=2, per_creator=per_creator)
            await _warm(scheduler, pool)
            busy = [asyncio.create_task(scheduler.run(f"busy{i}", "flooder", pool, time.sleep, CHOICE_S))
                    for i in range(12)]
            await until(lambda: scheduler.running == per_creator and scheduler.waiting() == 12 - per_creator)
            loop = asyncio.get_running_loop()
            started = loop.time()
            await scheduler.run("mine", "someone else", pool, time.sleep, 0.0)
            waited = loop.time() - started
            for task in busy:
                task.cancel()
            await asyncio.gather(*busy, return_exceptions=True)
            return waited
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    waited = run_async(main)
    assert waited < CHOICE_S * 1.8, f"another table's choice waited {waited:.2f} s behind the flood"


def test_one_table_and_one_creator_stay_within_their_share() -> None:
    """A table never has two choices in the pool at once, a creator never more than its quota, and a creator's
    tables are served in turn."""

    async def main() -> tuple[int, list[str]]:
        pool = _spawn_pool(2)
        try:
            scheduler = SearchScheduler(workers=2, per_creator=1)
            await _warm(scheduler, pool)
            scheduler.peak = 0
            order: list[str] = []

            async def seat(table: str, creator: str) -> None:  # a bot seat: one choice after the other
                for _ in range(3):
                    await scheduler.run(table, creator, pool, time.sleep, 0.02)
                    order.append(table)

            await asyncio.gather(seat("a", "one"), seat("b", "one"))
            return scheduler.peak, order
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    peak, order = run_async(main)
    assert peak == 1  # one table at a time for creator "one", though two workers were free
    assert order == ["a", "b", "a", "b", "a", "b"]


def test_a_cancelled_choice_leaves_the_line() -> None:
    async def main() -> tuple[int, int]:
        pool = _spawn_pool(1)
        try:
            scheduler = SearchScheduler(workers=1, per_creator=1)
            first = asyncio.create_task(scheduler.run("a", "one", pool, time.sleep, 0.2))
            second = asyncio.create_task(scheduler.run("b", "two", pool, time.sleep, 0.0))
            await until(lambda: scheduler.waiting() == 1)
            second.cancel()
            await asyncio.gather(second, return_exceptions=True)
            await first
            await until(lambda: scheduler.running == 0)
            return scheduler.waiting(), scheduler.running
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    assert run_async(main) == (0, 0)


# -- sign-ins -------------------------------------------------------------------------------------------------

class CountingHasher(PasswordHasher):
    """Real Argon2id with small parameters that counts the checks running at once (each held 50 ms, so that
    concurrent sign-ins overlap)."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_cost=1024, parallelism=1)
        self._lock = threading.Lock()
        self.running = 0
        self.peak = 0

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
        with self._lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            time.sleep(0.05)  # not a wait: a slow hash, so that checks overlap and the peak is seen
            return super().verify(hash, password)
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def hasher(monkeypatch: pytest.MonkeyPatch) -> CountingHasher:
    counting = CountingHasher()
    monkeypatch.setattr(passwords, "_hasher", counting)
    return counting


def _app_client(tmp_path: Path, **settings: Any) -> TestClient:
    base: dict[str, Any] = {"hand_pause_s": 0.01, "default_ready_s": 0.01, "bot_pace": 0.01, "anemone_bot_delay_ms": 0, "solo_start_s": 0.05}
    return TestClient(create_app(f"sqlite+aiosqlite:///{tmp_path / 'fair.db'}", Settings(**{**base, **settings})))


def from_address(client: TestClient, host: str) -> TestClient:
    """Make ``client``'s next requests come from ``host`` (the ASGI scope's ``client``)."""
    transport = client._transport
    transport.client = (host, 50000)  # type: ignore[attr-defined]
    return client


def sign_up(client: TestClient, name: str, password: str = PASSWORD) -> Any:
    return client.post("/api/accounts", json={"name": name, "password": password}, headers=ORIGIN)


def sign_in(client: TestClient, name: str, password: str = PASSWORD) -> Any:
    return client.post("/api/session", json={"name": name, "password": password}, headers=ORIGIN)


def test_argon2_checks_run_at_most_argon2_concurrency_at_once(tmp_path: Path, hasher: CountingHasher) -> None:
    with _app_client(tmp_path, argon2_concurrency=2) as client:
        assert sign_up(client, "ana").status_code == 201
        with concurrent.futures.ThreadPoolExecutor(8) as threads:
            answers = list(threads.map(lambda _: sign_in(client, "ana").status_code, range(8)))
    assert answers == [200] * 8
    assert 1 <= hasher.peak <= 2, f"{hasher.peak} Argon2 checks ran at once"


def test_wrong_passwords_from_one_address_do_not_lock_out_another(tmp_path: Path, hasher: CountingHasher) -> None:
    with _app_client(tmp_path) as client:
        assert sign_up(client, "ana").status_code == 201
        from_address(client, "203.0.113.9")
        for _ in range(accounts.MAX_FAILURES_PER_NAME):
            assert sign_in(client, "ana", "guess guess").status_code == 401
        locked = sign_in(client, "ana")  # that address waits, even with the right password
        assert locked.status_code == 429 and locked.json()["code"] == "account.rate_limited"
        from_address(client, "198.51.100.4")
        assert sign_in(client, "ana").status_code == 200


def test_successful_sign_ins_are_limited_per_address(tmp_path: Path, hasher: CountingHasher) -> None:
    with _app_client(tmp_path, sign_ins_per_address=3) as client:
        assert sign_up(client, "bo").status_code == 201
        for _ in range(3):
            assert sign_in(client, "bo").status_code == 200
        checks = hasher.peak, hasher.running
        limited = sign_in(client, "bo")
        assert limited.status_code == 429 and limited.json()["code"] == "account.rate_limited"
        assert int(limited.headers["Retry-After"]) == limited.json()["params"]["retry_after_s"] > 0
        assert (hasher.peak, hasher.running) == checks
        from_address(client, "198.51.100.4")
        assert sign_in(client, "bo").status_code == 200  # another address is not limited by it


# -- joins ----------------------------------------------------------------------------------------------------

def _open_table(client: TestClient) -> str:
    made = client.post("/api/tables", json={"game": "anemone", "options": {"players": 4}})
    assert made.status_code == 201, made.text
    return str(made.json()["table"]["id"])


def test_joins_are_limited_per_address(tmp_path: Path) -> None:
    with _app_client(tmp_path, joins_per_minute=1, join_burst=3) as client:
        tables = [_open_table(client) for _ in range(2)]
        from_address(client, "203.0.113.9")
        for i in range(3):
            assert client.post(f"/api/tables/{tables[i % 2]}/join", json={"name": "jo"}).status_code == 200
        refused = client.post(f"/api/tables/{tables[1]}/join", json={"name": "jo"})
        assert refused.status_code == 429 and refused.json()["code"] == "table.join_limit"
        assert int(refused.headers["Retry-After"]) == refused.json()["params"]["retry_after_s"] >= 1
        assert [s["kind"] for s in client.get(f"/api/tables/{tables[1]}").json()["seats"]].count("person") == 2
        from_address(client, "198.51.100.4")
        assert client.post(f"/api/tables/{tables[1]}/join", json={"name": "kim"}).status_code == 200


def test_seats_held_by_one_address_are_capped(tmp_path: Path) -> None:
    with _app_client(tmp_path, max_seats_per_address=3, join_burst=100, create_burst=100) as client:
        tables = [_open_table(client) for _ in range(4)]
        from_address(client, "203.0.113.9")
        tokens = [client.post(f"/api/tables/{t}/join", json={"name": "jo"}).json()["token"] for t in tables[:3]]
        refused = client.post(f"/api/tables/{tables[3]}/join", json={"name": "jo"})
        assert refused.status_code == 409 and refused.json()["code"] == "table.seat_limit"
        assert refused.json()["params"] == {"limit": 3}
        assert client.post(f"/api/tables/{tables[0]}/leave", json={"token": tokens[0]}).status_code == 200
        assert client.post(f"/api/tables/{tables[3]}/join", json={"name": "jo"}).status_code == 200
        from_address(client, "testclient")  # the maker of the four tables holds four seats: joins are refused
        refused = client.post(f"/api/tables/{tables[1]}/join", json={"name": "mo"})
        assert refused.status_code == 409 and refused.json()["code"] == "table.seat_limit"


# -- finished tables ----------------------------------------------------------------------------------------------

def test_finished_tables_leave_memory_and_their_record_stays(tmp_path: Path) -> None:
    with _app_client(tmp_path, finished_table_keep_s=0.5, expiry_check_s=0.05) as client:
        made = client.post("/api/tables", json={
            "game": "anemone", "options": {"players": 2, "rounds": 1}, "grace_seconds": 0,
            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}]})
        assert made.status_code == 201, made.text
        table_id = made.json()["table"]["id"]
        manager = client.app.state.manager  # type: ignore[attr-defined]
        assert _wait(lambda: client.get(f"/api/tables/{table_id}").json()["status"] == "finished", 60)
        assert _wait(lambda: table_id not in manager.tables, 10), "the finished table stayed in memory"
        assert client.get(f"/api/tables/{table_id}").json()["status"] == "finished"
        record = client.get(f"/api/tables/{table_id}/record")
        assert record.status_code == 200 and record.json()["hands"]
        assert client.get(f"/api/tables/{table_id}/replay").status_code == 200
