"""The server's settings (``docs/deploy.md``): one :class:`Settings` of knobs with defaults, each also set by an
environment variable and by a ``cardtable serve`` option of the same name.

``CARDTABLE_`` and the setting's name in capitals (``CARDTABLE_MAX_BODY_BYTES``), except the older ones in
:data:`ENV_NAMES`; the option is the variable's name without the prefix, in lower case with dashes
(``--max-body-bytes``, ``--grace-seconds``). This module imports nothing heavy, so that the command line can list
the options without loading the server.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass


@dataclass(slots=True)
class Settings:
    """Server-wide knobs, each with its default (``docs/deploy.md`` lists them, their variables and options).

    Play: ``hand_pause_s`` between hands when no person is there to press Ready, ``default_ready_s`` the countdown
    between hands for people who have not pressed Ready (tables that set none), ``bot_pace`` multiplies bot delays (tests use small ones),
    ``anemone_bot_delay_ms`` is an Enemy Anemone bot's pause before it plays, ``default_grace_s`` the grace before a
    bot plays for an absent person.

    HTTP (``server/edge/guard.py``): ``max_body_bytes`` per request body, ``max_header_bytes`` for a request's head,
    ``request_timeout_s`` for a whole request to arrive, ``keep_alive_s`` an idle connection is kept,
    ``max_connections_per_address`` open HTTP connections per client address, ``forwarded_allow_ips`` the proxies
    whose forwarded headers are believed (below).

    Connections to a table (``docs/protocol.md``, "Limits"): ``max_connections_per_token`` per seat token,
    ``max_connections_per_address_per_table``, ``max_spectators`` per table, ``max_sockets_per_address`` over the
    whole server, ``max_outbox`` messages waiting for a slow connection before it is dropped, and
    ``table_message_interval_s``: ``table`` messages are coalesced to at most one per this interval.

    Tables: ``open_table_idle_s`` an open table with nobody connected lives, ``abandon_after_s`` a table in play
    with no person connected lives beyond its grace before it ends as abandoned, ``expiry_check_s`` between sweeps,
    ``creates_per_minute`` and ``create_burst`` per client address, ``page_size`` and ``max_page_size`` of
    ``GET /api/tables``, ``lobby_reads_per_second`` and ``lobby_read_burst`` per client address (below).

    Several processes (``--redis``): ``lease_ms``, ``sweep_s``, ``call_timeout_s`` (below).

    Storage: ``commit_interval_ms`` (below).
    """

    hand_pause_s: float = 4.0
    bot_pace: float = 1.0
    anemone_bot_delay_ms: int = 700
    default_grace_s: float = 60.0
    default_ready_s: float = 15.0
    max_body_bytes: int = 65536
    max_header_bytes: int = 16384
    request_timeout_s: float = 10.0
    keep_alive_s: int = 5
    max_connections_per_address: int = 64
    max_connections_per_token: int = 4
    max_connections_per_address_per_table: int = 8
    max_spectators: int = 500
    max_sockets_per_address: int = 128
    max_outbox: int = 500
    table_message_interval_s: float = 0.25
    open_table_idle_s: float = 1800.0
    abandon_after_s: float = 600.0
    expiry_check_s: float = 30.0
    creates_per_minute: float = 10.0
    create_burst: int = 20
    page_size: int = 50
    max_page_size: int = 200
    chosen_seeds: int = 0
    """1: a creator's ``seed`` is taken at any table, for tests and benchmarks that need known deals; 0 (the
    default): only at a table whose other seats are all bots. A table with a chosen seed is never rated."""
    play_now_start_s: float = 5.0
    """Seconds a Play now table against bots waits for other people before it starts by itself."""
    solo_start_s: float = 3.0
    """Seconds a table whose other seats are all bots waits for its creator's connection before it starts anyway."""
    lease_ms: int = 5000
    """Several processes (``--redis``, ``server/cluster/member.py``): milliseconds a table's lease lives without renewal
    (renewed every third of it); a dead owner's tables are taken again within about this long plus a sweep."""
    sweep_s: float = 2.0
    """Several processes: seconds between sweeps for tables no process owns (their owner died)."""
    call_timeout_s: float = 10.0
    """Several processes: seconds a join, leave or start forwarded to the table's owner may take before it is
    answered 503."""
    lobby_reads_per_second: float = 20.0
    """Lobby reads (``GET /api/tables``, ``/api/finished``, a table's record and replay) per client address per
    second, counted by each process; beyond it ``429`` with ``Retry-After``."""
    lobby_read_burst: int = 60
    """Lobby reads a client address may make at once (a browser's lobby reads three lists every 5 s)."""
    forwarded_allow_ips: str = ""
    """The reverse proxies whose ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed: IP addresses or
    networks, comma-separated (``"127.0.0.1"``, ``"10.0.0.0/8, ::1"``). ``""`` (the default): nobody's, every
    client is its TCP peer. A request from one of them counts against the per-address limits of the address the
    proxy names, and is https when the proxy says so (``Secure`` session cookie, ``Origin`` check)."""
    commit_interval_ms: float = 4.0
    """PostgreSQL: least milliseconds from one group commit's start to the next (``server/storage/writer.py``). Under load
    the writes of those milliseconds share one transaction (fewer, larger commits: less CPU in the server and in
    PostgreSQL); a write arriving after a quiet spell is committed at once. 0: every commit as soon as the last
    is done."""
    bot_workers: int = 2
    """Processes in the pool that runs searching bots (``server/table/bots.py``)."""
    bot_searches_per_creator: int = 1
    """Searching-bot choices of the tables made from one client address that may run in the pool at once (each
    table has at most one there; the others wait their turn, tables served in turn)."""
    argon2_concurrency: int = 2
    """Argon2 password checks and hashes that may run at once (each takes about 64 MiB and a core for ~50 ms);
    the others wait in line (``server/players/accounts.py``)."""
    sign_ins_per_address: int = 30
    """Successful sign-ins per client address within 15 minutes (over every process with ``--redis``); beyond it
    ``429 account.rate_limited`` with ``Retry-After``, before any password is checked. Failed ones have their own
    limits (``server/players/accounts.py``)."""
    joins_per_minute: float = 20.0
    """Seats taken by join per client address per minute, counted by each process; beyond it ``429
    table.join_limit`` with ``Retry-After``."""
    join_burst: int = 30
    """Joins a client address may make at once."""
    max_seats_per_address: int = 16
    """Seats one client address may hold at tables open or in play (taken by join or by making the table), counted
    by each process for the tables it plays; beyond it ``409 table.seat_limit``."""
    finished_table_keep_s: float = 600.0
    """Seconds a finished table stays in memory (its connections watching the end) before it is let go; its
    record stays in the database and is served by the record and replay routes."""
    daily_secret: str = ""
    """The secret the daily deals and their bots' choices are drawn from, with the date (``server/lobby/daily.py``):
    nobody without it can compute a day's deal. ``""`` (the default): a random one made the first time and kept in
    the database (the server key ``daily``), the same for every process."""
    review_simulations: int = 10_000
    """Simulations the search runs for each Enemy Anemone decision it reviews (``server/table/reviews.py``; more
    than ``ismcts:hard``'s). Fewer make reviews cheaper and rougher (a small machine, tests); at least 100."""
    push_contact: str = "mailto:webmaster@localhost"
    """Web Push (``server/players/push.py``): the VAPID subject sent with every push, a ``mailto:`` address or an
    ``https:`` URL where the push services can reach whoever runs the server. Set it to your own: some push services
    refuse a ``localhost`` one."""
    push_allow_insecure: int = 0
    """1: push endpoints on this machine (``http://127.0.0.1``, ``http://localhost``) are accepted, for tests that run
    their own push service; 0 (the default): only https endpoints of public hosts."""
    turn_clock_min_s: float = 3600.0
    """Turn-based tables (``server/table/turn_clock.py``): the least seconds a table's ``turn_clock`` may give as
    ``start_s`` and as ``per_move_s``; a table asking for less is refused (``422 turn_clock.too_short``)."""
    turn_based_tables_max: int = 20
    """Seats at turn-based tables, open or in play, one account may hold; one more is ``409
    turn_based.too_many``."""
    turn_idle_s: float = 60.0
    """Seconds a turn-based table in play stays in memory with nobody connected and no bot about to move; then
    it is let go, and loaded again from its record when someone connects or its deadline falls due."""
    loop_lag_interval_ms: float = 0.0
    """Milliseconds between the timers of the event-loop lag monitor (``server/core/loop_lag.py``): how late each
    fires is counted, served at ``GET /api/loop-lag`` and logged when the server stops. 0 (the default): off, and
    that route answers 404."""


