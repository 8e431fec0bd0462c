"""The messages between processes and what rides on them, in one test process on a real Redis: the mailbox
(``server/cluster/mailbox.py``: one publisher connection with replies off, replaced when Redis closes it, a publish
to a Redis that stops answering failed in time, every loss reported and logged, a broken subscription renewed), the
lobby's calls to a table's owner (``server/cluster/calls.py``: the caller sees the owner's answer or refusal, 503
when the owner fails, moved or is silent; the owners' published tables; the lock over all processes) and the cluster
member (``server/cluster/member.py``: its named background tasks and pools, what it queues is sent before it closes,
the hand-over, and closing leaves nothing behind in Redis)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from redis.asyncio import Redis

from cardtable.server.cluster import mailbox as mailbox_module
from cardtable.server.cluster.calls import LOBBY, Calls
from cardtable.server.cluster.lease import LEASE_PREFIX
from cardtable.server.cluster.mailbox import Mailbox, channel
from cardtable.server.cluster.member import Cluster
from cardtable.server.cluster.ownership import RELEASED, ClusterSettings
from cardtable.server.cluster.redis_clients import (
    ALIVE_PREFIX,
    CONTROL_CONNECTIONS,
    REDIS_CONNECTIONS,
    redis_client,
)
from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.lobby.manager import Manager
from cardtable.server.storage.store import Store
from polling import until
from services import redis_server

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

WAIT_S = 3.0
"""Seconds to wait for a step that takes milliseconds here, so that a broken step fails soon."""

SETTINGS = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0)


class Lost:
    """Counts the calls of a mailbox's ``on_lost``."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


class Box:
    """A mailbox of process ``name`` on the clients a cluster member builds (``control``: another client for its
    publisher to copy), with its ``on_lost`` counter; its loops run from :meth:`start` to :meth:`stop`."""

    def __init__(self, url: str, name: str, control: Redis | None = None) -> None:
        self.lost = Lost()
        self.mailbox = Mailbox(
            redis_client(url, REDIS_CONNECTIONS),
            control or redis_client(url, CONTROL_CONNECTIONS),
            name,
            self.lost,
        )
        self.tasks: list[asyncio.Task[None]] = []

    def start(self, publish: bool = True, listen: bool = True) -> None:
        """Start its publisher and its listener (those asked for)."""
        if listen:
            self.tasks.append(asyncio.create_task(self.mailbox.listen_loop()))
        if publish:
            self.tasks.append(asyncio.create_task(self.mailbox.publish_loop()))

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.mailbox.redis.aclose()
        await self.mailbox.control.aclose()


async def listening(admin: Redis, *names: str) -> bool:
    """Whether each of ``names`` (channels) has a subscriber."""
    counts = dict(await admin.pubsub_numsub(*names))
    return all(counts.get(name.encode()) for name in names)


@asynccontextmanager
async def boxes(url: str, *names: str, **channels: Any) -> AsyncIterator[dict[str, Box]]:
    """A running :class:`Box` per process name, once each listens (``channels``: extra channel -> handler for the
    first box, set before its listener starts); stopped at the end."""
    opened = {name: Box(url, name) for name in names}
    opened[names[0]].mailbox.channels.update(channels)
    admin = Redis.from_url(url)
    try:
        for box in opened.values():
            box.start()
        await until(
            lambda: listening(admin, *(channel(n) for n in names), *channels), WAIT_S, "the listeners"
        )
        yield opened
    finally:
        for box in opened.values():
            await box.stop()
        await admin.aclose()


async def reply_stats(admin: Redis) -> tuple[int, int]:
    """``CLIENT REPLY`` commands Redis ran so far: (calls, failed calls)."""
    stats = (await admin.info("commandstats")).get("cmdstat_client|reply", {})
    return int(stats.get("calls", 0)), int(stats.get("failed_calls", 0))


async def connections(admin: Redis) -> list[dict[str, Any]]:
    """The Redis connections opened after ``admin``'s own (those of the test's parts: ``admin`` connects first)."""
    first = await admin.client_id()
    return [c for c in await admin.client_list() if int(c["id"]) > first]


async def closed(admin: Redis) -> bool:
    """Whether every connection opened after ``admin``'s own is closed."""
    return not await connections(admin)


# -- the mailbox ------------------------------------------------------------------------------------------------


