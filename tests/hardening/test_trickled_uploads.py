"""Slow uploads through one signed URL, or one traceset's, cannot deny uploads to others.

Each upload, however slow, held one of the process's upload slots; one URL sent as many
PUTs as there are slots, each trickling a byte now and then, held them all for as long
as the URL lasts. Now one file is received by one upload at a time, a traceset's
uploads hold at most half the slots, and a body slower than the minimum rate is cut.
Each service here has slots and timeouts small enough for the test to see them act.
"""

from __future__ import annotations

import json
import secrets
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.flows import RANKS_8, request_urls, send
from tests.hardening.stall import PATIENCE, answered, read_answer, stalled
from tests.hardening.test_slow_clients import (
    api_of,
    is_problem,
    put_urls,
    start,
    temporary_files,
    wait_for,
)
from tests.server import ServerProcess

SLOTS = 4
ATTACKERS = 8


@pytest.fixture(scope="module")
def few_slots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Four upload slots, a one-second wait for one, bodies' other bounds as shipped."""
    process = start(
        tmp_path_factory.mktemp("few_slots"),
        TRACESETS_MAX_CONCURRENT_UPLOADS=str(SLOTS),
        TRACESETS_UPLOAD_WAIT="1",
    )
    yield process
    process.stop()


def other_workspaces_put(server: ServerProcess) -> httpx.Response:
    """A PUT of a traceset of another workspace (another token's)."""
    data = secrets.token_bytes(1000)
    with httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {server.new_token('elsewhere')}"},
        timeout=60,
    ) as api:
        [target] = request_urls(api, {"rank0.json": data}, RANKS_8)["uploads"]
    return httpx.put(target["url"], content=data, headers=target["headers"], timeout=60)


@pytest.mark.parametrize(
    ("one_url", "holding", "why"),
    [
        (True, 1, "An upload of this file is in progress already"),
        (False, SLOTS // 2, f"This traceset's uploads hold {SLOTS // 2} of the service's"),
    ],
    ids=["one signed URL", "one traceset's URLs"],
)
def test_slow_puts_of_one_url_or_traceset_leave_slots_to_other_workspaces(
    few_slots: ServerProcess, one_url: bool, holding: int, why: str
) -> None:
    _, urls = put_urls(few_slots, ATTACKERS)
    targets = [urls[0]] * ATTACKERS if one_url else urls
    attackers: list[socket.socket] = []
    try:
        for url in targets:  # each sends a byte of its body, then waits to send the next
            attackers.append(stalled("PUT", url, length=1000, sent=b"x"))
        # Each is received (its temporary file exists) or, its share full, refused in 1 s.
        wait_for(
            lambda: len(temporary_files(few_slots)) + sum(map(answered, attackers)) == ATTACKERS,
            "every slow PUT to hold a slot or be refused",
        )
        held = len(temporary_files(few_slots))
        served = other_workspaces_put(few_slots)  # while the slow PUTs hold their slots
        assert served.status_code == 200, served.text
        assert held == len(temporary_files(few_slots)) == holding
        refusals = [read_answer(sock) for sock in attackers if answered(sock)]
        for refusal in refusals:
            answer = is_problem(refusal, 503)
            assert answer.headers["retry-after"] == "1"
            assert why in json.loads(answer.body)["detail"]
    finally:
        for sock in attackers:
            sock.close()
    wait_for(lambda: temporary_files(few_slots) == [], "the abandoned uploads' files to go")


@pytest.fixture(scope="module")
def paced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Bodies must bring 128 KiB in each 2 s of waiting (64 KiB a second)."""
    process = start(
        tmp_path_factory.mktemp("paced"),
        TRACESETS_BODY_IDLE_TIMEOUT="2",
        TRACESETS_MIN_BODY_RATE=str(64 * 1024),
    )
    yield process
    process.stop()


def test_a_put_slower_than_the_minimum_rate_is_cut_and_leaves_nothing(
    paced: ServerProcess,
) -> None:
    """A byte every 20 ms never pauses for the idle timeout, yet is far below the rate."""
    traceset_id, [url] = put_urls(paced, 1, size=100_000)
    with stalled("PUT", url, length=100_000, sent=b"x") as sock:
        deadline = time.monotonic() + PATIENCE
        while not answered(sock, wait=0.02):
            assert time.monotonic() < deadline, "the trickle was never cut"
            try:
                sock.sendall(b"x")
            except (BrokenPipeError, ConnectionResetError):
                break
        answer = is_problem(read_answer(sock), 408)
    assert answer.headers["connection"] == "close"
    detail = json.loads(answer.body)["detail"]
    assert "in 2 seconds: slower than 65,536 bytes a second" in detail, detail
    wait_for(lambda: temporary_files(paced) == [], "the cut upload's file to go")
    with api_of(paced) as api:
        status = api.get(f"/api/v1/tracesets/{traceset_id}/uploads").json()
        assert status["received"] == [], status


def test_a_body_at_the_clients_speed_keeps_the_pace(paced: ServerProcess) -> None:
    data = secrets.token_bytes(4 * 1024 * 1024)
    with api_of(paced) as api:
        [target] = request_urls(api, {"rank0.json": data}, RANKS_8)["uploads"]
    send(target, data)
