"""`cardtable simulate ... --ray` (sim/runner.py's Ray path, issue 28): the same records as `--jobs N` for the same
seed, on a local Ray cluster sized for a 2-core machine (2 CPUs, a small object store), which ends with the test.

The Ray tests are marked slow (a local cluster takes seconds to start) and need Ray (the `test` extra has it)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cardtable.cli import app, bare_ray
from cardtable.sim.runner import LOCAL, RayCluster, parallel_map, ray_cluster
from polling import wait_for

runner = CliRunner()

MARK = "CARDTABLE_RAY_TEST_MARK"
"""An environment variable each test cluster's processes inherit, so the test can see that none is left."""

needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="Ray is not installed (pip install -e '.[ray]')"
)


def marked(mark: str) -> list[str]:
    """The command lines of running processes whose environment holds ``MARK=mark`` (Linux: /proc)."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # gone, or not ours to read
            continue
    return found


@contextmanager
def cluster_environment() -> Iterator[dict[str, str]]:
    """The environment a test cluster starts in: :data:`MARK`, and a short-lived folder of its own for Ray's
    session files (``RAY_TMPDIR``; short, since Ray's sockets live there). On leaving, waits until no process of the
    cluster is left (``AssertionError`` after 60 s), then removes the folder."""
    mark = uuid.uuid4().hex
    folder = tempfile.mkdtemp(prefix="ctray")
    try:
        yield {MARK: mark, "RAY_TMPDIR": folder}
        wait_for(lambda: not marked(mark), timeout=60, what="every process of the Ray cluster to end")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_ray_missing_is_a_clear_error() -> None:
    """`--ray` as typed (no address), where `import ray` fails as it does without the extra: exit 1 and the advice."""
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "sys.argv = ['cardtable', 'simulate', 'nerts', '--hands', '1', '--ray']\n"
        "from cardtable.cli import main; main()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error: --ray: Ray is not installed: pip install 'cardtable[ray]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_bare_ray_means_a_local_cluster() -> None:
    assert bare_ray(["simulate", "nerts", "--ray"]) == ["simulate", "nerts", "--ray", LOCAL]
    assert bare_ray(["--ray", "--jobs", "2"]) == ["--ray", LOCAL, "--jobs", "2"]
    assert bare_ray(["--ray", "head:6379", "--jobs", "2"]) == ["--ray", "head:6379", "--jobs", "2"]
    assert bare_ray(["--ray=auto"]) == ["--ray=auto"]
    assert bare_ray(["--", "--ray"]) == ["--", "--ray"]


def test_the_cli_and_the_simulators_import_no_ray() -> None:
    """Ray is imported only on the Ray path: `cardtable` works without the extra, and does not pay for importing it."""
    code = (
        "import sys, cardtable.cli, cardtable.sim.nerts, cardtable.sim.anemone; print('ray' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_cluster_sizes_are_for_a_local_cluster_only() -> None:
    with pytest.raises(ValueError, match="local cluster"), ray_cluster("head:6379", cpus=2):
        pass
    with pytest.raises(ValueError, match="cpus must be at least 1"), ray_cluster(cpus=0):
        pass


@pytest.mark.slow
@needs_ray
def test_bare_ray_starts_a_local_cluster_and_stops_it(tmp_path: Path) -> None:
    """The command as a person types it (`--ray` with no address) in its own process: the same games as `--jobs 2`,
    and no Ray process left once it exits."""
    pooled, on_cluster = tmp_path / "jobs.jsonl", tmp_path / "ray.jsonl"
    args = ["simulate", "anemone", "--players", "2", "--games", "2", "--seed", "3", "--jobs", "2"]
    result = runner.invoke(app, [*args, "--out", str(pooled)])
    assert result.exit_code == 0, result.output
    command = [sys.executable, "-m", "cardtable", *args, "--ray", "--out", str(on_cluster)]
    with cluster_environment() as extra:
        # A small object store: Ray's default share is 30% of the memory, which a 2-core CI machine shares.
        env = {**os.environ, **extra, "RAY_DEFAULT_OBJECT_STORE_MEMORY_PROPORTION": "0.006"}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "anemone 2 seats" in done.stdout  # the progress bar, and no Ray log line in the way
    assert "INFO" not in done.stdout + done.stderr
    assert on_cluster.read_bytes() == pooled.read_bytes()
    assert len(on_cluster.read_text().splitlines()) == 2


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[RayCluster]:
    """A local Ray cluster of 2 CPUs and a 128 MiB object store for this module's tests; every process of it is
    checked to be gone afterwards. Inside it, the CLI's `--ray` uses it as it is (and leaves it running)."""
    with cluster_environment() as extra:
        os.environ.update(extra)  # inherited by the cluster's processes as they start
        try:
            with ray_cluster(cpus=2, object_store_bytes=128 * 2**20) as cluster:
                assert marked(extra[MARK]), (
                    "the cluster's processes carry the mark (else the check proves nothing)"
                )
                yield cluster
        finally:
            for name in extra:
                os.environ.pop(name, None)


@pytest.mark.slow
@needs_ray
@pytest.mark.parametrize(
    ("command", "lines"),
    [
        (["nerts", "--players", "3", "--hands", "6", "--seed", "7", "--bots", "greedy:hard,greedy:easy"], 6),
        (["nerts", "--players", "2", "--hands", "2", "--seed", "2", "--match"], 2),
        (["anemone", "--players", "3", "--games", "3", "--seed", "4", "--bots", "heuristic,random"], 3),
    ],
    ids=["nerts-hands", "nerts-matches", "anemone"],
)
def test_ray_writes_the_same_records_as_jobs(
    tmp_path: Path, local_cluster: RayCluster, command: list[str], lines: int
) -> None:
    """Byte for byte: every record of `--ray` is the `--jobs 2` one, in the same order (the items carry their
    seeds, and results come back in item order)."""
    assert local_cluster.cpus == 2
    outputs = []
    for where in (["--jobs", "2"], ["--jobs", "2", "--ray", LOCAL]):
        out = tmp_path / f"{len(outputs)}.jsonl"
        result = runner.invoke(app, ["simulate", *command, *where, "--out", str(out)])
        assert result.exit_code == 0, result.output
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[1].count(b"\n") == lines


@pytest.mark.slow
@needs_ray
def test_results_come_in_item_order_when_later_items_finish_first(local_cluster: RayCluster) -> None:
    items = [range(10_000_000), range(1), range(2), range(3), range(2_000_000), range(5), range(6)]
    assert list(parallel_map(sum, items, jobs=2, show=False)) == [sum(r) for r in items]


@pytest.mark.slow
@needs_ray
def test_an_error_in_a_task_is_raised_with_its_own_class(local_cluster: RayCluster) -> None:
    with pytest.raises(ValueError, match="invalid literal"):
        list(parallel_map(int, ["1", "2", "three", "4"], jobs=2, show=False))
