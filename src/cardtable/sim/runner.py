"""Run many independent simulations, in a process pool when asked, with a Rich progress bar.

>>> list(parallel_map(abs, [-1, -2, 3], jobs=1, description="demo", show=False))
[1, 2, 3]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import IO, Any, TypeVar

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")
R = TypeVar("R")


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


def parallel_map(
    fn: Callable[[T], R], items: Sequence[T], jobs: int = 1, description: str = "working", show: bool = True
) -> Iterator[R]:
    """``fn`` over ``items``, results yielded in order of ``items``.

    With ``jobs > 1`` the calls run in a pool of that many processes (``fn`` and the items must pickle: a
    top-level function and plain data). Raises ``ValueError`` when ``jobs < 1``.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    with progress_bar(show) as progress:
        task = progress.add_task(description, total=len(items))
        if jobs == 1:
            for item in items:
                result = fn(item)
                progress.advance(task)
                yield result
            return
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            chunk = max(1, min(16, len(items) // (jobs * 8) or 1))
            for result in pool.map(fn, items, chunksize=chunk):
                progress.advance(task)
                yield result


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
