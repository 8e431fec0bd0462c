"""The ``cardtable`` command: ``serve``, ``replay`` and ``simulate``, thin commands over the layers above."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cardtable import __version__, records
from cardtable.build import engines
from cardtable.replay import IllegalRecordAction, ReplayResult, fold
from cardtable.review import review_record
from cardtable.serve_options import given, with_setting_options
from cardtable.sim.runner import LOCAL, RayMissing, ray_cluster


def bare_ray(args: Sequence[str]) -> list[str]:
    """``args`` with :data:`~cardtable.sim.runner.LOCAL` after each ``--ray`` given without an address (last, or
    before another option), so that ``--ray`` alone means a local cluster and ``--ray ADDRESS`` connects (Typer's
    options take no optional value). Arguments after ``--`` are left as they are.

    >>> bare_ray(["simulate", "nerts", "--ray", "--jobs", "2"])
    ['simulate', 'nerts', '--ray', 'local', '--jobs', '2']
    >>> bare_ray(["simulate", "nerts", "--ray", "ray://head:10001"])
    ['simulate', 'nerts', '--ray', 'ray://head:10001']
    """
    out: list[str] = []
    for index, arg in enumerate(args):
        if arg == "--":
            return out + list(args[index:])
        out.append(arg)
        if arg == "--ray" and (index + 1 == len(args) or args[index + 1].startswith("-")):
            out.append(LOCAL)
    return out


class _Cardtable(typer.Typer):
    """The ``cardtable`` command: Typer, with ``--ray`` allowed without a value (:func:`bare_ray`)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args:
            kwargs["args"] = bare_ray(kwargs.get("args") or sys.argv[1:])
        return super().__call__(*args, **kwargs)


app = _Cardtable(help="cardtable: Nerts and Enemy Anemone, with friends and bots.", no_args_is_help=True)
simulate_app = typer.Typer(help="Play bot-only hands or games and summarise them.", no_args_is_help=True)
app.add_typer(simulate_app, name="simulate")

console = Console()


def _version(show: bool) -> None:
    if show:
        typer.echo(f"cardtable {__version__}; engines: {engines()}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the version and how the engines run (compiled with mypyc, or pure Python), then exit.",
        ),
    ] = False,
) -> None:
    """cardtable: Nerts and Enemy Anemone, with friends and bots."""


@app.command()
@with_setting_options
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    db: Annotated[
        str | None,
        typer.Option(help="Database URL (default: a SQLite file in your data folder; postgresql+asyncpg://... works)."),
    ] = None,
    redis: Annotated[
        str | None,
        typer.Option(help="Redis URL (redis://HOST:6379/0): run as one of several processes sharing --db "
                          "(PostgreSQL); see docs/deploy.md."),
    ] = None,
    **settings: Any,
) -> None:
    """Host tables for people and bots: the lobby and both games at http://HOST:PORT/. Every setting is also an
    option (below, "Settings") and an environment variable (docs/deploy.md); an option wins over its variable."""
    from cardtable.server.core.addresses import trusted_networks
    from cardtable.server.core.settings import settings_from_env
    from cardtable.server.edge.app import serve as run_server

    values = settings_from_env(**given(settings))
    try:
        trusted_networks(values.forwarded_allow_ips)
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    shown = f"[{host}]" if ":" in host else host
    console.print(f"cardtable {__version__}; engines: {engines()}")
    console.print(f"cardtable: open [bold]http://{shown}:{port}/[/bold] in your browser (Ctrl+C stops the server)")
    run_server(host=host, port=port, db=db, redis=redis, settings=values)