async def test_messages_of_separate_turns_travel_on_one_publisher_connection_with_replies_off(
    redis_url: str,
) -> None:
    """Each loop turn's messages are published once the turn is over (the mailbox is not idle until then), arrive
    in order and are counted (``received``, ``published``: the benchmark reads them); every publish after the first
    goes on the same connection, which asked Redis once for no replies (replies nobody reads would pile up in
    Redis, and a connection with a reply waiting would be taken for one Redis closed). A text published on one of
    the mailbox's other channels reaches that channel's handler as text; a message of an op nobody handles is
    skipped."""
    released: list[str] = []
    admin = Redis.from_url(redis_url)
    try:
        before = await reply_stats(admin)
        async with boxes(redis_url, "origin", "owner", **{RELEASED: released.append}) as opened:
            origin, owner = opened["origin"].mailbox, opened["owner"].mailbox
            got: list[dict[str, Any]] = []
            owner.handlers["in"] = got.append
            for turn in range(3):
                origin.send("owner", {"op": "in", "conn": "c1", "data": f"{turn}a"})
                origin.send("owner", {"op": "nobody handles this", "conn": "c1"})
                origin.send("owner", {"op": "in", "conn": "c1", "data": f"{turn}b"})
                assert not origin.idle()  # queued, not yet written: a closing member waits for it
                await until(lambda turn=turn: len(got) == 2 * turn + 2, WAIT_S, "the turn's messages")
                await until(origin.idle, WAIT_S, "the publisher idle")
            assert [body["data"] for body in got] == ["0a", "0b", "1a", "1b", "2a", "2b"]
            assert owner.received == 9 and origin.published == 3
            assert owner.published == 0 and origin.received == 0
            assert await reply_stats(admin) == (before[0] + 3, before[1])  # off, on (to see off taken), off
            publishers = [c for c in await connections(admin) if c["cmd"] in ("publish", "client|reply")]
            assert len(publishers) == 1
            await admin.publish(RELEASED, "t-42")
            await until(lambda: released == ["t-42"], WAIT_S, "the released table named")
            assert opened["origin"].lost.count == opened["owner"].lost.count == 0
    finally:
        await admin.aclose()