ENV_NAMES = {
    "default_grace_s": "CARDTABLE_GRACE_SECONDS", "hand_pause_s": "CARDTABLE_HAND_PAUSE",
    "bot_pace": "CARDTABLE_BOT_PACE", "anemone_bot_delay_ms": "CARDTABLE_ANEMONE_BOT_DELAY_MS",
    "play_now_start_s": "CARDTABLE_PLAY_NOW_START", "solo_start_s": "CARDTABLE_SOLO_START",
}
"""Environment variables of the older settings; every other :class:`Settings` field ``x`` is ``CARDTABLE_X``."""

HELP = {
    "hand_pause_s": "Seconds between hands when no person connected is there to press Ready.",
    "default_ready_s": "Seconds the next hand waits for people who have not pressed Ready (tables that set none).",
    "bot_pace": "Multiplies every bot's delays (below 1: faster bots).",
    "anemone_bot_delay_ms": "Milliseconds an Enemy Anemone bot waits before it plays.",
    "default_grace_s": "Seconds an absent person keeps their seat before a bot plays for them (tables that set none).",
    "max_body_bytes": "Largest HTTP request body in bytes (413 beyond).",
    "max_header_bytes": "Largest HTTP request head in bytes (431 beyond).",
    "request_timeout_s": "Seconds a request's head and body have to arrive.",
    "keep_alive_s": "Seconds an idle keep-alive connection is kept.",
    "max_connections_per_address": "Open HTTP connections per client address.",
    "max_connections_per_token": "Connections holding one seat.",
    "max_connections_per_address_per_table": "Connections from one client address to one table.",
    "max_spectators": "Spectators per table.",
    "max_sockets_per_address": "Open WebSockets per client address over the whole server.",
    "max_outbox": "Messages waiting for a slow connection before it is dropped.",
    "table_message_interval_s": "Seconds between two table messages (changes in between are coalesced).",
    "open_table_idle_s": "Seconds an open table with nobody connected lives.",
    "abandon_after_s": "Seconds beyond its grace a table in play with no person connected lives (then abandoned).",
    "expiry_check_s": "Seconds between expiry sweeps.",
    "creates_per_minute": "New tables per client address per minute.",
    "create_burst": "New tables a client address may create at once.",
    "page_size": "Tables per page of GET /api/tables when the request names no limit.",
    "max_page_size": "Most tables per page of GET /api/tables.",
    "chosen_seeds": "1: a creator's seed is taken at any table (never rated); 0: only at a table of one person and bots.",
    "play_now_start_s": "Seconds a Play now table waits for other people before it starts by itself.",
    "solo_start_s": "Seconds a table of one person and bots waits for its creator's connection before it starts.",
    "lease_ms": "With --redis: milliseconds a table's lease lives unrenewed (failover takes about this long).",
    "sweep_s": "With --redis: seconds between sweeps for tables whose owner process died.",
    "call_timeout_s": "With --redis: seconds a join, leave or start forwarded to the table's owner process may take (503 beyond).",
    "lobby_reads_per_second": "Lobby reads (table lists, a record or a replay) per client address per second (429 beyond).",
    "lobby_read_burst": "Lobby reads a client address may make at once.",
    "forwarded_allow_ips": "Proxies (IP addresses or networks, comma-separated) whose X-Forwarded-For/-Proto are "
                           "believed; empty: none.",
    "commit_interval_ms": "PostgreSQL: least milliseconds between the starts of two group commits (0: no wait).",
    "bot_workers": "Processes in the pool that runs searching bots.",
    "bot_searches_per_creator": "Searching-bot choices of one address's tables running at once (one per table).",
    "argon2_concurrency": "Argon2 password checks running at once (each ~64 MiB); the others wait.",
    "sign_ins_per_address": "Successful sign-ins per client address within 15 minutes (429 beyond).",
    "joins_per_minute": "Seats taken by join per client address per minute (429 beyond).",
    "join_burst": "Joins a client address may make at once.",
    "max_seats_per_address": "Seats one client address may hold at tables open or in play (409 beyond).",
    "finished_table_keep_s": "Seconds a finished table stays in memory before it is let go (its record stays).",
    "daily_secret": "Secret the daily deals are drawn from (with the date); empty: one made once and stored.",
    "review_simulations": "Simulations per reviewed Enemy Anemone decision (at least 100).",
    "push_contact": "Web Push VAPID subject: a mailto: address or https: URL of whoever runs the server.",
    "push_allow_insecure": "1: accept push endpoints on this machine over http (tests); 0: only https public hosts.",
    "turn_clock_min_s": "Least seconds a turn-based table's clock may give, at the start and per move (422 below).",
    "turn_based_tables_max": "Seats at turn-based tables in progress one account may hold (409 beyond).",
    "turn_idle_s": "Seconds a quiet turn-based table stays in memory before it is let go (loaded again when needed).",
    "loop_lag_interval_ms": "Milliseconds between the event-loop lag monitor's timers (GET /api/loop-lag); 0: off.",
}
"""One line of help per setting, for ``cardtable serve --help``."""


def env_name(attr: str) -> str:
    """The environment variable of setting ``attr``: ``CARDTABLE_MAX_BODY_BYTES`` for ``max_body_bytes``."""
    return ENV_NAMES.get(attr, f"CARDTABLE_{attr.upper()}")


def option_name(attr: str) -> str:
    """The ``cardtable serve`` option of setting ``attr``: ``--max-body-bytes``, ``--grace-seconds``."""
    return "--" + env_name(attr).removeprefix("CARDTABLE_").lower().replace("_", "-")


def settings_from_env(**overrides: float | str) -> Settings:
    """:class:`Settings` from the environment (:func:`env_name`), unset ones at their defaults; keyword
    ``overrides`` (the command line's options) win. A text setting (``forwarded_allow_ips``) takes the variable as
    it is; ``ValueError`` for a number setting whose value is not a number."""
    settings = Settings()
    for attr in (f.name for f in dataclasses.fields(Settings)):
        var = env_name(attr)
        if var in os.environ:
            kind = type(getattr(settings, attr))
            text = os.environ[var]
            setattr(settings, attr, text if kind is str else kind(float(text)))
    for attr, value in overrides.items():
        setattr(settings, attr, type(getattr(settings, attr))(value))
    return settings
