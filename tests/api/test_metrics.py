"""GET /metrics over HTTP: counts summed over worker processes, upload outcomes, the
inspection queue read from the database, labels of bounded values, and who may read it."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator

import httpx
import pytest

from tests.flows import RANKS_8, request_urls, send, spec
from tests.server import FRESH_CONNECTIONS, ServerProcess, prometheus_series

Series = dict[str, float]


def scrape(server: ServerProcess, token: str | None = None) -> Series:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = httpx.get(f"{server.url}/metrics", headers=headers, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return prometheus_series(answer.text)


def _client(server: ServerProcess, token: str | None = None) -> httpx.Client:
    return httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {token or server.token}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    )


@pytest.fixture(scope="module")
def queued(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A service with local files that leaves inspection to workers (none run)."""
    server = ServerProcess(
        tmp_path_factory.mktemp("metrics"),
        extra_env={"TRACESETS_INSPECT_IN_SERVICE": "0"},
        local_files=True,
    )
    server.start()
    yield server
    server.stop()


def test_a_count_sums_every_worker_process(tmp_path_factory: pytest.TempPathFactory) -> None:
    server = ServerProcess(tmp_path_factory.mktemp("two-workers"), workers=2)
    server.start()
    try:
        sent = 60
        for _ in range(sent):  # a fresh connection each: either process may take it
            assert httpx.get(f"{server.url}/livez", timeout=60).status_code == 200
        series = scrape(server)
        assert (
            series['tracesets_http_requests_total{method="GET",route="/livez",status="200"}']
            == sent
        )
        assert (
            series['tracesets_http_request_duration_seconds_count{method="GET",route="/livez"}']
            == sent
        )
        assert series["tracesets_service_processes"] == 2
    finally:
        server.stop()


def test_uploads_started_completed_and_refused(queued: ServerProcess) -> None:
    before = scrape(queued)
    data = b'{"traceEvents": []}'
    with _client(queued) as api:
        created = request_urls(api, {"rank0.json": data}, RANKS_8)
        [target] = created["uploads"]
        path = f"/api/v1/tracesets/{created['tracesetId']}"
        added = api.post(f"{path}/files", json={"files": [spec("notes.txt", b"n", "supporting")]})
        assert added.status_code == 201
        send(target, data)
        send(added.json()["uploads"][0], b"n")
        assert api.post(f"{path}/complete").status_code == 200
        refused = api.post("/api/v1/tracesets/upload-url", json={"name": "n", "files": []})
        assert refused.status_code == 400
        assert httpx.put(target["url"], content=bytes(len(data)), timeout=60).status_code == 409
    after = scrape(queued)

    def grew(name: str) -> float:
        return after.get(name, 0) - before.get(name, 0)

    assert grew('tracesets_uploads_started_total{via="upload-url"}') == 1
    assert grew('tracesets_uploads_started_total{via="add-files"}') == 1
    assert grew("tracesets_uploads_completed_total") == 1
    assert grew('tracesets_uploads_refused_total{reason="invalid-request"}') == 1
    assert grew('tracesets_uploads_refused_total{reason="conflict"}') == 1
    put = 'tracesets_http_requests_total{method="PUT",route="/api/v1/blobs/{traceset_id}/{idx}",status="200"}'
    assert grew(put) == 2
    assert grew(
        'tracesets_http_received_bytes_total{route="/api/v1/blobs/{traceset_id}/{idx}"}'
    ) == (2 * len(data) + 1)
    # No process inspects here: the completed traceset waits in the queue.
    assert after["tracesets_inspection_unfinished"] >= 1
    assert after["tracesets_inspection_oldest_unfinished_age_seconds"] >= 0
    assert after["tracesets_inspection_claimants"] == 0


def test_labels_hold_no_id_name_or_token_and_stay_bounded(queued: ServerProcess) -> None:
    used: list[str] = []

    def traffic() -> None:
        for _ in range(15):
            word = secrets.token_hex(6)
            token = "tsk_" + secrets.token_hex(16)
            name = f"run-{secrets.token_hex(5)}"
            used.extend([word, token, name])
            with _client(queued) as api:
                api.get(f"/api/v1/tracesets/{word}")
                api.get(f"/api/v1/tracesets/{'a' * 20}{word}/files/{name}")
                api.get(f"/{word}/{name}", headers={"X-Request-ID": word})
                api.delete(f"/api/v1/{name}")
                api.post("/api/v1/tracesets/upload-url", json={"name": name, "files": []})
            with _client(queued, token) as api:
                assert api.get(f"/api/v1/tracesets?name={name}").status_code == 401

    traffic()
    first = scrape(queued)
    traffic()
    second = scrape(queued)
    text = httpx.get(f"{queued.url}/metrics", timeout=60).text
    assert set(second) - set(first) <= {
        key for key in second if key.startswith("tracesets_http_request") and "/metrics" in key
    }
    for value in used:
        assert value not in text
    for labels in re.findall(r"\{([^}]*)\}", text):
        assert queued.token not in labels


@pytest.mark.parametrize(
    ("setting", "without_token", "read_token", "metrics_token"),
    [("token", 401, 403, 200), ("off", 404, 404, 404), ("open", 200, 200, 200)],
)
def test_who_may_read_the_metrics(
    tmp_path_factory: pytest.TempPathFactory,
    setting: str,
    without_token: int,
    read_token: int,
    metrics_token: int,
) -> None:
    server = ServerProcess(
        tmp_path_factory.mktemp(f"metrics-{setting}"), extra_env={"TRACESETS_METRICS": setting}
    )
    server.start()
    try:
        tokens = {}
        for scope in ("read", "metrics"):
            done = server.cli(
                "token", "create", "--scope", scope, "--data-dir", str(server.data_dir)
            )
            assert done.returncode == 0, done.stderr
            tokens[scope] = done.stdout.strip()
        url = f"{server.url}/metrics"
        assert httpx.get(url, timeout=60).status_code == without_token
        for scope, expected in (("read", read_token), ("metrics", metrics_token)):
            headers = {"Authorization": f"Bearer {tokens[scope]}"}
            answer = httpx.get(url, headers=headers, timeout=60)
            assert answer.status_code == expected, answer.text
        with _client(server, tokens["metrics"]) as api:  # opens no workspace's tracesets
            assert api.get("/api/v1/tracesets").status_code == 403
            assert api.get("/api/v1/whoami").json()["scopes"] == ["metrics"]
    finally:
        server.stop()


def test_rate_limit_refusals_are_counted(tmp_path_factory: pytest.TempPathFactory) -> None:
    server = ServerProcess(
        tmp_path_factory.mktemp("metrics-limited"),
        extra_env={"TRACESETS_RATE_LIMIT": "0.001", "TRACESETS_RATE_BURST": "1"},
    )
    server.start()
    try:
        with _client(server) as api:
            statuses = [api.get("/api/v1/whoami").status_code for _ in range(3)]
        assert statuses == [200, 429, 429]
        assert scrape(server)["tracesets_rate_limited_total"] == 2
    finally:
        server.stop()
