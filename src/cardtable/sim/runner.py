"""Run many independent simulations, in a process pool or on a Ray cluster when asked, with a Rich progress bar.

>>> list(parallel_map(abs, [-1, -2, 3], jobs=1, description="demo", show=False))
[1, 2, 3]

Past one machine: inside ``with ray_cluster(ADDRESS):`` every :func:`parallel_map` (so ``sim.nerts.run`` and
``sim.anemone.run`` too) sends its items to that Ray cluster instead of a local process pool, with the same results in
the same order (each item carries its own seeds). Ray is the optional extra ``cardtable[ray]``; it is imported only
there.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")
R = TypeVar("R")

LOCAL = "local"
"""The ``--ray`` value (and the option's value when given bare) that starts a private Ray cluster on this machine."""

RAY_LOG_LEVEL = logging.ERROR
"""Ray's own log level in this process: its start-up chatter (INFO, and a WARNING on every local start that token
authentication is on) would scroll the progress bar away. Errors still show, and failures are raised."""

RAY_ENVIRONMENT = {"RAY_USAGE_STATS_ENABLED": "0"}
"""Ray's environment while :func:`ray_cluster` is connected, where the caller's own does not say: no usage
statistics sent anywhere."""


class RayMissing(ImportError):
    """``--ray`` (or :func:`ray_cluster`) was asked for, but Ray is not installed: ``pip install 'cardtable[ray]'``."""


@dataclass(frozen=True, slots=True)
class RayCluster:
    """The Ray cluster this process is connected to (:func:`ray_cluster`)."""

    address: str | None
    """The address connected to, or ``None`` for a local cluster this process started."""
    cpus: int
    """The CPUs the whole cluster offers (Ray's ``CPU`` resource, at least 1)."""
    started: bool
    """Whether :func:`ray_cluster` connected (and so disconnects, stopping a local cluster it started)."""


_ACTIVE: ContextVar[RayCluster | None] = ContextVar("cardtable_ray_cluster", default=None)


def active_cluster() -> RayCluster | None:
    """The Ray cluster :func:`parallel_map` uses now (inside :func:`ray_cluster`), or ``None``: a local pool."""
    return _ACTIVE.get()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as error:
        raise RayMissing("Ray is not installed: pip install 'cardtable[ray]' (or pip install ray)") from error
    return ray


@contextmanager
def ray_cluster(
    address: str | None = None,
    cpus: int | None = None,
    object_store_bytes: int | None = None,
    runtime_env: dict[str, Any] | None = None,
) -> Iterator[RayCluster]:
    """Connect to a Ray cluster for the ``with`` block; :func:`parallel_map` runs its items there meanwhile.

    ``address`` ``None`` (or :data:`LOCAL`) starts a private local cluster of ``cpus`` CPUs (default: every core)
    and ``object_store_bytes`` of shared memory (default: Ray's), stopped again on leaving the block. Any other
    address is handed to ``ray.init(address=...)``: ``HOST:6379`` (a cluster node's GCS, from a machine of the
    cluster), ``auto`` (the cluster ``ray start`` runs on this machine) or ``ray://HOST:10001`` (Ray Client, which
    needs ``ray[client]``); leaving disconnects and leaves that cluster running. Every node must have this version of
    cardtable installed (``runtime_env`` is passed to ``ray.init`` for anything else the items need, e.g.
    ``{"working_dir": "bench"}``). Ray's usage statistics stay off unless ``RAY_USAGE_STATS_ENABLED`` says otherwise,
    and its logs stay out of the terminal (errors only, no worker output, no dashboard).

    When Ray is already initialised in this process (by the caller, or an outer ``ray_cluster``), that connection is
    used as it is and left open.

    Raises :class:`RayMissing` when Ray is not installed, ``ValueError`` for ``cpus`` or ``object_store_bytes``
    below 1, or either of them with a remote ``address`` (the cluster's own nodes decide those), and
    ``ConnectionError`` when no cluster answers at the address (after Ray's own retries, which take minutes).
    """
    if address == LOCAL:
        address = None
    if cpus is not None and cpus < 1:
        raise ValueError(f"cpus must be at least 1, not {cpus}")
    if object_store_bytes is not None and object_store_bytes < 1:
        raise ValueError(f"object_store_bytes must be at least 1, not {object_store_bytes}")
    if address is not None and (cpus is not None or object_store_bytes is not None):
        raise ValueError(
            "cpus and object_store_bytes are for a local cluster: a remote cluster's nodes set their own"
        )
    with _environment(RAY_ENVIRONMENT):
        ray = _import_ray()
        if ray.is_initialized():
            with _active(RayCluster(address, _cluster_cpus(ray), started=False)) as cluster:
                yield cluster
            return
        try:
            quiet: dict[str, Any] = {
                "log_to_driver": False,
                "logging_level": RAY_LOG_LEVEL,
                "configure_logging": True,
                "runtime_env": runtime_env,
            }
            if address is None:
                ray.init(
                    num_cpus=cpus, object_store_memory=object_store_bytes, include_dashboard=False, **quiet
                )
            else:
                try:
                    ray.init(address=address, **quiet)
                except ConnectionError as error:
                    raise ConnectionError(f"no Ray cluster at {address}: {error}") from error
            with _active(RayCluster(address, _cluster_cpus(ray), started=True)) as cluster:
                yield cluster
        finally:
            ray.shutdown()  # stops what this block started, a half-started local cluster included


def _cluster_cpus(ray: Any) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


@contextmanager
def _active(cluster: RayCluster) -> Iterator[RayCluster]:
    token = _ACTIVE.set(cluster)
    try:
        yield cluster
    finally:
        _ACTIVE.reset(token)


@contextmanager
def _environment(defaults: dict[str, str]) -> Iterator[None]:
    """``defaults`` in ``os.environ`` where it has no value of its own, for the block (Ray reads its settings there,
    and the processes it starts inherit them)."""
    added = [name for name in defaults if name not in os.environ]
    os.environ.update({name: defaults[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def progress_bar(show: bool = True) -> Progress:
    """The progress bar every long command uses (hidden when ``show`` is false)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        disable=not show,
        transient=False,
    )


def chunk_size(items: int, jobs: int) -> int:
    """Items per task handed to a worker: about eight tasks per worker, 1 to 16 items each."""
    return max(1, min(16, items // (jobs * 8) or 1))


def parallel_map(
    fn: Callable[[T], R], items: Sequence[T], jobs: int = 1, description: str = "working", show: bool = True
) -> Iterator[R]:
    """``fn`` over ``items``, results yielded in order of ``items``, a progress bar advancing as they arrive.

    Inside :func:`ray_cluster` the calls run on that Ray cluster, at most ``jobs`` tasks at a time (of
    :func:`chunk_size` items each); otherwise, with ``jobs > 1``, in a pool of that many processes; else here, one by
    one. ``fn`` and the items must pickle (a top-level function and plain data); on Ray, ``fn``'s module must be
    importable on every node. An exception raised by ``fn`` is raised here (on Ray, as Ray's ``RayTaskError``, which
    is also an instance of the original exception's class), and the tasks not yet finished are cancelled. Raises
    ``ValueError`` when ``jobs < 1``.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    cluster = active_cluster()
    with progress_bar(show) as progress:
        task = progress.add_task(description, total=len(items))
        if cluster is not None:
            yield from _ray_map(fn, items, jobs, progress, task)
            return
        if jobs == 1:
            for item in items:
                result = fn(item)
                progress.advance(task)
                yield result
            return
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for result in pool.map(fn, items, chunksize=chunk_size(len(items), jobs)):
                progress.advance(task)
                yield result


def run_chunk(fn: Callable[[T], R], chunk: Sequence[T]) -> list[R]:
    """``fn`` over one chunk of items, in order: the body of each Ray task of :func:`parallel_map`."""
    return [fn(item) for item in chunk]


def _ray_map(
    fn: Callable[[T], R], items: Sequence[T], jobs: int, progress: Progress, task: TaskID
) -> Iterator[R]:
    """The Ray path of :func:`parallel_map`: at most ``jobs`` chunks in flight, results yielded in item order, the
    bar advanced by a chunk as soon as it finishes (whatever its place)."""
    ray = _import_ray()
    size = chunk_size(len(items), jobs)
    chunks = [items[start : start + size] for start in range(0, len(items), size)]
    remote = ray.remote(num_cpus=1)(run_chunk)
    fn_ref = ray.put(fn)
    pending: dict[Any, int] = {}
    finished: dict[int, list[R]] = {}
    submitted = 0
    yielded = 0
    try:
        while yielded < len(chunks):
            while submitted < len(chunks) and len(pending) < jobs:
                pending[remote.remote(fn_ref, chunks[submitted])] = submitted
                submitted += 1
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index = pending.pop(ref)
                finished[index] = ray.get(ref)
                progress.advance(task, len(finished[index]))
            while yielded in finished:
                yield from finished.pop(yielded)
                yielded += 1
    finally:
        if pending and ray.is_initialized():  # left early: an error, or the caller stopped reading
            for ref in pending:
                ray.cancel(ref, force=True)


def write_jsonl(rows: Iterable[dict[str, Any]], out: IO[str]) -> int:
    """Write each row as one JSON line; returns the number of lines."""
    count = 0
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        count += 1
    return count


def open_out(path: Path | None) -> IO[str] | None:
    """Open ``--out`` for writing (parents created), or ``None`` when no path was given."""
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("w", encoding="utf-8")