def _print_result(result: ReplayResult, seats: list[records.Seat]) -> None:
    rotated = any(hand.deal is not None for hand in result.hands)  # rotated deals: a deal column groups the hands
    table = Table(title="Hands")
    table.add_column("hand", justify="right")
    if rotated:
        table.add_column("deal", justify="right")
    for seat in seats:
        table.add_column(seat.name, justify="right")
    table.add_column("ended")
    for number, hand in enumerate(result.hands):
        deal = [str(hand.deal)] if rotated else []
        table.add_row(str(number), *deal, *(str(s) for s in hand.scores), hand.ended or "in progress",
                      end_section=rotated and number + 1 < len(result.hands)
                      and result.hands[number + 1].deal != hand.deal)
    table.add_row("total", *([""] if rotated else []), *(str(t) for t in result.totals), "", style="bold")
    console.print(table)
    if result.anemones is not None:
        console.print("anemones: " + ", ".join(f"{seat.name} {faces}" for seat, faces in zip(seats, result.anemones, strict=True)))
    if result.winner is not None:
        console.print("winner: " + ", ".join(seats[w].name for w in result.winner))
    else:
        console.print("the match is not over")


@app.command()
def replay(
    file: Annotated[Path, typer.Argument(help="A cardtable/1 record (JSON).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")] = False,
) -> None:
    """Check a record by replaying it: exit 1 if it cannot be read, 2 at the first illegal action, else 0."""
    try:
        record = records.load(file)
        result = fold(record)
    except records.RecordError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    except IllegalRecordAction as error:
        typer.echo(f"illegal: {error}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(result.to_dict()))
    else:
        _print_result(result, record.seats)


@app.command()
def review(
    file: Annotated[Path, typer.Argument(help="A cardtable/1 record (JSON) of a finished match.")],
    seat: Annotated[int, typer.Option("--seat", min=0, help="The seat reviewed, from 0.")],
    seed: Annotated[int, typer.Option(help="Seed of the Enemy Anemone searches.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the review as one JSON object.")] = False,
) -> None:
    """Review a seat's play (issue 30, cardtable.review): Enemy Anemone decisions searched from the seat's view
    (points lost against the search's card, marked from 0.5), Nerts missed plays. Exit 1 for a record that cannot be
    read or a seat it does not have, 2 at an illegal action."""
    try:
        result = review_record(records.load(file), seat, seed)
    except IllegalRecordAction as error:
        typer.echo(f"illegal: {error}", err=True)
        raise typer.Exit(2) from None
    except ValueError as error:  # a RecordError too
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps(result))
        return
    summary = result["summary"]
    if result["game"] == "anemone":
        for entry in result["decisions"]:
            mark = f"  <- {entry['best']} (loses {entry['loss']:.2f})" if entry["marked"] else ""
            typer.echo(f"hand {entry['hand']} action {entry['index']}: {entry['played']}{mark}")
        typer.echo(f"{summary['decisions']} decisions, {summary['average_loss']:.3f} points lost per decision")
    else:
        for miss in result["missed"]:
            typer.echo(f"hand {miss['hand']} action {miss['index']} at {miss['ms']} ms: {miss['card']} "
                       f"({miss['kind']}) waited {miss['waited_ms']} ms")
        typer.echo(f"{summary['missed']} missed, {summary['stuck_ms']} ms with no move, "
                   f"{summary['cards_left']} cards left")


RayOption = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="[ADDRESS]",
        help="Run on a Ray cluster (needs Ray: pip install ray): --ray alone starts a local one of --jobs CPUs; "
        "--ray HOST:6379 (from a node of the cluster), auto or ray://HOST:10001 connects to one, at most --jobs "
        "tasks at a time (default: its CPUs). Same results as --jobs N for the same seed; see docs/deploy.md.",
    ),
]


@contextmanager
def _workers(ray: str | None, jobs: int | None, default: int) -> Iterator[int]:
    """The jobs a simulate command runs with: ``jobs`` (or ``default``) local processes; with ``--ray``, inside a
    Ray cluster (:func:`~cardtable.sim.runner.ray_cluster`, local with ``jobs`` CPUs, or at ``ray``), ``jobs`` or the
    cluster's CPUs. Exits 1 with a message when Ray is missing or the cluster cannot be reached."""
    if ray is None:
        yield jobs or default
        return
    with ExitStack() as stack:
        try:
            cluster = stack.enter_context(ray_cluster(ray, cpus=jobs if ray == LOCAL else None))
        except (RayMissing, ConnectionError, ValueError) as error:
            typer.echo(f"error: --ray: {error}", err=True)
            raise typer.Exit(1) from None
        yield jobs or cluster.cpus


