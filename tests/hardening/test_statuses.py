"""Every status the description documents, for every operation, is one the service sends.

For each (operation, status) pair in /openapi.json, the table below holds a request
that gets that answer, so a status documented but never sent (or sent but not
documented: the fuzzer's check) is a failing test. The signed-URL routes are served
by the service only with local files: with S3 they answer 404 to every request, so
their other statuses are reached on a service with local files (and the same database).
"""

from __future__ import annotations

import secrets
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.flows import RANKS_8, inspected, request_urls, send, spec, upload
from tests.hardening.service import DOCUMENT, TOKEN, hardening_process
from tests.hardening.stall import PATIENCE, connect, read_answer, stalled
from tests.server import FRESH_CONNECTIONS, ServerProcess, uses_s3
from tracesets.db.engine import head_revision

DOCUMENTED = sorted(
    (operation["operationId"], int(status))
    for path in DOCUMENT["paths"].values()
    for operation in path.values()
    for status in operation["responses"]
)

HUGE = b'{"name": "' + b"x" * (4 * 1024 * 1024) + b'"}'  # over the 4 MiB limit
JSON = {"Content-Type": "application/json"}
TEXT = {"Content-Type": "text/plain"}
ZEROS = "0" * 64
#: The rate of the service that answers 429: requests a second per token.
SLOW = "0.001"


