"""Real services the tests start for themselves: a private PostgreSQL cluster and a private Redis (no mocks, nothing shared).

:func:`postgres_cluster` runs ``initdb`` and ``pg_ctl`` from the installed PostgreSQL (``/usr/lib/postgresql/*/bin``,
which ``scripts/setup --test`` installs from Debian when missing) in a temporary folder, on a free port of
127.0.0.1, and stops it at the end. As root it runs them as the ``postgres`` user (``initdb`` refuses root).
:func:`new_database` makes an empty database in it for one test. :func:`redis_server` runs ``redis-server`` (Debian's,
installed by ``scripts/setup --test`` when missing) on a free port with no persistence, and stops it at the end.
:func:`start_server` runs a real ``cardtable serve`` (``python -m cardtable serve``) on a free port and waits until
it answers: every test that needs the server as its own process starts it this way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def run_async(make: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine ``make()`` to its end from synchronous test code and return its result: with
    ``asyncio.run`` when no event loop runs in this thread, else in a thread of its own (``asyncio.run`` refuses
    to run inside a running loop, as under Playwright's sync API or an async test)."""

    async def main() -> T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result()


def postgres_bin() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl`` (the newest installed version), or ``None``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True, slots=True)
class Postgres:
    """A running cluster: connect to ``127.0.0.1:port`` as ``user`` (trust authentication, no password), or
    through its Unix socket in ``socket_dir``."""

    port: int
    user: str = "postgres"
    socket_dir: str | None = None

    def url(self, database: str = "postgres", *, unix: bool = False) -> str:
        """The SQLAlchemy async URL of ``database`` (with ``unix``: through the Unix socket)."""
        if unix and self.socket_dir:
            return f"postgresql+asyncpg://{self.user}@/{database}?host={self.socket_dir}&port={self.port}"
        return f"postgresql+asyncpg://{self.user}@127.0.0.1:{self.port}/{database}"


