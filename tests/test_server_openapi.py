"""The OpenAPI document matches what the server answers (issue 10): schemathesis generates requests for every
route of a real ``cardtable serve`` from the document alone (valid and invalid bodies, queries and paths) and
checks each answer: never a 5xx, a status the document lists for that route, and a body matching its schema
(errors: ``{"detail", "code", "params"}``), and invalid requests refused. Only "schema-valid data is
accepted" is left out: a game's options are checked by its engine, not by the document. Examples are few so the
suite stays fast."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from polling import wait_for
from services import free_port

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.slow]  # a real server process, every route fuzzed



@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    db = tmp_path_factory.mktemp("openapi") / "openapi.db"
    env = dict(os.environ, CARDTABLE_ANEMONE_BOT_DELAY_MS="0", CARDTABLE_HAND_PAUSE="0.1", CARDTABLE_DEFAULT_READY_S="0.1")
    proc = subprocess.Popen([sys.executable, "-m", "cardtable", "serve", "--port", str(port),
                             "--db", f"sqlite+aiosqlite:///{db}"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:

        def answers() -> bool:
            try:
                return httpx.get(f"{base}/api/games", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, 90, "the server to answer", every=0.1)
        yield base
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
        assert b"Traceback" not in err, err.decode(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def api_schema(base_url: str) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(f"{base_url}/openapi.json")


@pytest.mark.parametrize("mode", [schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE])
def test_every_route_answers_as_documented(api_schema: schemathesis.BaseSchema,
                                           mode: schemathesis.GenerationMode) -> None:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    from cardtable.server.edge import routes as lobby
    from cardtable.server.lobby import daily_routes, reviews
    from cardtable.server.players import accounts, push_routes
    from cardtable.server.players import leaderboards as players

    served = {(method, route.path) for module in (lobby, accounts, players, daily_routes, reviews, push_routes)
              for route in module.router.routes
              for method in getattr(route, "methods", ()) if method != "HEAD"}
    assert {(op.method.upper(), op.path) for op in operations} == served
    unsatisfiable: list[str] = []
    for operation in operations:
        inputs = len(operation.body) + len(operation.query) + len(operation.path_parameters)
        if mode is schemathesis.GenerationMode.NEGATIVE and inputs == 0:
            continue  # no parameter and no body: nothing can be invalid

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: schemathesis.Case) -> None:
            # A schema-valid body may still be refused: options are checked by the game's engine (422).
            case.call_and_validate(excluded_checks=[schemathesis.checks.positive_data_acceptance])

        try:
            check()
        except Unsatisfiable:
            # Negative mode on a route whose only parameter is a free path string: nothing there can be invalid.
            assert mode is schemathesis.GenerationMode.NEGATIVE and operation.method.upper() == "GET", operation
            unsatisfiable.append(operation.path)
    assert len(unsatisfiable) <= 6, unsatisfiable
