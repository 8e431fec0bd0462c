"""Fail when a process started under a run mark is still running: ``python scripts/leftovers.py MARK``.

`.ci/run` exports ``CARDTABLE_RUN_MARK`` before the test suite, so every process the suite starts (servers,
PostgreSQL and Redis, nginx, Chromium, bot pool workers) inherits it in its environment; after the suite this finds
those still alive by reading ``/proc/*/environ`` (Linux), waits up to ``--grace-s`` for them to end, then lists them
and exits 1 if any is left (issue 26: "after the full suite ends, no process it started is left running").
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def marked(mark: str) -> dict[int, str]:
    """Processes whose environment holds ``CARDTABLE_RUN_MARK=mark``, other than this one and its ancestors:
    pid -> command line."""
    needle = f"CARDTABLE_RUN_MARK={mark}".encode()
    mine = set()
    pid = os.getpid()
    while pid > 1:
        mine.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone, or not ours to read
            continue
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mark")
    parser.add_argument("--grace-s", type=float, default=10.0)
    args = parser.parse_args()
    deadline = time.monotonic() + args.grace_s
    left = marked(args.mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = marked(args.mark)
    for pid, command in sorted(left.items()):
        print(f"left running: {pid} {command[:200]}")
    print(f"{len(left)} process(es) left by the run" if left else "no process left by the run")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