@contextlib.contextmanager
def postgres_cluster() -> Iterator[Postgres]:
    """Start a private PostgreSQL cluster and yield it; stopped and deleted afterwards.

    ``RuntimeError`` when PostgreSQL is not installed or does not start.
    """
    bindir = postgres_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed: run scripts/setup --test")
    folder = Path(tempfile.mkdtemp(prefix="cardtable-pg-"))
    data = folder / "data"
    run_as: list[str] = []
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    log = folder / "log"

    def run(*args: str) -> None:
        subprocess.run([*run_as, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--locale=C.UTF-8", "--no-sync")
        options = (f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB")
        run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "-t", "60", "start")
    except subprocess.CalledProcessError as error:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {error.stderr.decode(errors='replace')}") from None
    try:
        yield Postgres(port=port, socket_dir=str(folder))
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def new_database(cluster: Postgres, *, unix: bool = False) -> str:
    """Create an empty database in ``cluster``; returns its SQLAlchemy async URL (with ``unix``: through the
    cluster's Unix socket)."""
    import asyncpg

    name = "t_" + uuid.uuid4().hex[:16]

    async def make() -> None:
        conn = await asyncpg.connect(host="127.0.0.1", port=cluster.port, user=cluster.user, database="postgres")
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    run_async(make)
    return cluster.url(name, unix=unix)


@dataclass(frozen=True, slots=True)
class Redis:
    """A running private Redis on ``127.0.0.1:port`` (no password, nothing saved to disk)."""

    port: int
    socket: str | None = None

    def url(self, db: int = 0, *, unix: bool = False) -> str:
        """The ``redis://`` URL of logical database ``db`` (0 to 15); with ``unix``, the ``unix://`` URL of its
        socket."""
        if unix and self.socket:
            return f"unix://{self.socket}?db={db}"
        return f"redis://127.0.0.1:{self.port}/{db}"


@contextlib.contextmanager
def redis_server() -> Iterator[Redis]:
    """Start a private ``redis-server`` and yield it; stopped and its folder deleted afterwards.

    ``RuntimeError`` when Redis is not installed or does not answer within 10 s.
    """
    binary = shutil.which("redis-server") or ("/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None)
    if binary is None:
        raise RuntimeError("redis-server is not installed: run scripts/setup --test")
    folder = Path(tempfile.mkdtemp(prefix="cardtable-redis-"))
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder), "--daemonize", "no", "--loglevel", "warning",
         "--unixsocket", str(folder / "redis.sock"), "--unixsocketperm", "700"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(200):
            if process.poll() is not None:
                raise RuntimeError(f"Redis did not start: {process.stderr.read().decode(errors='replace') if process.stderr else ''}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError("Redis did not answer within 10 s")
        yield Redis(port=port, socket=str(folder / "redis.sock"))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)


def flush_redis(server: Redis) -> None:
    """Empty every logical database of ``server`` (``FLUSHALL``), so one test starts from nothing."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"*1\r\n$8\r\nFLUSHALL\r\n")
        reply = s.recv(64)
    if not reply.startswith(b"+OK"):
        raise RuntimeError(f"FLUSHALL failed: {reply!r}")


ROOT = Path(__file__).resolve().parent.parent


@dataclass(slots=True)
class Server:
    """A running ``cardtable serve`` process on ``127.0.0.1:port``, its output going to ``log``."""

    port: int
    proc: subprocess.Popen[bytes]
    log: Path | None = None
    args: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        """Whether the process runs."""
        return self.proc.poll() is None

    def output(self) -> str:
        """The end of its log (3000 characters), or ``""`` without one."""
        return self.log.read_text(errors="replace")[-3000:] if self.log is not None and self.log.exists() else ""

    def ready(self) -> bool:
        """Whether it answers ``GET /api/games`` with 200; ``RuntimeError`` (with its log) if it exited."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"the server on port {self.port} exited ({self.proc.returncode}): {self.output()}")
        try:
            with urllib.request.urlopen(self.base + "/api/games", timeout=2) as reply:
                return bool(reply.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self, timeout: float = 60) -> Server:
        """Wait until :meth:`ready` (``RuntimeError`` after ``timeout`` seconds, the process then killed)."""
        deadline = time.monotonic() + timeout
        while not self.ready():
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait(10)
                raise RuntimeError(f"the server on port {self.port} did not answer within {timeout:g} s: "
                                   f"{self.output()}")
            time.sleep(0.1)
        return self

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Send ``sig`` (after a ``SIGCONT``, should it be stopped) and wait for the exit, killing it after
        ``timeout`` seconds; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)


def start_server(db: str, *, redis: str | None = None, options: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, log: Path | None = None, port: int | None = None,
                 wait: float | None = 60) -> Server:
    """Start ``python -m cardtable serve --port PORT --db DB [--redis URL] OPTIONS...`` (``port``: a free one by
    default) with ``env`` added to this process's environment, its output appended to ``log`` (else discarded),
    from the repository's root. With ``wait`` (seconds), return once it answers HTTP (``RuntimeError`` with its
    log if it exits or does not answer in time); with ``None``, at once (then :meth:`Server.wait_ready`)."""
    port = port or free_port()
    args = [sys.executable, "-m", "cardtable", "serve", "--port", str(port), "--db", db]
    if redis is not None:
        args += ["--redis", redis]
    args += list(options)
    full_env = dict(os.environ, **(env or {}))
    if log is not None:
        with open(log, "ab") as out:
            proc = subprocess.Popen(args, env=full_env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    else:
        proc = subprocess.Popen(args, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    server = Server(port, proc, log, args)
    if wait is not None:
        server.wait_ready(wait)
    return server



def serve_in_thread(app: Any, port: int) -> tuple[Any, threading.Thread]:
    """``app`` served on ``127.0.0.1:port`` by uvicorn with ``cardtable serve``'s configuration
    (``app.uvicorn_config``, default settings), in a daemon thread of this process (so a test can look at each
    connection's protocol); returns the ``uvicorn.Server`` once it has started, and its thread. Stop it with
    ``server.should_exit = True`` and ``thread.join()``."""
    import uvicorn

    from cardtable.server.core.settings import Settings
    from cardtable.server.edge.app import uvicorn_config

    running = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, Settings()))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not running.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    return running, thread
