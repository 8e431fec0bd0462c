"""A delaying TCP proxy for the fairness tests (``tests/test_fairness_proxy.py``): this machine has no ``tc netem``.

``python tests/delay_proxy.py TARGET_PORT DELAY_MS`` listens on a free port of 127.0.0.1, prints it on one line and
forwards every connection to ``127.0.0.1:TARGET_PORT``, delivering each chunk ``DELAY_MS`` after it was read, in
each direction, in order. It runs in a process of its own so that the tests' own load does not add to its delay.
"""

from __future__ import annotations

import asyncio
import sys


class DelayProxy:
    """A TCP proxy on 127.0.0.1 that delivers every chunk ``delay_ms`` after it read it, in each direction, in order."""

    def __init__(self, target_port: int, delay_ms: float) -> None:
        self.target_port = target_port
        self.delay_s = delay_ms / 1000.0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> DelayProxy:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target_port)
            await asyncio.gather(self._pipe(client_r, server_w), self._pipe(server_r, client_w))
        except OSError:
            pass
        finally:
            client_w.close()
            self._tasks.discard(task)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                await asyncio.sleep(max(0.0, due - loop.time()))  # not a wait: the delay this proxy adds
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        delivering = asyncio.create_task(deliver())
        try:
            while True:
                data = await reader.read(65536)
                queue.put_nowait((loop.time() + self.delay_s, data))
                if not data:
                    break
            await delivering
        finally:
            delivering.cancel()


async def main(target_port: int, delay_ms: float) -> None:
    async with DelayProxy(target_port, delay_ms) as proxy:
        print(proxy.port, flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
