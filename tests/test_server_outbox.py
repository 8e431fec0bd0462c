"""``server/table/connections.py``'s ``Outbox`` with a direct writer (the connection's ``write_texts_now``): texts
queued while the writer task waits are written at the owner's flush, in order and in one write, without waking
the writer; right after the step when nobody flushes; and handed to the writer task, in order, when the direct
writer cannot take them, fails, or a close waits. The owner's step writes an ack with its update
(``Table._apply_batch``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from cardtable.server.storage.store import Store
from cardtable.server.table.connections import Outbox
from table_helpers import messages_of, play, started_nerts


class Direct:
    """A direct writer that records each write (a list of texts) and the task it ran in, or refuses (``False``)
    or fails (``OSError``) as told."""

    def __init__(self) -> None:
        self.writes: list[list[str]] = []
        self.tasks: list[asyncio.Task[object] | None] = []
        self.answer: bool | None = True  # None: raise

    def __call__(self, texts: Sequence[str]) -> bool:
        if self.answer is None:
            raise OSError("the socket broke")
        if self.answer:
            self.writes.append(list(texts))
            self.tasks.append(asyncio.current_task())
        return self.answer


async def waiting_reader(outbox: Outbox) -> asyncio.Task[list[str | None]]:
    """A writer task's stand-in: takes items until the close (``None``), returned with it; started and waiting."""

    async def read() -> list[str | None]:
        taken: list[str | None] = []
        while (item := await outbox.get()) is not None:
            taken.append(item)
        return [*taken, None]

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)  # it waits in get()
    return reader


async def outbox_with_a_waiting_reader() -> tuple[Outbox, Direct, asyncio.Task[list[str | None]]]:
    """An outbox with a :class:`Direct` writer and a reader waiting on it (:func:`waiting_reader`)."""
    outbox, direct = Outbox(), Direct()
    outbox.direct = direct
    return outbox, direct, await waiting_reader(outbox)


async def test_texts_queued_while_the_reader_waits_are_written_at_the_flush_in_one_write() -> None:
    outbox, direct, reader = await outbox_with_a_waiting_reader()
    outbox.put_nowait("ack")
    outbox.put_nowait("update")
    assert direct.writes == [] and outbox.qsize() == 2  # nothing written before the flush
    outbox.flush()
    assert direct.writes == [["ack", "update"]] and outbox.empty()
    for _ in range(3):
        await asyncio.sleep(0)
    assert direct.writes == [["ack", "update"]]  # the callback after the step found nothing more
    outbox.put_nowait(None)  # the close goes to the reader, which took nothing else
    assert await asyncio.wait_for(reader, 5) == [None]


async def test_without_a_flush_the_texts_are_written_right_after_the_step() -> None:
    outbox, direct, reader = await outbox_with_a_waiting_reader()
    outbox.put_nowait("pong")
    outbox.put_nowait("error")
    await asyncio.sleep(0)
    assert direct.writes == [["pong", "error"]] and direct.tasks == [None]  # a callback, not a task
    outbox.put_nowait(None)
    assert await asyncio.wait_for(reader, 5) == [None]


async def test_what_the_direct_writer_cannot_take_goes_to_the_reader_in_order() -> None:
    for answer in (False, None):  # refused (the socket's buffer full), failed
        outbox, direct, reader = await outbox_with_a_waiting_reader()
        direct.answer = answer
        outbox.put_nowait("one")
        outbox.put_nowait("two")
        outbox.flush()
        assert direct.writes == []
        outbox.put_nowait("three")  # the reader was woken: it takes this too, after the others
        outbox.put_nowait(None)
        assert await asyncio.wait_for(reader, 5) == ["one", "two", "three", None]


async def test_a_close_goes_to_the_reader_after_what_was_queued() -> None:
    outbox, direct, reader = await outbox_with_a_waiting_reader()
    outbox.put_nowait("goodbye")
    outbox.put_nowait(None)
    outbox.flush()
    assert await asyncio.wait_for(reader, 5) == ["goodbye", None]
    assert direct.writes == []  # the reader wrote them: a close is its to send


async def test_nothing_is_written_directly_while_the_reader_is_busy() -> None:
    outbox, direct = Outbox(), Direct()
    outbox.direct = direct
    outbox.put_nowait("queued before the reader came")  # no reader waits: the items are its when it comes
    outbox.flush()
    await asyncio.sleep(0)
    assert direct.writes == [] and outbox.get_nowait() == "queued before the reader came"


async def test_the_owner_writes_an_ack_with_its_update_in_its_own_step(store: Store) -> None:
    table, connection = await started_nerts(store, "t1")
    try:
        messages_of(connection)
        direct = Direct()
        connection.outbox.direct = direct
        reader = await waiting_reader(connection.outbox)
        ok, version = await play(table, 0, {"type": "flip"}, connection=connection)
        assert ok
        assert [[json.loads(text)["type"] for text in write] for write in direct.writes] == [
            ["ack", "update"]
        ]
        assert json.loads(direct.writes[0][0]) == {"type": "ack", "seq": 7, "v": version}
        assert direct.tasks == [table.task]  # in the owner's step, not in a callback after it
        assert not reader.done()  # the writer task was never woken
        reader.cancel()
    finally:
        await table.stop()