@dataclass
class Reach:
    """The services, tokens and tracesets the table's requests use."""

    server: ServerProcess
    local: ServerProcess  # keeps files itself: its signed URLs are served
    scoped: Callable[[str], str]  # a token of the default workspace with only this scope
    limited: Callable[[], ServerProcess]  # a service with a rate of one request a second
    strained: Callable[[str], ServerProcess]  # a service of STRAINED's settings, by name
    cache: dict[str, Any] = field(default_factory=dict)

    def api(self, token: str | None = TOKEN, server: ServerProcess | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(
            base_url=(server or self.server).url,
            headers=headers,
            timeout=60,
            limits=FRESH_CONNECTIONS,
        )

    def ready(self) -> str:
        with self.api() as api:
            return str(upload(api, {"rank0.json": b"trace"}, RANKS_8, name="statuses")["id"])

    def compared(self, route: str = "") -> str:
        """The path comparing two inspected tracesets (``route``: one of its pages)."""
        ours, theirs = self.ready(), self.ready()
        with self.api() as api:
            for traceset_id in (ours, theirs):
                inspected(api, traceset_id)
        return f"/api/v1/tracesets/{ours}/compare/{theirs}{route}"

    def compared_with_itself(self, route: str) -> str:
        traceset_id = self.ready()
        return f"/api/v1/tracesets/{traceset_id}/compare/{traceset_id}{route}"

    def pending(self) -> str:
        with self.api() as api:
            return str(request_urls(api, {"rank0.json": b"trace"}, RANKS_8)["tracesetId"])

    def signed(self, method: str) -> tuple[str, bytes]:
        """A signed URL of the local service: PUT of a pending file, or GET of a ready one."""
        data = secrets.token_bytes(100)
        with self.api(server=self.local) as api:
            created = request_urls(api, {"rank0.json": data}, RANKS_8)
            [target] = created["uploads"]
            if method == "PUT":
                return str(target["url"]), data
            send(target, data)
            path = f"/api/v1/tracesets/{created['tracesetId']}"
            assert api.post(f"{path}/complete").status_code == 200
            return str(api.get(f"{path}/files/rank0.json").headers["location"]), data

    def orphaned(self, method: str) -> str:
        """A signed URL whose traceset has since been deleted."""
        url, _ = self.signed(method)
        traceset_id = url.split("/api/v1/blobs/")[1].split("/")[0]
        with self.api(server=self.local) as api:
            assert api.delete(f"/api/v1/tracesets/{traceset_id}").status_code == 204
        return url


#: Services with local files and small bounds, for the statuses of slow or many clients.
STRAINED = {
    "impatient": {"TRACESETS_BODY_IDLE_TIMEOUT": "1"},
    "one-upload": {"TRACESETS_MAX_CONCURRENT_UPLOADS": "1", "TRACESETS_UPLOAD_WAIT": "1"},
    "crowded": {"TRACESETS_MAX_CONNECTIONS": "2"},
    "behind": {},  # its database is then set a migration back: not ready
    "unmetered": {"TRACESETS_METRICS": "off"},
    "metered": {"TRACESETS_METRICS": "token"},
    "metered-slowly": {
        "TRACESETS_METRICS": "token",
        "TRACESETS_RATE_LIMIT": "0.002",  # not SLOW: ``limited`` finds its service by SLOW
        "TRACESETS_RATE_BURST": "1",
    },
}

Request = tuple[str, str, dict[str, Any]]  # method, path, httpx keyword arguments
#: The comparison's operations, by the route each pages under its path.
COMPARED = {
    "compare_tracesets": "",
    "compare_ranks": "/ranks",
    "compare_kernels": "/kernels",
    "compare_operators": "/operators",
}

#: A request each operation answers with success, given a traceset that fits it.
ROUTES: dict[str, Callable[[Reach], Request]] = {
    "request_upload_urls": lambda r: (
        "POST",
        "/api/v1/tracesets/upload-url",
        {"json": {"name": "n", "files": [spec("a", b"x")], "workloadMetadata": RANKS_8}},
    ),
    "get_upload_status": lambda r: ("GET", f"/api/v1/tracesets/{r.pending()}/uploads", {}),
    "add_files": lambda r: (
        "POST",
        f"/api/v1/tracesets/{r.pending()}/files",
        {"json": {"files": [spec("rank1.json", b"x")]}},
    ),
    "complete_traceset": lambda r: ("POST", f"/api/v1/tracesets/{r.ready()}/complete", {}),
    "get_traceset": lambda r: ("GET", f"/api/v1/tracesets/{r.ready()}", {}),
    "list_rank_figures": lambda r: ("GET", f"/api/v1/tracesets/{r.ready()}/ranks", {}),
    "delete_traceset": lambda r: ("DELETE", f"/api/v1/tracesets/{r.ready()}", {}),
    "compare_tracesets": lambda r: ("GET", r.compared(), {}),
    "compare_ranks": lambda r: ("GET", r.compared("/ranks"), {}),
    "compare_kernels": lambda r: ("GET", r.compared("/kernels"), {}),
    "compare_operators": lambda r: ("GET", r.compared("/operators"), {}),
    "list_tracesets": lambda r: ("GET", "/api/v1/tracesets", {}),
    "promote_traceset": lambda r: ("POST", f"/api/v1/tracesets/{r.ready()}/promote", {"json": {}}),
    "download_file": lambda r: ("GET", f"/api/v1/tracesets/{r.ready()}/files/rank0.json", {}),
    "list_files": lambda r: ("GET", f"/api/v1/tracesets/{r.ready()}/files", {}),
    "healthz": lambda r: ("GET", "/healthz", {}),
    "livez": lambda r: ("GET", "/livez", {}),
    "readyz": lambda r: ("GET", "/readyz", {}),
    "usage": lambda r: ("GET", "/api/v1/usage", {}),
    "whoami": lambda r: ("GET", "/api/v1/whoami", {}),
    "metrics": lambda r: ("GET", "/metrics", {}),
}

#: Which scope each operation needs; a token with only another one gets 403.
OTHER_SCOPE = {
    "request_upload_urls": "read",
    "complete_traceset": "read",
    "add_files": "read",
    "delete_traceset": "read",
    "promote_traceset": "read",
    "get_upload_status": "promote",
    "get_traceset": "promote",
    "list_rank_figures": "promote",
    "compare_tracesets": "promote",
    "compare_ranks": "promote",
    "compare_kernels": "promote",
    "compare_operators": "promote",
    "list_tracesets": "promote",
    "download_file": "promote",
    "list_files": "promote",
    "usage": "promote",
}


def _send(reach: Reach, request: Request, **client: Any) -> httpx.Response:
    method, path, kwargs = request
    with reach.api(**client) as api:
        return api.request(method, path, **kwargs)


def without_token(reach: Reach, operation: str) -> httpx.Response:
    return _send(reach, ROUTES[operation](reach), token=None)


def without_scope(reach: Reach, operation: str) -> httpx.Response:
    return _send(reach, ROUTES[operation](reach), token=reach.scoped(OTHER_SCOPE[operation]))


def too_fast(reach: Reach, operation: str) -> httpx.Response:
    server = reach.limited()
    method, path, kwargs = ROUTES[operation](reach)
    with reach.api(token=server.token, server=server) as api:
        answers = [api.request(method, path, **kwargs) for _ in range(3)]
    assert answers[-1].headers.get("retry-after", "").isdigit()
    return answers[-1]


def crowded(reach: Reach, request: Request) -> httpx.Response:
    """The request, sent while idle connections fill the service's requests at once."""
    server = reach.strained("crowded")
    method, path, kwargs = request
    idle: list[socket.socket] = []
    try:
        for _ in range(3):  # the service may not have taken the idle connections in yet
            idle.append(connect(server.url))
            with reach.api(server=server) as api:
                answer = api.request(method, path, **kwargs)
            if answer.status_code == 503:
                assert answer.headers["retry-after"].isdigit()
                return answer
        return answer
    finally:
        for sock in idle:
            sock.close()
        _wait_until_serving(server)


def _wait_until_serving(server: ServerProcess) -> None:
    deadline = time.monotonic() + PATIENCE
    while httpx.get(f"{server.url}/healthz").status_code != 200:
        assert time.monotonic() < deadline, "the crowded service never served again"
        time.sleep(0.05)


def malformed(url: str, method: str = "GET") -> httpx.Response:
    """The answer to ``method`` of ``url`` with a Transfer-Encoding no parser reads (the fuzz's
    "?9"): refused before any route, so every operation may answer it."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    request = (
        f"{method} {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Transfer-Encoding: ?9\r\n\r\n"
    )
    with connect(url) as sock:
        sock.sendall(request.encode())
        answer = read_answer(sock)
    assert answer is not None, "closed without an answer"
    return httpx.Response(answer.status, headers=answer.headers, content=answer.body)


def unframed(reach: Reach, operation: str) -> httpx.Response:
    method, path, _ = ROUTES[operation](reach)
    return malformed(reach.server.url + path, method)


def overloaded(reach: Reach, operation: str) -> httpx.Response:
    return crowded(reach, ROUTES[operation](reach))


def stalled_body(reach: Reach, method: str, url: str, content_type: str) -> httpx.Response:
    """The answer to a request whose body stops after its first byte."""
    with stalled(
        method,
        url,
        length=100,
        sent=b"{",
        content_type=content_type,
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as sock:
        answer = read_answer(sock)
    assert answer is not None, "closed without an answer"
    return httpx.Response(answer.status, headers=answer.headers, content=answer.body)


def stalled_json(reach: Reach, path: str) -> httpx.Response:
    return stalled_body(reach, "POST", reach.strained("impatient").url + path, "application/json")


def stalled_put(reach: Reach) -> httpx.Response:
    server = reach.strained("impatient")
    with reach.api(server=server) as api:
        [target] = request_urls(api, {"rank0.json": b"x" * 100}, RANKS_8)["uploads"]
    return stalled_body(reach, "PUT", target["url"], "application/octet-stream")


def upload_past_the_bound(reach: Reach) -> httpx.Response:
    """A PUT while another upload, stalled, holds the service's one upload slot."""
    server = reach.strained("one-upload")
    files = {"rank0.json": b"x" * 100, "rank1.json": b"y" * 100}
    with reach.api(server=server) as api:
        first, second = request_urls(api, files, RANKS_8)["uploads"]
    tmp = server.data_dir / "tmp"
    with stalled("PUT", first["url"], length=100, sent=b"x"):
        deadline = time.monotonic() + PATIENCE
        while not any(tmp.iterdir()):  # the stalled upload has its slot once its file exists
            assert time.monotonic() < deadline, "the stalled upload never started"
            time.sleep(0.05)
        answer = put_bytes(second["url"], files["rank1.json"])
    assert answer.headers["retry-after"].isdigit()
    return answer


def unknown(reach: Reach, operation: str) -> httpx.Response:
    method, path, kwargs = ROUTES[operation](reach)
    parts = path.split("/")
    parts[4] = "0" * 32  # the traceset id
    return _send(reach, (method, "/".join(parts), kwargs))


def idempotency_conflict(reach: Reach) -> httpx.Response:
    key = {"Idempotency-Key": secrets.token_hex(8)}
    with reach.api() as api:
        first = {"name": "a", "files": [spec("a", b"x", role="supporting")]}
        assert api.post("/api/v1/tracesets/upload-url", json=first, headers=key).is_success
        return api.post("/api/v1/tracesets/upload-url", json={**first, "name": "b"}, headers=key)


def not_ready(reach: Reach) -> httpx.Response:
    """/readyz of a service whose database is a migration behind this version's."""
    server = reach.strained("behind")
    server.execute(f"UPDATE alembic_version SET version_num = '{int(head_revision()) - 1:04d}'")
    answer = httpx.get(f"{server.url}/readyz", timeout=60)
    assert answer.json()["errors"][0]["member"] == "migrations"
    return answer


def metrics_of(reach: Reach, name: str, tries: int = 1) -> httpx.Response:
    """/metrics of a strained service, with its bootstrap token (no metrics scope)."""
    server = reach.strained(name)
    with reach.api(server=server) as api:
        answers = [api.get("/metrics") for _ in range(tries)]
    return answers[-1]


def put_bytes(url: str, data: bytes) -> httpx.Response:
    return httpx.put(url, content=data, timeout=60)


def altered(url: str) -> str:
    return url.split("signature=", maxsplit=1)[0] + f"signature={ZEROS}"


def late_put(reach: Reach) -> httpx.Response:
    """Other bytes to the upload URL of a file whose traceset is complete."""
    url, data = reach.signed("PUT")
    with reach.api(server=reach.local) as api:
        traceset_id = url.split("/api/v1/blobs/")[1].split("/")[0]
        assert put_bytes(url, data).status_code == 200
        assert api.post(f"/api/v1/tracesets/{traceset_id}/complete").status_code == 200
    return put_bytes(url, bytes(len(data)))


def pending_file(reach: Reach) -> httpx.Response:
    with reach.api() as api:
        return api.get(f"/api/v1/tracesets/{reach.pending()}/files/rank0.json")


TABLE: dict[tuple[str, int], Callable[[Reach], httpx.Response]] = {
    ("request_upload_urls", 201): lambda r: _send(r, ROUTES["request_upload_urls"](r)),
    ("request_upload_urls", 400): lambda r: _send(
        r, ("POST", "/api/v1/tracesets/upload-url", {"json": {"name": "n", "files": []}})
    ),
    ("request_upload_urls", 413): lambda r: _send(
        r, ("POST", "/api/v1/tracesets/upload-url", {"content": HUGE, "headers": JSON})
    ),
    ("request_upload_urls", 415): lambda r: _send(
        r, ("POST", "/api/v1/tracesets/upload-url", {"content": b"{}", "headers": TEXT})
    ),
    ("request_upload_urls", 422): idempotency_conflict,
    ("request_upload_urls", 408): lambda r: stalled_json(r, "/api/v1/tracesets/upload-url"),
    ("promote_traceset", 408): lambda r: stalled_json(
        r,
        f"/api/v1/tracesets/{'0' * 32}/promote",  # the body is read before the traceset
    ),
    ("upload_file", 408): stalled_put,
    ("upload_file", 503): upload_past_the_bound,
    ("download_signed_file", 503): lambda r: crowded(
        r, ("GET", f"/api/v1/blobs/{ZEROS[:32]}/0?expires=1&signature=0", {})
    ),
    ("add_files", 201): lambda r: _send(r, ROUTES["add_files"](r)),
    ("add_files", 400): lambda r: _send(
        r, ("POST", f"/api/v1/tracesets/{r.pending()}/files", {"json": {"files": []}})
    ),
    ("add_files", 409): lambda r: _send(
        r,
        ("POST", f"/api/v1/tracesets/{r.ready()}/files", {"json": {"files": [spec("b", b"x")]}}),
    ),
    ("add_files", 408): lambda r: stalled_json(
        r,
        f"/api/v1/tracesets/{'0' * 32}/files",  # the body is read before the traceset
    ),
    ("add_files", 415): lambda r: _send(
        r, ("POST", f"/api/v1/tracesets/{r.pending()}/files", {"content": b"{}", "headers": TEXT})
    ),
    ("add_files", 413): lambda r: _send(
        r, ("POST", f"/api/v1/tracesets/{r.pending()}/files", {"content": HUGE, "headers": JSON})
    ),
    ("get_upload_status", 200): lambda r: _send(r, ROUTES["get_upload_status"](r)),
    ("get_upload_status", 400): lambda r: _send(
        r, ("GET", f"/api/v1/tracesets/{r.pending()}/uploads?limit=0", {})
    ),
    ("complete_traceset", 200): lambda r: _send(r, ROUTES["complete_traceset"](r)),
    ("complete_traceset", 409): lambda r: _send(
        r, ("POST", f"/api/v1/tracesets/{r.pending()}/complete", {})
    ),
    ("get_traceset", 200): lambda r: _send(r, ROUTES["get_traceset"](r)),
    ("delete_traceset", 204): lambda r: _send(r, ROUTES["delete_traceset"](r)),
    ("list_rank_figures", 200): lambda r: _send(r, ROUTES["list_rank_figures"](r)),
    ("list_rank_figures", 400): lambda r: _send(
        r, ("GET", f"/api/v1/tracesets/{r.ready()}/ranks?cursor=nope", {})
    ),
    **{
        (operation, status): reaching
        for operation, route in COMPARED.items()
        for status, reaching in {
            200: lambda r, o=operation: _send(r, ROUTES[o](r)),
            400: lambda r, route=route: _send(r, ("GET", r.compared_with_itself(route), {})),
            409: lambda r, route=route: _send(
                r, ("GET", f"/api/v1/tracesets/{r.pending()}/compare/{r.ready()}{route}", {})
            ),
        }.items()
    },
    ("list_tracesets", 200): lambda r: _send(r, ROUTES["list_tracesets"](r)),
    ("list_tracesets", 400): lambda r: _send(r, ("GET", "/api/v1/tracesets?limit=0", {})),
    ("promote_traceset", 200): lambda r: _send(r, ROUTES["promote_traceset"](r)),
    ("promote_traceset", 400): lambda r: _send(
        r,
        (
            "POST",
            f"/api/v1/tracesets/{r.ready()}/promote",
            {"json": {"workloadMetadata": {"shape": {"rankCount": 9}}}},
        ),
    ),
    ("promote_traceset", 409): lambda r: _send(
        r, ("POST", f"/api/v1/tracesets/{r.pending()}/promote", {"json": {}})
    ),
    ("promote_traceset", 413): lambda r: _send(
        r, ("POST", f"/api/v1/tracesets/{r.ready()}/promote", {"content": HUGE, "headers": JSON})
    ),
    ("promote_traceset", 415): lambda r: _send(
        r, ("POST", f"/api/v1/tracesets/{r.ready()}/promote", {"content": b"{}", "headers": TEXT})
    ),
    ("download_file", 307): lambda r: _send(r, ROUTES["download_file"](r)),
    ("download_file", 404): lambda r: _send(
        r, ("GET", f"/api/v1/tracesets/{r.ready()}/files/no-such-file", {})
    ),
    ("download_file", 409): pending_file,
    ("list_files", 200): lambda r: _send(r, ROUTES["list_files"](r)),
    ("list_files", 400): lambda r: _send(
        r, ("GET", f"/api/v1/tracesets/{r.ready()}/files?limit=0", {})
    ),
    ("upload_file", 200): lambda r: put_bytes(*r.signed("PUT")),
    ("upload_file", 400): lambda r: put_bytes(r.signed("PUT")[0], b"other bytes"),
    ("upload_file", 409): late_put,
    ("upload_file", 403): lambda r: put_bytes(altered(r.signed("PUT")[0]), b"x"),
    ("upload_file", 404): lambda r: put_bytes(r.orphaned("PUT"), b"x"),
    ("download_signed_file", 200): lambda r: httpx.get(r.signed("GET")[0], timeout=60),
    ("download_signed_file", 403): lambda r: httpx.get(altered(r.signed("GET")[0]), timeout=60),
    ("download_signed_file", 404): lambda r: httpx.get(r.orphaned("GET"), timeout=60),
    ("download_signed_file", 400): lambda r: malformed(r.signed("GET")[0]),
    ("healthz", 200): lambda r: _send(r, ROUTES["healthz"](r)),
    ("livez", 200): lambda r: _send(r, ROUTES["livez"](r), token=None),
    ("readyz", 200): lambda r: _send(r, ROUTES["readyz"](r), token=None),
    ("readyz", 503): not_ready,
    ("usage", 200): lambda r: _send(r, ROUTES["usage"](r), token=r.scoped("read")),
    ("whoami", 200): lambda r: _send(r, ROUTES["whoami"](r), token=r.scoped("promote")),
    ("metrics", 200): lambda r: _send(r, ROUTES["metrics"](r), token=None),
    ("metrics", 401): lambda r: _send(
        r, ROUTES["metrics"](r), token=None, server=r.strained("metered")
    ),
    ("metrics", 403): lambda r: metrics_of(r, "metered"),
    ("metrics", 404): lambda r: metrics_of(r, "unmetered"),
    ("metrics", 429): lambda r: metrics_of(r, "metered-slowly", tries=3),
}

#: Statuses every authenticated operation sends the same way.
ANY_OPERATION: dict[int, Callable[[Reach, str], httpx.Response]] = {
    400: unframed,
    401: without_token,
    403: without_scope,
    404: unknown,
    429: too_fast,
    503: overloaded,
}


@pytest.fixture(scope="module")
def reach(
    hardening_server: ServerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Reach]:
    started: list[ServerProcess] = []

    def start(data_dir: Path, **env: str) -> ServerProcess:
        process = ServerProcess(data_dir, extra_env=env)
        process.start()
        started.append(process)
        return process

    local = hardening_server
    if uses_s3():
        local = hardening_process(tmp_path_factory.mktemp("local"), local_files=True)
        local.start()
        started.append(local)
    tokens: dict[str, str] = {}

    def scoped(scope: str) -> str:
        if scope not in tokens:
            done = hardening_server.cli(
                "token", "create", "--scope", scope, "--data-dir", str(hardening_server.data_dir)
            )
            assert done.returncode == 0, done.stderr
            tokens[scope] = done.stdout.strip()
        return tokens[scope]

    def limited() -> ServerProcess:
        # One request, then one in 1,000 s: the bucket refills nothing while the table
        # runs, however slowly the requests are served, so every later one is refused.
        if not any(p.env.get("TRACESETS_RATE_LIMIT") == SLOW for p in started):
            start(
                tmp_path_factory.mktemp("limited"),
                TRACESETS_RATE_LIMIT=SLOW,
                TRACESETS_RATE_BURST="1",
            )
        return next(p for p in started if p.env.get("TRACESETS_RATE_LIMIT") == SLOW)

    strained_services: dict[str, ServerProcess] = {}

    def strained(name: str) -> ServerProcess:
        if name not in strained_services:
            process = ServerProcess(
                tmp_path_factory.mktemp(name),
                extra_env={"TRACESETS_BOOTSTRAP_TOKEN": TOKEN, **STRAINED[name]},
                local_files=True,
            )
            process.start()
            started.append(process)
            strained_services[name] = process
        return strained_services[name]

    assert httpx.get(f"{hardening_server.url}/openapi.json", timeout=60).json() == DOCUMENT
    yield Reach(hardening_server, local, scoped, limited, strained)
    for process in started:
        process.stop()


@pytest.mark.parametrize(("operation", "status"), DOCUMENTED, ids=str)
def test_documented_status_is_sent(reach: Reach, operation: str, status: int) -> None:
    if (operation, status) in TABLE:
        answer = TABLE[operation, status](reach)
    elif status in ANY_OPERATION and operation in ROUTES:
        answer = ANY_OPERATION[status](reach, operation)
    else:
        pytest.fail(f"{operation} documents {status}, and no request here reaches it")
    assert answer.status_code == status, answer.text
    if status >= 400:
        assert answer.headers["content-type"] == "application/problem+json"


def test_the_table_holds_only_documented_statuses() -> None:
    assert set(TABLE) <= set(DOCUMENTED), set(TABLE) - set(DOCUMENTED)


def test_signed_url_routes_answer_as_their_storage_does(hardening_server: ServerProcess) -> None:
    """With S3 the service serves no file bytes (404 naming S3); with local files it checks
    the signature first (403)."""
    for method in ("GET", "PUT"):
        answer = httpx.request(
            method,
            f"{hardening_server.url}/api/v1/blobs/{ZEROS[:32]}/0?expires=1&signature=0",
            timeout=60,
        )
        if uses_s3():
            assert answer.status_code == 404, answer.text
            assert "S3" in answer.json()["detail"]
        else:
            assert answer.status_code == 403, answer.text
            assert "signature" in answer.json()["detail"]