@simulate_app.command("nerts")
def simulate_nerts(
    players: Annotated[int, typer.Option(min=1, max=8, help="Seats, all bots.")] = 4,
    hands: Annotated[int, typer.Option(min=1, help="Hands to play (matches with --match).")] = 10,
    bots: Annotated[
        str,
        typer.Option(help="Comma-separated bot specs, cycled over the seats (e.g. expert,greedy:hard,greedy:easy)."),
    ] = "greedy",
    seed: Annotated[int, typer.Option(help="Seed of the first deal; the rest follow from it.")] = 1,
    out: Annotated[Path | None, typer.Option(help="Write every record as a JSON line here.")] = None,
    jobs: Annotated[
        int, typer.Option(min=0, help="Processes (0: one per core, or with --ray the cluster's CPUs).")
    ] = 0,
    match: Annotated[bool, typer.Option("--match", help="Play whole matches to the target score.")] = False,
    delays: Annotated[
        str | None,
        typer.Option(help="Comma-separated one-way network delays in ms, going with the bots (e.g. 0,100)."),
    ] = None,
    cap_ms: Annotated[
        int, typer.Option(min=0, help="Most latency compensation in ms (0: plays race in arrival order).")
    ] = 150,
    rotate: Annotated[
        bool, typer.Option(help="Replay each deal with the seats rotated (paired deals) so luck cancels.")
    ] = True,
    ray: RayOption = None,
) -> None:
    """Bots play Nerts on a simulated clock (reaction times, network delays, races ordered as at a table);
    prints per-bot win rates, points, Nerts calls and cards left with 95% intervals."""
    from cardtable.sim import nerts

    specs = [spec.strip() for spec in bots.split(",") if spec.strip()]
    try:
        lags = [int(d) for d in delays.split(",")] if delays else None
    except ValueError:
        typer.echo(f"error: --delays: whole ms separated by commas, not {delays!r}", err=True)
        raise typer.Exit(1) from None
    with _workers(ray, jobs or None, os.cpu_count() or 1) as workers:
        try:
            nerts.run(
                players=players,
                hands=hands,
                seed=seed,
                out=out,
                jobs=workers,
                match_mode=match,
                bots=specs,
                delays=lags,
                cap_ms=cap_ms,
                rotate=rotate,
            )
        except ValueError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(1) from None


@simulate_app.command("anemone")
def simulate_anemone(
    players: Annotated[int, typer.Option(min=2, max=6, help="Seats, all bots.")] = 4,
    games: Annotated[int, typer.Option(min=1, help="Games (matches) to play.")] = 20,
    bots: Annotated[str, typer.Option(help="Comma-separated bot specs, cycled over the seats.")] = "heuristic,random",
    seed: Annotated[int, typer.Option(help="Seed of the first deal.")] = 1,
    out: Annotated[Path | None, typer.Option(help="Write every record as a JSON line here.")] = None,
    jobs: Annotated[
        int | None, typer.Option(min=1, help="Processes (default 1; with --ray, the cluster's CPUs).")
    ] = None,
    ray: RayOption = None,
) -> None:
    """Bots play Enemy Anemone games with seats rotated; prints win rates with 95% intervals."""
    from cardtable.sim import anemone

    specs = [spec.strip() for spec in bots.split(",") if spec.strip()]
    with _workers(ray, jobs, 1) as workers:
        try:
            anemone.run(players=players, games=games, bots=specs, seed=seed, jobs=workers, out=out)
        except ValueError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(1) from None


def main() -> None:
    """Entry point for ``python -m cardtable``."""
    app()
