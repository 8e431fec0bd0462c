"""The nginx configuration of ``docs/deploy.md`` ("Several processes"), run with Debian's nginx in front of two
``cardtable serve --redis`` processes: two people play one table through the proxy (their sockets spread over
both processes), one process is killed, and the game goes on through the other with nothing lost. And in front of
one process started with ``--forwarded-allow-ips 127.0.0.1``, over http and https: a client cannot pick its
address with ``X-Forwarded-For``, and the session cookie is ``Secure`` over https."""

from __future__ import annotations

import re
import shutil
import signal
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from redis import Redis

from cluster_harness import Client, Proc, check_record, port_open, start
from polling import wait_for
from services import Postgres, free_port, new_database, start_server

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

NGINX = "/usr/sbin/nginx"
DEPLOY = Path(__file__).resolve().parent.parent / "docs" / "deploy.md"


def documented_config() -> str:
    """The ``nginx`` block of docs/deploy.md."""
    blocks = re.findall(r"```nginx\n(.*?)```", DEPLOY.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    return blocks[0]


class Front:
    """nginx seen as one more process by the test clients (``port``, ``alive``)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.alive = True


def start_nginx(tmp_path: Path, config: str, started: list[subprocess.Popen[bytes]], *ports: int) -> None:
    """Run Debian's nginx with ``config`` (an ``http`` block's inside) under ``tmp_path`` until ``ports`` listen."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/logs/error.log;\nevents {{}}\nhttp {{\n"
        f"access_log off;\nclient_body_temp_path {tmp_path}/body;\nproxy_temp_path {tmp_path}/proxy;\n"
        f"{config}\n}}\n")
    started.append(subprocess.Popen([NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"),
                                     "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    wait_for(lambda: all(port_open(port) for port in ports), 20, "nginx to listen")


@pytest.fixture
def nginx_at(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.terminate()
        process.wait(10)


@pytest.mark.skipif(not Path(NGINX).exists() or shutil.which("redis-server") is None, reason="needs nginx and redis")
def test_nginx_in_front_of_two_processes(postgres: Postgres, redis_url: str, tmp_path: Path,
                                         nginx_at: list[subprocess.Popen[bytes]]) -> None:
    procs: list[Proc] = []
    try:
        db = new_database(postgres)
        a, b = start(procs, db, redis_url, tmp_path / "a.log", tmp_path / "b.log")
        front_port = free_port()
        config = (documented_config().replace("127.0.0.1:8001", f"127.0.0.1:{a.port}")
                  .replace("127.0.0.1:8002", f"127.0.0.1:{b.port}")
                  .replace("127.0.0.1:8000", f"127.0.0.1:{front_port}"))
        start_nginx(tmp_path, config, nginx_at, front_port)
        front = Proc(db, None, tmp_path / "unused.log")
        front.port = front_port  # HTTP helpers only: nginx is the address clients know
        made = front.post("/api/tables", {
            "game": "nerts", "options": {"players": 4}, "grace_seconds": 600, "autostart": False,
            "seats": [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": "greedy:medium"},
                      {"kind": "bot", "bot": "greedy:medium"}]})
        tid = made["table"]["id"]
        joined = front.post(f"/api/tables/{tid}/join", {"name": "bea"})
        via = Front(front_port)
        people = [Client([via], tid, made["token"]), Client([via], tid, joined["token"])]  # type: ignore[list-item]
        watchers = [Client([via], tid, None) for _ in range(2)]  # type: ignore[list-item]
        for client in people + watchers:
            client.start()
        wait_for(lambda: all(c.seen("snapshot") for c in people + watchers), 30, "every snapshot")
        front.post(f"/api/tables/{tid}/start", {"token": made["token"]})
        wait_for(lambda: all(w.last_version() >= 6 for w in watchers), 60, "play through the proxy")
        lease = Redis.from_url(redis_url).get(f"ct:lease:{tid}")
        assert lease is not None
        owner_pid = int(lease.decode().rsplit(":", 1)[0].split("-")[-2])
        owner = a if a.proc is not None and a.proc.pid == owner_pid else b
        owner.stop(signal.SIGKILL)
        marks = [w.last_version() for w in watchers]
        wait_for(lambda: all(w.last_version() > m + 3 for w, m in zip(watchers, marks, strict=True)), 60,
                 "play to go on through the proxy after a process died")
        for client in people + watchers:
            client.close()
        check_record(db, tid, watchers, people + watchers)
    finally:
        for proc in procs:
            if proc.alive:
                proc.stop(signal.SIGKILL)


PASSWORD = "correct horse battery"
SMALL = {"game": "anemone", "options": {"players": 2}}


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by ``openssl``."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def _secure(response: httpx.Response) -> bool:
    return "secure" in [part.strip().lower() for part in response.headers["set-cookie"].split(";")]


@pytest.mark.skipif(not Path(NGINX).exists() or shutil.which("openssl") is None, reason="needs nginx and openssl")
def test_nginx_names_the_real_client_and_its_scheme(tmp_path: Path, nginx_at: list[subprocess.Popen[bytes]]) -> None:
    """The documented proxy lines overwrite ``X-Forwarded-For`` and ``X-Forwarded-Proto``: a client that forges
    them through nginx still counts as its own address (three tables against a burst of two), and a sign-up over
    https gets a ``Secure`` cookie (over http, not), its ``Origin`` (with nginx's port) taken as this site's."""
    server = start_server(f"sqlite+aiosqlite:///{tmp_path / 'front.db'}", log=tmp_path / "serve.log",
                          options=["--forwarded-allow-ips", "127.0.0.1", "--create-burst", "2"])
    try:
        cert, key = self_signed(tmp_path)
        http_port, https_port = free_port(), free_port()
        config = (documented_config().replace("127.0.0.1:8001", f"127.0.0.1:{server.port}")
                  .replace("127.0.0.1:8002", f"127.0.0.1:{server.port}")
                  .replace("listen 127.0.0.1:8000;", f"listen 127.0.0.1:{http_port};\n"
                           f"    listen 127.0.0.1:{https_port} ssl;\n    ssl_certificate {cert};\n"
                           f"    ssl_certificate_key {key};"))
        start_nginx(tmp_path, config, nginx_at, http_port, https_port)
        plain_base, tls_base = f"http://127.0.0.1:{http_port}", f"https://127.0.0.1:{https_port}"
        with httpx.Client(base_url=plain_base, timeout=20) as plain, \
                httpx.Client(base_url=tls_base, timeout=20, verify=ssl.create_default_context(cafile=cert)) as tls:
            forged = [{"X-Forwarded-For": f"203.0.113.{i}", "X-Forwarded-Proto": "https"} for i in range(3)]
            assert [plain.post("/api/tables", json=SMALL, headers=h).status_code for h in forged] == [201, 201, 429]
            assert tls.post("/api/tables", json=SMALL, headers={"X-Forwarded-For": "198.51.100.1"}).status_code == 429
            made = tls.post("/api/accounts", json={"name": "secure", "password": PASSWORD},
                            headers={"Origin": tls_base, "X-Forwarded-Proto": "http"})
            assert made.status_code == 201, made.text
            assert _secure(made)
            made = plain.post("/api/accounts", json={"name": "plain", "password": PASSWORD},
                              headers={"Origin": plain_base, "X-Forwarded-Proto": "https"})
            assert made.status_code == 201, made.text
            assert not _secure(made)
            cross = plain.post("/api/session", json={"name": "plain", "password": PASSWORD},
                               headers={"Origin": tls_base.replace(str(https_port), str(http_port))})
            assert cross.status_code == 403  # https page, http request: another origin
    finally:
        server.stop()