async def test_a_malformed_message_is_skipped_with_a_warning_naming_its_channel(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A pub/sub message that is not an array of maps (from anything publishing on a process's channel) is
    skipped, logged with the channel it came on, and not counted; the listener goes on. (A new mailbox is idle: a
    member closing at once waits for nothing; what is queued before its loops start is published once they do.)"""
    box = Box(redis_url, "owner")
    got: list[dict[str, Any]] = []
    box.mailbox.handlers["in"] = got.append
    admin = Redis.from_url(redis_url)
    try:
        assert box.mailbox.idle()
        box.mailbox.send("owner", {"op": "in", "data": "early"})
        assert not box.mailbox.idle()
        box.start(publish=False)
        await until(lambda: listening(admin, channel("owner")), WAIT_S, "the listener")
        box.start(listen=False)
        await until(lambda: got, WAIT_S, "the early message")
        with caplog.at_level(logging.WARNING, "cardtable.server.cluster.mailbox"):
            await admin.publish(channel("owner"), b"{not frames")
            box.mailbox.send("owner", {"op": "in", "data": "after"})
            await until(lambda: len(got) == 2, WAIT_S, "the next message")
    finally:
        await box.stop()
        await admin.aclose()
    assert [r.getMessage() for r in caplog.records] == ["ignored a malformed message on b'ct:proc:owner'"]
    assert [body["data"] for body in got] == ["early", "after"] and box.mailbox.received == 2


async def test_a_publisher_connection_redis_closed_while_idle_is_replaced_and_the_message_delivered(
    redis_url: str,
) -> None:
    """Redis closes the publisher's idle connection (its ``timeout`` setting, ``CLIENT KILL``): the next message is
    published on a new connection (with replies off) and delivered, nothing reported lost; stopping the loops
    closes every connection they opened."""
    admin = Redis.from_url(redis_url)
    await admin.ping()
    try:
        async with boxes(redis_url, "origin", "owner") as opened:
            origin, owner = opened["origin"].mailbox, opened["owner"].mailbox
            got: list[str] = []
            owner.handlers["in"] = lambda body: got.append(body["data"])
            origin.send("owner", {"op": "in", "data": "before"})
            await until(lambda: got == ["before"], WAIT_S, "the first message")
            before = await reply_stats(admin)
            for publisher in [c for c in await connections(admin) if c["cmd"] in ("publish", "client|reply")]:
                await admin.client_kill_filter(_id=publisher["id"])
            origin.send("owner", {"op": "in", "data": "after the kill"})
            await until(lambda: got == ["before", "after the kill"], WAIT_S, "the message after the kill")
            assert opened["origin"].lost.count == 0 and opened["owner"].lost.count == 0
            assert await reply_stats(admin) == (before[0] + 3, before[1])
        await until(lambda: closed(admin), WAIT_S, "the connections closed")
    finally:
        await admin.aclose()


async def test_an_idle_listener_stays_subscribed_and_reports_nothing_lost(redis_url: str) -> None:
    """A process that hears nothing for a while (longer than the listener's 1 s wait for a message) keeps its one
    subscription, reports nothing lost (which would reset every relayed connection) and hears the next message."""
    admin = Redis.from_url(redis_url)
    await admin.ping()
    try:
        async with boxes(redis_url, "owner") as opened:
            owner = opened["owner"].mailbox
            got: list[str] = []
            owner.handlers["in"] = lambda body: got.append(body["data"])
            listeners = [c["id"] for c in await connections(admin) if c["cmd"] == "subscribe"]
            await asyncio.sleep(1.2)  # the idleness under test, not a wait for something
            owner.send("owner", {"op": "in", "data": "after a while"})
            await until(lambda: got == ["after a while"], WAIT_S, "the message after a while")
            assert opened["owner"].lost.count == 0
            assert [c["id"] for c in await connections(admin) if c["cmd"] == "subscribe"] == listeners
    finally:
        await admin.aclose()


async def test_a_broken_subscription_is_logged_reported_lost_and_renewed(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis drops the listener's connection: the operator is warned with the reason, the loss is reported (the
    relays start again) when it breaks and again once subscribed anew (what was published in between is lost
    too), and messages travel again."""
    admin = Redis.from_url(redis_url)
    await admin.ping()
    try:
        async with boxes(redis_url, "owner") as opened:
            owner, lost = opened["owner"].mailbox, opened["owner"].lost
            got: list[str] = []
            owner.handlers["in"] = lambda body: got.append(body["data"])
            with caplog.at_level(logging.WARNING, "cardtable.server.cluster.mailbox"):
                for listener in [c for c in await connections(admin) if c["cmd"] == "subscribe"]:
                    await admin.client_kill_filter(_id=listener["id"])
                # reported when it broke, then once subscribed anew (redis-py's own reconnection while the old
                # subscription closes is not one to publish to)
                await until(lambda: lost.count == 2, WAIT_S, "the loss reported, then subscribed anew")
                owner.send("owner", {"op": "in", "data": "again"})
                await until(lambda: got == ["again"], WAIT_S, "a message after the break")
            assert lost.count == 2
    finally:
        await admin.aclose()
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning == "the pub/sub connection failed (Connection closed by server.): reconnecting"


async def test_a_publish_redis_refuses_is_logged_reported_lost_and_publishing_resumes_once_allowed(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A publisher whose Redis user may not turn replies off publishes nothing: the operator is warned with how
    many messages were lost and why, the loss is reported (the relays start again), and once the user is allowed
    the next messages are published."""
    admin = Redis.from_url(redis_url)
    await admin.acl_setuser(
        "mail-limited",
        enabled=True,
        passwords=["+pw"],
        keys=["*"],
        channels=["*"],
        commands=["+@all", "-client|reply"],
    )
    limited = redis_url.replace("redis://", "redis://mail-limited:pw@")
    box = Box(redis_url, "origin")
    await box.mailbox.control.aclose()  # never used: the publisher copies the limited user's client instead
    box.mailbox.control = redis_client(limited, CONTROL_CONNECTIONS)
    got: list[str] = []
    box.mailbox.handlers["in"] = lambda body: got.append(body["data"])
    try:
        box.start()
        await until(lambda: listening(admin, channel("origin")), WAIT_S, "the listener")
        with caplog.at_level(logging.WARNING, "cardtable.server.cluster.mailbox"):
            box.mailbox.send("origin", {"op": "in", "data": "one"})
            box.mailbox.send("origin", {"op": "in", "data": "two"})
            await until(lambda: box.lost.count, WAIT_S, "the loss reported")
        (warning,) = [r.getMessage() for r in caplog.records]
        assert warning.startswith("publishing 2 messages failed: ") and "NoPermissionError" in warning
        assert box.mailbox.published == 0
        await until(box.mailbox.idle, WAIT_S, "the publisher idle")
        await admin.acl_setuser("mail-limited", enabled=True, commands=["+client|reply"])
        box.mailbox.send("origin", {"op": "in", "data": "three"})
        await until(lambda: got == ["three"], WAIT_S, "a message once allowed")
        assert box.lost.count == 1
    finally:
        await box.stop()
        await admin.acl_deluser("mail-limited")
        await admin.aclose()


async def test_a_publisher_whose_client_decodes_responses_turns_replies_off_and_publishes(
    redis_url: str,
) -> None:
    """The publisher's connection copies the settings of the client it is given, which may decode responses (Redis's
    ``OK`` then comes as text): it still turns replies off and publishes, nothing lost."""
    box = Box(redis_url, "owner", control=Redis.from_url(redis_url, decode_responses=True))
    got: list[str] = []
    box.mailbox.handlers["in"] = lambda body: got.append(body["data"])
    admin = Redis.from_url(redis_url)
    try:
        before = await reply_stats(admin)
        box.start()
        await until(lambda: listening(admin, channel("owner")), WAIT_S, "the listener")
        box.mailbox.send("owner", {"op": "in", "data": "decoded"})
        await until(lambda: got == ["decoded"], WAIT_S, "the message")
        assert box.lost.count == 0 and await reply_stats(admin) == (before[0] + 3, before[1])
    finally:
        await box.stop()
        await admin.aclose()


async def test_a_redis_that_stops_answering_fails_each_publish_in_time_and_reports_it_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Redis stops reading (a stuck or unreachable server, here one stopped with SIGSTOP): connecting the publisher,
    and a publish too large for the socket's buffers, fail after ``PUBLISH_TIMEOUT_S`` rather than hang the
    publisher (which is not idle while it waits), the loss is reported (the relays start again), the stuck connection is dropped without waiting for
    its buffer to drain, and once Redis answers again messages are published."""
    monkeypatch.setattr(mailbox_module, "PUBLISH_TIMEOUT_S", 0.3)
    with redis_server() as server:
        url = server.url()
        admin = Redis.from_url(url)
        pid = int((await admin.info("server"))["process_id"])  # admin connects first (``connections``)
        box = Box(url, "origin")
        try:
            box.start(listen=False)
            os.kill(pid, signal.SIGSTOP)
            try:
                box.mailbox.send("nobody", {"op": "in", "data": "while stopped"})
                await until(lambda: box.lost.count == 1, WAIT_S, "connecting reported failed")
                await until(box.mailbox.idle, WAIT_S, "the publisher idle")
            finally:
                os.kill(pid, signal.SIGCONT)
            box.mailbox.send("nobody", {"op": "in", "data": "answered"})
            await until(lambda: box.mailbox.published == 1, WAIT_S, "a publish once Redis answers")
            os.kill(pid, signal.SIGSTOP)
            try:
                box.mailbox.send("nobody", {"op": "in", "data": "x" * (32 << 20)})

                def stuck_then_failed() -> bool:  # not idle meanwhile: a closing member waits for the write
                    assert box.lost.count == 2 or not box.mailbox.idle(), "idle while a write is stuck"
                    return box.lost.count == 2

                await until(stuck_then_failed, WAIT_S, "the stuck publish reported failed", every=0.01)
                await until(box.mailbox.idle, WAIT_S, "the publisher idle")
            finally:
                os.kill(pid, signal.SIGCONT)
            box.mailbox.send("nobody", {"op": "in", "data": "again"})
            await until(lambda: box.mailbox.published == 2, WAIT_S, "a publish once Redis answers again")
            assert box.lost.count == 2

            async def one_publisher() -> bool:  # the stuck one was closed, not left to finish its write
                return [c["cmd"] for c in await connections(admin)] == ["publish"]

            await until(one_publisher, WAIT_S, "the stuck connection closed")
        finally:
            await box.stop()
            await admin.aclose()


# -- calls to a table's owner -------------------------------------------------------------------------------------


class Host:
    """A stand-in for the owner's lobby (``TableHost``): the tables it holds, and ``run_local``, which returns
    ``answers[method]``, or raises it when it is an exception."""

    def __init__(self, tables: list[str], answers: dict[str, Any]) -> None:
        self.tables: dict[str, Any] = dict.fromkeys(tables)
        self.answers = answers
        self.ran: list[tuple[str, str, dict[str, Any]]] = []

    async def run_local(self, method: str, table_id: str, args: dict[str, Any]) -> dict[str, Any]:
        self.ran.append((method, table_id, args))
        answer = self.answers[method]
        if isinstance(answer, Exception):
            raise answer
        result: dict[str, Any] = answer
        return result


async def refusal(call: Any) -> TableError:
    """The ``TableError`` the awaitable ``call`` raises."""
    with pytest.raises(TableError) as raised:
        await call
    return raised.value


async def test_a_call_returns_the_owner_s_answer_or_refusal_and_503_when_the_owner_fails_moved_or_is_silent(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A lobby operation forwarded to a table's owner: its answer comes back as the owner's lobby gave it; its
    refusal is raised at the caller with the owner's status, code, reason and params; an operation that fails
    there for another reason is 503 (try again) and logged at the owner with the operation's name; a table the
    owner no longer holds, or an owner that is stopping, answers 503 (the table moved); an owner that never
    answers is 503 after the call's timeout, and the call is forgotten: its late reply, or a reply nobody asked
    for, is dropped without disturbing the listener."""
    async with boxes(redis_url, "origin", "owner") as opened:
        draining = [False]
        caller = Calls(opened["origin"].mailbox, opened["origin"].mailbox.redis, 5.0, lambda: False)
        answerer = Calls(opened["owner"].mailbox, opened["owner"].mailbox.redis, 5.0, lambda: draining[0])
        seat_taken = TableError(409, "seat.taken", "that seat is taken", {"seat": 1})
        host = Host(
            ["t1"], {"join": {"seat": 1, "token": "tk"}, "leave": seat_taken, "start": RuntimeError("boom")}
        )
        answerer.host = host  # type: ignore[assignment]

        assert await caller.call("owner", "t1", "join", {"name": "bo"}) == {"seat": 1, "token": "tk"}
        assert host.ran == [("join", "t1", {"name": "bo"})]

        refused = await refusal(caller.call("owner", "t1", "leave", {}))
        assert (refused.status, refused.code, str(refused), refused.params) == (
            409,
            "seat.taken",
            "that seat is taken",
            {"seat": 1},
        )

        with caplog.at_level(logging.ERROR, "cardtable.server.cluster.calls"):
            failed = await refusal(caller.call("owner", "t1", "start", {}))
        assert (failed.status, failed.code, str(failed), failed.params) == (
            503,
            "http.error",
            "the operation failed: boom",
            {"status": 503},
        )
        (logged,) = caplog.records
        assert logged.getMessage() == "a forwarded start failed" and logged.exc_info is not None

        moved = ("the table moved to another server process: try again", {"status": 503})
        elsewhere = await refusal(caller.call("owner", "t2", "join", {"name": "bo"}))
        assert (elsewhere.status, elsewhere.code, (str(elsewhere), elsewhere.params)) == (
            503,
            "http.error",
            moved,
        )
        draining[0] = True
        stopping = await refusal(caller.call("owner", "t1", "join", {"name": "bo"}))
        assert (stopping.status, stopping.code, (str(stopping), stopping.params)) == (
            503,
            "http.error",
            moved,
        )
        assert len(host.ran) == 3  # neither ran

        impatient = Calls(opened["origin"].mailbox, opened["origin"].mailbox.redis, 0.2, lambda: False)
        silent = await refusal(asyncio.wait_for(impatient.call("gone", "t1", "join", {"name": "bo"}), WAIT_S))
        assert (silent.status, silent.code, str(silent), silent.params) == (
            503,
            "http.error",
            "the server process holding this table did not answer: try again",
            {"status": 503},
        )
        assert impatient.waiting == {} and caller.waiting == {} and answerer.waiting == {}

        # the silent owner answers after all, too late (and a reply nobody asked for): both are dropped, the
        # caller's listener goes on (a raise there would reconnect it and reset every relayed connection)
        received = opened["origin"].mailbox.received
        for late in ("0f1e2d3c", "never-asked"):  # no call waits under either id (call ids are uuid4 hex)
            opened["owner"].mailbox.send("origin", {"op": "reply", "id": late, "ok": True, "result": {}})
        await until(lambda: opened["origin"].mailbox.received == received + 2, WAIT_S, "the late replies")
        assert opened["origin"].lost.count == 0
        draining[0] = False
        # the replies at origin go to the Calls made last there (impatient's): a patient one takes them now
        patient = Calls(opened["origin"].mailbox, opened["origin"].mailbox.redis, 5.0, lambda: False)
        assert await patient.call("owner", "t1", "join", {"name": "cy"}) == {"seat": 1, "token": "tk"}


async def test_the_lobby_reads_what_owners_published_and_a_lock_excludes_until_released(
    redis_url: str,
) -> None:
    """The lobby shows a table owned elsewhere as its owner last published it (and nothing for one never
    published); a lock over all processes is held by one at a time and released at once when its block ends."""
    redis = Redis.from_url(redis_url)
    mailbox = Mailbox(redis, redis, "origin", Lost())
    calls = Calls(mailbox, redis, 5.0, lambda: False)
    try:
        await redis.hset(LOBBY, "t1", b'{"id":"t1","game":"nerts","seats":[]}')
        assert await calls.lobby([]) == {}
        assert await calls.lobby(["t1", "t2"]) == {"t1": {"id": "t1", "game": "nerts", "seats": []}}
        order: list[str] = []

        async def hold(name: str) -> None:
            async with calls.lock("play:nerts"):
                order.append(f"{name} in")
                await asyncio.sleep(0.05)  # the time it is held, not a wait for something
                order.append(f"{name} out")

        await asyncio.gather(hold("a"), hold("b"))
        assert order in (["a in", "a out", "b in", "b out"], ["b in", "b out", "a in", "a out"])
        assert not await redis.exists("ct:lock:play:nerts")
    finally:
        await redis.aclose()


# -- the cluster member -------------------------------------------------------------------------------------------


@asynccontextmanager
async def member(
    redis_url: str, tmp_path: Path, lease_ms: int = 3000
) -> AsyncIterator[tuple[Cluster, Manager]]:
    """A cluster member opened on ``redis_url`` with its lobby on a SQLite file, attached and listening; its lobby
    and the member close at the end unless the test closed them."""
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'member.db'}", cluster=True)
    cluster = await Cluster.open(
        redis_url, store, ClusterSettings(sweep_s=600, lease_ms=lease_ms, call_timeout_s=0.3)
    )
    manager = await Manager.open(store, SETTINGS, cluster)
    try:
        admin = Redis.from_url(redis_url)
        try:
            await until(lambda: listening(admin, channel(cluster.process)), WAIT_S, "the member listening")
        finally:
            await admin.aclose()
        yield cluster, manager
    finally:
        if not cluster.draining:
            await manager.close()
            await cluster.close()
        await store.close()


def cluster_tasks() -> list[str]:
    """The names of the running tasks named ``cardtable-cluster-...``, sorted."""
    return sorted(t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("cardtable-cluster-"))


async def test_a_member_runs_named_tasks_sends_what_it_queued_before_closing_and_leaves_nothing_behind(
    redis_url: str, tmp_path: Path
) -> None:
    """A member is alive in Redis from the moment it opens (for at most a lease); its background work runs as
    tasks named ``cardtable-cluster-...`` (a request's cost leaves them out by that name); a call to a process
    that never answers is 503 after its timeout; its listener recovers
    when Redis drops it; a WebSocket it counts keeps counting for two lease times; a message it queues
    reaches the process it is for, even when it closes right after; closing takes no fixed pause, ends those
    tasks, deletes its alive key and closes its Redis connections."""
    admin = Redis.from_url(redis_url)
    await admin.ping()
    try:
        async with boxes(redis_url, "other") as opened, member(redis_url, tmp_path) as (cluster, manager):
            got: list[dict[str, Any]] = []
            opened["other"].mailbox.handlers["note"] = got.append
            alive = ALIVE_PREFIX + cluster.process
            assert await admin.get(alive) == b"1" and 0 < await admin.pttl(alive) <= 3000
            assert cluster_tasks() == [
                f"cardtable-cluster-{n}" for n in ("beat", "listen", "publish", "renew", "sweep")
            ]
            # the publisher and the renewals copy or use the small control pool, never queued behind requests
            assert cluster.mailbox.control.connection_pool.max_connections == CONTROL_CONNECTIONS
            assert cluster.mailbox.redis.connection_pool.max_connections == REDIS_CONNECTIONS
            # a lobby operation forwarded to a process that never answers is 503 after the call timeout
            silent = await refusal(asyncio.wait_for(cluster.call("gone", "t1", "join", {}), WAIT_S))
            assert silent.status == 503
            # a WebSocket counted for an address keeps counting for two lease times unless refreshed
            counted = await cluster.limits.open_socket("198.51.100.7", 10)
            assert counted is not None
            left_ms = await admin.zscore("ct:sockets:198.51.100.7", counted) - time.time() * 1000
            assert 5000 < left_ms <= 6000
            # its listener, dropped by Redis, subscribes again (the loss resets its relays) and hears messages
            heard: list[dict[str, Any]] = []
            cluster.mailbox.handlers["note"] = heard.append
            listeners = [int(c["id"]) for c in await connections(admin) if c["cmd"] == "subscribe"]
            await admin.client_kill_filter(
                _id=str(max(listeners))
            )  # the member's: opened after the other box's

            async def deliver() -> (
                bool
            ):  # what is published before it subscribes again is lost: send until heard
                await admin.publish(channel(cluster.process), msgspec.msgpack.encode([{"op": "note"}]))
                return bool(heard)

            await until(deliver, WAIT_S, "the member hearing messages again", every=0.1)
            await manager.close()
            cluster.send("other", {"op": "note", "n": 1})  # queued as the member closes
            started = time.monotonic()
            await cluster.close()
            assert (
                time.monotonic() - started < 1.0
            )  # a rolling restart waits for no fixed pause (here 0.07 s)
            assert got == [{"op": "note", "n": 1}]
            assert cluster_tasks() == []
            assert await admin.exists(alive) == 0

            async def only_the_other_box_left() -> bool:
                # its listener, and the admin client that saw it listen
                return sorted(c["cmd"] for c in await connections(admin)) == ["pubsub|numsub", "subscribe"]

            await until(only_the_other_box_left, WAIT_S, "the member's connections closed")
    finally:
        await admin.aclose()


async def test_handing_over_releases_and_names_every_table_and_reports_how_many(
    redis_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SIGTERM: the member lets go of every table it holds (its lobby no longer has it, its lease is released) and
    names each on ``ct:released`` (until then its keeper renews their leases), where the other processes take it at once (a table claimed but never created is
    passed over, not a reason to stop); the operator's log says how many."""
    released: list[str] = []
    admin = Redis.from_url(redis_url)
    try:
        async with (
            boxes(redis_url, "other", **{RELEASED: released.append}),
            member(redis_url, tmp_path, lease_ms=900) as (cluster, manager),
        ):
            made = [await manager.create("nerts", {"players": 2}, None, "ana", None, 60) for _ in range(2)]
            # the keeper's thread renews the member's leases and its alive key (every third of a lease)
            keys = [ALIVE_PREFIX + cluster.process, *(LEASE_PREFIX + table.id for table, _, _ in made)]
            shortened = {}
            for key in keys:  # shorter than a lease: a renewal shows as a later expiry
                await admin.pexpire(key, 600)
                shortened[key] = await admin.execute_command("PEXPIRETIME", key)

            async def renewed() -> bool:
                return all(
                    [await admin.execute_command("PEXPIRETIME", k) > t + 100 for k, t in shortened.items()]
                )

            await until(renewed, WAIT_S, "the leases and the alive key renewed")
            await cluster.claim_new("never-made")  # a creation that failed: claimed, then forgotten
            cluster.forget_new("never-made")
            made.append(await manager.create("nerts", {"players": 2}, None, "ana", None, 60))
            ids = sorted(table.id for table, _, _ in made)
            assert list(cluster.owned) == [made[0][0].id, made[1][0].id, "never-made", made[2][0].id]
            with caplog.at_level(logging.INFO, "cardtable.server.cluster.member"):
                await cluster.hand_over()
            await until(lambda: sorted(released) == ids, WAIT_S, "every table named")
            assert not manager.tables and set(cluster.owned) <= {"never-made"}  # its lease goes at a renewal
            assert await admin.exists(*(LEASE_PREFIX + table_id for table_id in ids)) == 0
            handed = [r.getMessage() for r in caplog.records if r.name.endswith("member")]
            assert handed == ["handed over 3 tables"]
    finally:
        await admin.aclose()
