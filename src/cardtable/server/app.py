"""The ASGI app and ``serve``: FastAPI with the lobby (``/api``), the play socket (``/ws``) and the web client (``/``).

``cardtable serve`` (also ``python -m cardtable serve --port N --db URL``) calls :func:`serve`.
Environment variables set server-wide knobs (see :func:`settings_from_env`).
"""

from __future__ import annotations

import gc
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from cardtable.server import bots as server_bots
from cardtable.server.lobby import router
from cardtable.server.manager import Manager
from cardtable.server.store import Store
from cardtable.server.table import Settings, TableError
from cardtable.server.ws import table_socket

STATIC = Path(__file__).resolve().parent.parent / "web" / "static"


def settings_from_env(**overrides: float) -> Settings:
    """:class:`Settings` from ``CARDTABLE_GRACE_SECONDS`` (default 60), ``CARDTABLE_HAND_PAUSE`` (seconds between
    hands, 4), ``CARDTABLE_BOT_PACE`` (bot delay multiplier, 1.0), ``CARDTABLE_ANEMONE_BOT_DELAY_MS`` (700),
    ``CARDTABLE_PLAY_NOW_START`` (seconds a Play now table waits before it starts, 5) and ``CARDTABLE_SOLO_START``
    (seconds a table of one person and bots waits for its creator's connection, 3);
    keyword ``overrides`` win. ``ValueError`` for a value that is not a number."""
    settings = Settings()
    env = {
        "default_grace_s": "CARDTABLE_GRACE_SECONDS", "hand_pause_s": "CARDTABLE_HAND_PAUSE",
        "bot_pace": "CARDTABLE_BOT_PACE", "anemone_bot_delay_ms": "CARDTABLE_ANEMONE_BOT_DELAY_MS",
        "play_now_start_s": "CARDTABLE_PLAY_NOW_START", "solo_start_s": "CARDTABLE_SOLO_START",
    }
    for attr, var in env.items():
        if var in os.environ:
            setattr(settings, attr, type(getattr(settings, attr))(float(os.environ[var])))
    for attr, value in overrides.items():
        setattr(settings, attr, type(getattr(settings, attr))(value))
    return settings


def create_app(db: str | None = None, settings: Settings | None = None) -> FastAPI:
    """The app: opens the database at ``db`` (default: SQLite in the user's data folder) when it starts, applies
    the migrations and rebuilds every unfinished table from its record."""
    settings = settings or settings_from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = await Store.open(db)
        manager = await Manager.open(store, settings)
        app.state.store = store
        app.state.manager = manager
        try:
            yield
        finally:
            await manager.close()
            await store.close()
            server_bots.shutdown_pool()

    app = FastAPI(title="cardtable", lifespan=lifespan)

    @app.exception_handler(TableError)
    async def table_error(_request: Request, error: TableError) -> JSONResponse:
        return JSONResponse(error.to_dict(), status_code=error.status)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, error: RequestValidationError) -> JSONResponse:
        problems = error.errors()
        first = problems[0] if problems else {}
        field = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        reason = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg', 'invalid')}"
            for e in problems
        )
        return JSONResponse(
            {"detail": reason or "invalid request", "code": "request.invalid",
             "params": {"field": field, "detail": reason}},
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        if not request.url.path.startswith("/api"):
            return await http_exception_handler(request, error)
        return JSONResponse(
            {"detail": str(error.detail), "code": "http.error", "params": {"status": error.status_code}},
            status_code=error.status_code, headers=getattr(error, "headers", None),
        )

    app.include_router(router)
    app.add_api_websocket_route("/ws/tables/{table_id}", table_socket)
    if STATIC.is_dir():
        app.mount("/", StaticFiles(directory=STATIC, html=True), name="web")
    return app


def serve(host: str = "127.0.0.1", port: int = 8000, db: str | None = None) -> None:
    """Run the server with uvicorn until interrupted (``cardtable serve``)."""
    import uvicorn

    # The database driver (aiosqlite) answers from a thread: a short GIL switch interval lets the event loop take
    # each answer at once instead of up to 5 ms later while it is busy (a large share of the ack latency).
    sys.setswitchinterval(0.0005)
    # Garbage collection pauses are the other share of the latency tail: keep the start-up objects out of every
    # collection, keep the young generation small (a 50 000-object one took 20-40 ms to collect) and full
    # collections rare (one takes 50-70 ms with 200 tables in play).
    gc.collect()
    gc.freeze()
    gc.set_threshold(1_000, 20, 1_000)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    uvicorn.run(create_app(db), host=host, port=port, log_level="warning", ws_max_size=1024 * 1024)
