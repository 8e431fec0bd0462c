"""What the server benchmarks read of this machine: free loopback ports, a process's memory and CPU time, and
stopping the processes they start.

Linux only (``/proc``); the benchmarks that import it (``server_load.py``, ``soak.py``, ``attacks.py``) run
servers on loopback and read their figures from here.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from typing import Any

HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port on ``127.0.0.1`` that nothing listens on at the moment of the call."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def cpu_speed_ms(repeats: int = 5) -> float:
    """This machine's speed right now: the CPU milliseconds a fixed pure-Python loop takes (the best of
    ``repeats``). On a shared virtual machine it moves by half or more from hour to hour while nothing else runs
    on the machine; print it beside a latency figure, which moves with it. This kind of machine, at its fastest
    seen: about 200 ms."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        total = 0
        for i in range(3_000_000):
            total += i * i % 7
        best = min(best, time.process_time() - start)
    return best * 1000.0


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` in MB (``VmRSS``); NaN if the kernel does not say."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/{pid}/stat`` after the command name (the state first); ``OSError`` when it is gone."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int, *, children: bool = False) -> float:
    """User plus system CPU time of process ``pid`` in seconds; 0.0 once the process is gone. With ``children``,
    also that of its children, live or ended (a service of several processes, as PostgreSQL's postmaster and its
    backends): the difference of two readings is what the whole service used between them."""
    ticks = 0
    try:
        fields = _stat(pid)
        ticks = int(fields[11]) + int(fields[12])
        if children:
            ticks += int(fields[13]) + int(fields[14])  # ended children, waited for
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    with contextlib.suppress(OSError, ValueError, IndexError):
                        child = _stat(int(entry))
                        if int(child[1]) == pid:
                            ticks += sum(int(child[i]) for i in (11, 12, 13, 14))
    except (OSError, ValueError, IndexError):
        pass
    return ticks / os.sysconf("SC_CLK_TCK")


def parent_pid(pid: int) -> int | None:
    """The parent of process ``pid``, ``None`` when it is gone."""
    try:
        return int(_stat(pid)[1])
    except (OSError, ValueError, IndexError):
        return None


def stop(proc: subprocess.Popen[Any], timeout_s: float = 15.0) -> str:
    """Stop ``proc``: SIGTERM, then SIGKILL if it has not exited within ``timeout_s`` seconds. A piped stderr is
    read while it exits (so that a full pipe never holds it up) and returned as text; ``""`` when stderr is not
    piped (a piped stdout is left to whoever reads it)."""
    proc.terminate()
    try:
        if proc.stderr is None:
            proc.wait(timeout_s)
            return ""
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        if proc.stderr is None:
            proc.wait()
            return ""
        _, err = proc.communicate()
    return err.decode(errors="replace") if isinstance(err, bytes) else err or ""


def cpu_wait_seconds(pid: int) -> float:
    """Seconds the main thread of process ``pid`` has spent ready to run but waiting for a CPU (Linux schedstat:
    other processes' load, not its own work); 0.0 if the kernel does not say or the process is gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


HOST_KINDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
"""The first fields of ``/proc/stat``'s ``cpu`` line, in order."""


def host_ticks() -> dict[str, int]:
    """The whole machine's CPU time so far by kind (:data:`HOST_KINDS`), in clock ticks, plus ``ksoftirqd``: the CPU
    time of the kernel's ``ksoftirqd`` threads (network packets and other soft interrupts handled late, in a thread of
    their own, instead of at once). ``steal`` is time the hypervisor gave to something else while a virtual CPU of
    this machine wanted to run. Empty if the kernel does not say."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1 : 1 + len(HOST_KINDS)]
        ticks = dict(zip(HOST_KINDS, (int(v) for v in fields), strict=False))
    except (OSError, ValueError):
        return {}
    ksoftirqd = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry}/comm") as f:
                    if not f.read().startswith("ksoftirqd/"):
                        continue
                stat = _stat(int(entry))
                ksoftirqd += int(stat[11]) + int(stat[12])
    ticks["ksoftirqd"] = ksoftirqd
    return ticks


def host_line(before: dict[str, int], after: dict[str, int], seconds: float) -> str:
    """One line on the machine between two :func:`host_ticks`: the shares of its CPU time spent in soft interrupts
    and stolen by the hypervisor, and the cores the ``ksoftirqd`` threads used (latency a process's own loop cannot
    see: a packet waiting for ``ksoftirqd`` waits while every event loop is idle)."""
    if not before or not after:
        return "machine: /proc/stat not readable"
    total = sum(after[k] - before[k] for k in HOST_KINDS if k in after) or 1
    share = {k: 100.0 * (after[k] - before[k]) / total for k in ("softirq", "steal", "irq")}
    cores = (after["ksoftirqd"] - before["ksoftirqd"]) / os.sysconf("SC_CLK_TCK") / seconds
    return (f"machine over the window: softirq {share['softirq']:.1f}%, irq {share['irq']:.1f}%, steal "
            f"{share['steal']:.1f}% of its CPU time; ksoftirqd threads {cores:.3f} cores")
