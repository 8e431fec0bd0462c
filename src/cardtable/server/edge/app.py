"""The ASGI app and ``serve``: FastAPI with the lobby (``/api``), the play socket (``/ws``) and the web client (``/``).

``cardtable serve`` (also ``python -m cardtable serve --port N --db URL``) calls :func:`serve`.
Environment variables set server-wide knobs (see :func:`settings_from_env`).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from cardtable.server.cluster.member import Cluster
from cardtable.server.cluster.ownership import ClusterSettings
from cardtable.server.core.addresses import trusted_networks
from cardtable.server.core.clock import Clock
from cardtable.server.core.errors import TableError, describe_validation_errors, error_body
from cardtable.server.core.limits import FAILURE_WINDOW_S, SharedMovingWindows, TokenBuckets
from cardtable.server.core.loop_lag import LoopLagMonitor
from cardtable.server.core.settings import Settings, settings_from_env
from cardtable.server.edge.guard import BodyGuard, SecurityHeaders, guarded_h11
from cardtable.server.edge.routes import READ, router
from cardtable.server.edge.ws import serve_connection, table_socket
from cardtable.server.edge.ws_protocol import BurstWebSockets
from cardtable.server.lobby import daily_routes
from cardtable.server.lobby import reviews as review_routes
from cardtable.server.lobby.manager import Manager
from cardtable.server.players import accounts, push_routes
from cardtable.server.players import leaderboards as players
from cardtable.server.players.account_errors import AccountError, account_error
from cardtable.server.storage.store import Store
from cardtable.server.table import bots as server_bots
from cardtable.server.table.seat_accounts import restore_seat_accounts

STATIC = Path(__file__).resolve().parents[2] / "web" / "static"

log = logging.getLogger("cardtable.server.edge.app")


def cluster_settings(settings: Settings) -> ClusterSettings:
    """The :class:`ClusterSettings` of ``settings`` (``lease_ms``, ``sweep_s``, ``call_timeout_s``: ``docs/deploy.md``)."""
    return ClusterSettings(lease_ms=settings.lease_ms, sweep_s=settings.sweep_s,
                           call_timeout_s=settings.call_timeout_s)


def create_app(db: str | None = None, settings: Settings | None = None, redis: str | None = None) -> FastAPI:
    """The app: opens the database at ``db`` (default: SQLite in the user's data folder) when it starts, applies
    the migrations and rebuilds every unfinished table from its record. With ``redis`` (``redis://HOST:PORT/DB``)
    the process is one of several sharing the database (``server/cluster/member.py``, ``docs/deploy.md``)."""
    settings = settings or settings_from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = await Store.open(db, cluster=redis is not None,
                                 commit_interval_s=settings.commit_interval_ms / 1000.0)
        cluster = None
        if redis is not None:
            cluster = await Cluster.open(redis, store, cluster_settings(settings))
        manager = await Manager.open(store, settings, cluster)
        manager.clock = app.state.clock  # the day of the daily deal's private tables (lobby/daily_private.py)
        if cluster is not None:  # set before anything else runs: Manager.open has just attached the cluster
            cluster.relays.serve = functools.partial(serve_connection, manager)
        if cluster is not None:  # sign-in limits over every process
            app.state.sign_in_limiter = SharedMovingWindows(cluster.limits.redis, FAILURE_WINDOW_S)
        await restore_seat_accounts(store, manager.tables)
        app.state.store = store
        app.state.manager = manager
        review_routes.serve_reviews(store, settings.review_simulations)  # each person's seat reviewed at its match's end
        lag = LoopLagMonitor(settings.loop_lag_interval_ms / 1000.0) if settings.loop_lag_interval_ms > 0 else None
        if lag is not None:  # GET /api/loop-lag serves it; one line in the log at the end
            lag.start()
            app.state.loop_lag = lag
        try:
            yield
        finally:
            if lag is not None:
                lag.stop()
                log.info("event loop lag over the run: %s", lag.histogram.summary())
            await review_routes.stop_reviews(store)
            await manager.close()
            if cluster is not None:
                await cluster.close()
            await store.close()
            server_bots.shutdown_pool()

    app = FastAPI(title="cardtable", lifespan=lifespan)
    app.state.settings = settings
    app.state.clock = Clock()  # the day, for the daily deal (tests move it)
    app.state.lobby_reads = TokenBuckets(settings.lobby_reads_per_second, settings.lobby_read_burst)

    @app.exception_handler(TableError)
    async def table_error(_request: Request, error: TableError) -> JSONResponse:
        wait = error.params.get("retry_after_s")
        return JSONResponse(error.to_dict(), status_code=error.status,
                            headers=None if wait is None else {"Retry-After": str(wait)})

    @app.get("/api/loop-lag", include_in_schema=False)
    async def loop_lag(request: Request) -> dict[str, Any]:
        """The event loop's lag so far (``LagHistogram.to_dict``); 404 unless ``loop_lag_interval_ms`` is set."""
        monitor: LoopLagMonitor | None = getattr(request.app.state, "loop_lag", None)
        if monitor is None:
            raise StarletteHTTPException(404, "the loop lag monitor is off (loop_lag_interval_ms)")
        return {"interval_ms": monitor.interval_s * 1000.0, **monitor.histogram.to_dict()}

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, error: RequestValidationError) -> JSONResponse:
        detail, params = describe_validation_errors(list(error.errors()))
        return JSONResponse(error_body(detail, "request.invalid", params), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        if not request.url.path.startswith("/api"):
            return await http_exception_handler(request, error)
        return JSONResponse(
            {"detail": str(error.detail), "code": "http.error", "params": {"status": error.status_code}},
            status_code=error.status_code, headers=getattr(error, "headers", None),
        )

    app.add_middleware(BodyGuard, max_body_bytes=settings.max_body_bytes, max_header_bytes=settings.max_header_bytes)
    docs = tuple(path for path in (app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url) if path)
    app.add_middleware(SecurityHeaders, docs_paths=docs)  # added last: outermost, so BodyGuard's refusals get them too

    app.include_router(router)
    app.include_router(accounts.router)
    app.include_router(players.router)
    app.include_router(push_routes.router)
    app.include_router(daily_routes.router)
    app.include_router(review_routes.router, dependencies=READ)
    app.add_exception_handler(AccountError, account_error)
    app.add_api_websocket_route("/ws/tables/{table_id}", table_socket)
    if STATIC.is_dir():
        app.mount("/", StaticFiles(directory=STATIC, html=True), name="web")
    return app


GC_THRESHOLDS = (50_000, 20, 1_000)
"""The garbage collector's thresholds under ``cardtable serve`` (``CARDTABLE_GC_THRESHOLDS="a,b,c"`` overrides).

What a young collection costs is set by the objects alive in the young generation, not by its threshold: every
connection waiting for its next message holds a fresh coroutine, future and buffers, so with 1,600 connections the
young generation always holds about 30,000 live objects, and collecting it takes 15-20 ms whatever the threshold.
A threshold of 1,000 ran such a collection every 2-3 s (with 400 Nerts tables at 1 action/s/seat), which made most of
the ack latency's 99th percentile; 50,000 runs it about once a minute or two (a pause of 20-60 ms), and full
collections stay rare (20, 1,000). Rare collections cost little memory because a closed connection leaves no
reference cycle behind (``tests/test_server_memory.py``): resident memory rises a few MB between young collections
and no further (``bench/soak.py``; figures in ``docs/deploy.md``)."""


def uvicorn_config(app: FastAPI, host: str, port: int, settings: Settings) -> Any:
    """The ``uvicorn.Config`` that :func:`serve` runs: the h11 protocol with the per-address cap and request timeout
    of ``settings`` (``server/edge/guard.py``), its header size and keep-alive, WebSocket frames of at most 16 KiB,
    uvicorn's WebSocket protocol with burst sends (``server/edge/ws_protocol.py``), and ``X-Forwarded-For`` and
    ``X-Forwarded-Proto`` read only from the proxies of ``forwarded_allow_ips`` (uvicorn's own default would believe
    them from 127.0.0.1, so any local client could pick its address). ``ValueError`` for a ``forwarded_allow_ips``
    item that is not an IP address or network."""
    proxies = trusted_networks(settings.forwarded_allow_ips)
    return uvicorn.Config(
        app, host=host, port=port, log_level="warning",
        http=guarded_h11(settings.max_connections_per_address, settings.request_timeout_s, proxies),
        h11_max_incomplete_event_size=settings.max_header_bytes, timeout_keep_alive=settings.keep_alive_s,
        ws_max_size=16 * 1024, ws=BurstWebSockets,
        proxy_headers=bool(proxies), forwarded_allow_ips=[str(network) for network in proxies],
    )


def hand_over_server(config: Any, app: FastAPI) -> Any:
    """The ``uvicorn.Server`` of :func:`serve` for one of several processes: on SIGTERM or SIGINT it first hands
    ``app``'s tables over (``Cluster.hand_over``: leases released, connections closed with 1012), then stops."""
    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            manager = getattr(app.state, "manager", None)
            cluster = getattr(manager, "cluster", None)
            if cluster is None or cluster.draining or self.should_exit:
                super().handle_exit(sig, frame)
                return
            loop = asyncio.get_event_loop()

            def start() -> None:
                task = loop.create_task(cluster.hand_over())
                task.add_done_callback(lambda _: uvicorn.Server.handle_exit(self, sig, frame))

            loop.call_soon_threadsafe(start)

    return Server(config)


def serve(host: str = "127.0.0.1", port: int = 8000, db: str | None = None, settings: Settings | None = None,
          redis: str | None = None) -> None:
    """Run the server with uvicorn until interrupted (``cardtable serve``), with the HTTP limits of ``settings``
    (default :func:`settings_from_env`; ``docs/deploy.md``); with ``redis``, as one of several processes."""
    settings = settings or settings_from_env()
    thresholds = GC_THRESHOLDS
    if os.environ.get("CARDTABLE_GC_THRESHOLDS"):
        a, b, c = (int(part) for part in os.environ["CARDTABLE_GC_THRESHOLDS"].split(","))
        thresholds = (a, b, c)

    # The database driver (aiosqlite) answers from a thread: a short GIL switch interval lets the event loop take
    # each answer at once instead of up to 5 ms later while it is busy (a large share of the ack latency).
    sys.setswitchinterval(0.0005)
    # Garbage collection pauses are the other share of the latency tail: keep the start-up objects out of every
    # collection (freeze) and use GC_THRESHOLDS.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    app = create_app(db, settings, redis)
    config = uvicorn_config(app, host, port, settings)
    server = hand_over_server(config, app) if redis else uvicorn.Server(config)
    server.run()
