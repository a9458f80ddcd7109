"""An upload past the bound waits for a slot, then gets one or, after the wait, a 503.

The slots themselves, then the service in this process (its app over ASGI, SQLite and
local files): every wait here ends on an event or a condition of the slots, never on
time, except the one whose point is that the wait runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.flows import RANKS_8, spec
from tracesets.api.app import create_app
from tracesets.api.guards import UPLOAD_RETRY_AFTER, UploadSlots
from tracesets.problems import ServiceUnavailable
from tracesets.settings import Settings

#: How long a condition below may take to come true before the test fails.
PATIENCE = 60.0


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait, yielding to the event loop, until ``condition`` holds."""
    async with asyncio.timeout(PATIENCE):
        while not condition():
            await asyncio.sleep(0.005)
    assert condition(), what


def own() -> tuple[str, int]:
    """A file of a traceset of its own: within its share of the slots, whatever others hold."""
    return secrets.token_hex(16), 0


async def hold(slots: UploadSlots, entered: asyncio.Event, release: asyncio.Event) -> None:
    async with slots.slot(*own()):
        entered.set()
        await release.wait()


def test_an_upload_past_the_bound_waits_and_starts_when_a_slot_frees() -> None:
    async def scenario() -> None:
        slots = UploadSlots(1, wait=PATIENCE)
        entered, release = asyncio.Event(), asyncio.Event()
        holder = asyncio.create_task(hold(slots, entered, release))
        await entered.wait()
        second_in, second_release = asyncio.Event(), asyncio.Event()
        waiter = asyncio.create_task(hold(slots, second_in, second_release))
        await until(lambda: slots.waiting == 1, "the second upload to wait")
        assert not second_in.is_set() and slots.taken == 1
        release.set()
        await second_in.wait()  # handed the slot the first one gave back
        await holder
        assert (slots.taken, slots.waiting) == (1, 0)
        second_release.set()
        await waiter
        assert (slots.taken, slots.waiting) == (0, 0)

    asyncio.run(scenario())


def test_waiters_get_slots_first_come_first_served() -> None:
    async def scenario() -> None:
        slots = UploadSlots(3, wait=PATIENCE)
        order: list[int] = []
        gates = [asyncio.Event() for _ in range(6)]

        async def upload(number: int) -> None:
            async with slots.slot(*own()):
                order.append(number)
                await gates[number].wait()

        tasks = []
        for number in range(6):
            tasks.append(asyncio.create_task(upload(number)))
            await until(lambda n=number: len(order) + slots.waiting == n + 1, "its arrival")  # type: ignore[misc]
        assert (order, slots.waiting) == ([0, 1, 2], 3)
        for ended, started in ((1, 3), (0, 4), (2, 5)):
            gates[ended].set()
            await until(lambda s=started: s in order, "the next waiter to start")  # type: ignore[misc]
            assert slots.taken == 3
        assert order == [0, 1, 2, 3, 4, 5]
        for gate in gates:
            gate.set()
        await asyncio.gather(*tasks)
        assert (slots.taken, slots.waiting) == (0, 0)

    asyncio.run(scenario())


def test_past_the_wait_an_upload_is_refused_with_the_wait_as_retry_after() -> None:
    async def scenario() -> None:
        slots = UploadSlots(1, wait=0.05)
        entered, release = asyncio.Event(), asyncio.Event()
        holder = asyncio.create_task(hold(slots, entered, release))
        await entered.wait()
        with pytest.raises(ServiceUnavailable) as refused:
            async with slots.slot(*own()):
                pytest.fail("no slot was free")
        assert refused.value.retry_after == 1  # whole seconds, rounded up
        assert "1 uploads at once already; none ended within 0.05 seconds" in str(
            refused.value.problems[0].message
        )
        assert (slots.taken, slots.waiting) == (1, 0)
        release.set()
        await holder
        assert slots.taken == 0

    asyncio.run(scenario())


def test_without_a_wait_or_with_as_many_waiting_as_the_bound_the_refusal_is_at_once() -> None:
    async def scenario() -> None:
        no_wait = UploadSlots(1, wait=0)
        entered, release = asyncio.Event(), asyncio.Event()
        holder = asyncio.create_task(hold(no_wait, entered, release))
        await entered.wait()
        with pytest.raises(ServiceUnavailable) as refused:
            async with no_wait.slot(*own()):
                pytest.fail("no slot was free")
        assert refused.value.retry_after == UPLOAD_RETRY_AFTER
        release.set()
        await holder

        slots = UploadSlots(1, wait=PATIENCE)
        entered, release = asyncio.Event(), asyncio.Event()
        holder = asyncio.create_task(hold(slots, entered, release))
        await entered.wait()
        waiter = asyncio.create_task(hold(slots, asyncio.Event(), release))
        await until(lambda: slots.waiting == 1, "one upload to wait")
        with pytest.raises(ServiceUnavailable) as full:
            async with slots.slot(*own()):
                pytest.fail("the queue was full")
        assert full.value.retry_after == PATIENCE
        assert "already, and 1 more uploads wait for slots" in str(full.value.problems[0].message)
        release.set()
        await asyncio.gather(holder, waiter)
        assert (slots.taken, slots.waiting) == (0, 0)

    asyncio.run(scenario())


def test_a_waiter_that_leaves_keeps_no_slot_even_when_one_was_just_handed_to_it() -> None:
    async def scenario() -> None:
        slots = UploadSlots(1, wait=PATIENCE)
        entered, release = asyncio.Event(), asyncio.Event()
        holder = asyncio.create_task(hold(slots, entered, release))
        await entered.wait()
        gone = asyncio.create_task(hold(slots, asyncio.Event(), asyncio.Event()))
        await until(lambda: slots.waiting == 1, "the upload to wait")
        gone.cancel()  # a client that left while waiting
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert (slots.taken, slots.waiting) == (1, 0)

        handed = asyncio.create_task(hold(slots, asyncio.Event(), asyncio.Event()))
        await until(lambda: slots.waiting == 1, "the next upload to wait")
        release.set()
        await holder  # its slot is handed to the waiter, which is cancelled before it runs
        handed.cancel()
        with pytest.raises(asyncio.CancelledError):
            await handed
        assert (slots.taken, slots.waiting) == (0, 0)

    asyncio.run(scenario())


async def hold_file(
    slots: UploadSlots, file: tuple[str, int], entered: asyncio.Event, release: asyncio.Event
) -> None:
    async with slots.slot(*file):
        entered.set()
        await release.wait()


def test_one_file_is_received_by_one_upload_at_a_time() -> None:
    """A second upload of a file waits for the first, with slots free; the uploads of other
    files behind it do not wait for it."""

    async def scenario() -> None:
        slots = UploadSlots(4, wait=PATIENCE)
        entered, release = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(hold_file(slots, ("t", 0), entered, release))
        await entered.wait()
        again_in, again_release = asyncio.Event(), asyncio.Event()
        again = asyncio.create_task(hold_file(slots, ("t", 0), again_in, again_release))
        await until(lambda: slots.waiting == 1, "the same file's upload to wait")
        other_in, other_release = asyncio.Event(), asyncio.Event()
        other = asyncio.create_task(hold_file(slots, ("t", 1), other_in, other_release))
        await other_in.wait()  # past the waiter: its file is free
        assert not again_in.is_set() and (slots.taken, slots.waiting) == (2, 1)
        release.set()
        await again_in.wait()
        await first
        assert (slots.taken, slots.waiting) == (2, 0)
        again_release.set()
        other_release.set()
        await asyncio.gather(again, other)
        assert (slots.taken, slots.waiting) == (0, 0)

    asyncio.run(scenario())


def test_one_traceset_holds_at_most_half_the_slots() -> None:
    """Past its share a traceset's upload waits; another traceset's takes a free slot
    past it, and the share's next slot goes to the waiter."""

    async def scenario() -> None:
        slots = UploadSlots(4, wait=PATIENCE)
        assert slots.per_traceset == 2
        releases = [asyncio.Event() for _ in range(4)]
        entered = [asyncio.Event() for _ in range(4)]
        files = [("a", 0), ("a", 1), ("a", 2), ("b", 0)]
        tasks = []
        for number, file in enumerate(files[:3]):
            tasks.append(
                asyncio.create_task(hold_file(slots, file, entered[number], releases[number]))
            )
        await entered[0].wait()
        await entered[1].wait()
        await until(lambda: slots.waiting == 1, "the traceset's third upload to wait")
        tasks.append(asyncio.create_task(hold_file(slots, files[3], entered[3], releases[3])))
        await entered[3].wait()
        assert not entered[2].is_set() and (slots.taken, slots.waiting) == (3, 1)
        releases[0].set()
        await entered[2].wait()
        assert (slots.taken, slots.waiting) == (3, 0)
        for release in releases:
            release.set()
        await asyncio.gather(*tasks)
        assert (slots.taken, slots.waiting) == (0, 0)

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("held", "wanted", "why"),
    [
        ([("t", 0)], ("t", 0), "An upload of this file is in progress already"),
        ([("t", 0), ("t", 1)], ("t", 2), "This traceset's uploads hold 2 of the service's 4"),
    ],
    ids=["same file", "traceset's share"],
)
def test_a_refusal_past_a_share_says_which(
    held: list[tuple[str, int]], wanted: tuple[str, int], why: str
) -> None:
    async def scenario() -> None:
        slots = UploadSlots(4, wait=0.05)
        release = asyncio.Event()
        holders = []
        for file in held:
            entered = asyncio.Event()
            holders.append(asyncio.create_task(hold_file(slots, file, entered, release)))
            await entered.wait()
        with pytest.raises(ServiceUnavailable) as refused:
            async with slots.slot(*wanted):
                pytest.fail("the share was full")
        assert why in refused.value.detail
        assert "none ended within 0.05 seconds" in refused.value.detail
        release.set()
        await asyncio.gather(*holders)
        assert (slots.taken, slots.waiting) == (0, 0)

    asyncio.run(scenario())


@contextlib.asynccontextmanager
async def one_slot_service(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, UploadSlots]]:
    """The service in this process, one upload at a time and a long wait; a client of it."""
    token = secrets.token_hex(16)
    env = {
        "TRACESETS_BOOTSTRAP_TOKEN": token,
        "TRACESETS_MAX_CONCURRENT_UPLOADS": "1",
        "TRACESETS_UPLOAD_WAIT": "300",
    }
    app = create_app(Settings.from_env(env, data_dir=tmp_path))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://127.0.0.1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=PATIENCE,
        ) as api,
    ):
        yield api, app.state.upload_slots


def test_the_service_holds_a_put_past_the_bound_and_takes_it_when_a_slot_frees(
    tmp_path: Path,
) -> None:
    """Over HTTP (the app in this process): the second PUT waits, unread, then succeeds."""
    files = {"rank0.json": secrets.token_bytes(1000), "rank1.json": secrets.token_bytes(1000)}

    async def scenario() -> None:
        async with one_slot_service(tmp_path) as (api, slots):
            body = {
                "name": "two ranks",
                "files": [spec(name, data) for name, data in files.items()],
                "workloadMetadata": RANKS_8,
            }
            created = await api.post("/api/v1/tracesets/upload-url", json=body)
            assert created.status_code == 201, created.text
            first, second = created.json()["uploads"]
            release = asyncio.Event()

            async def stalls_midway() -> AsyncIterator[bytes]:
                yield files["rank0.json"][:10]
                await release.wait()
                yield files["rank0.json"][10:]

            async def put(
                target: dict[str, Any], content: bytes | AsyncIterator[bytes]
            ) -> httpx.Response:
                url = urlsplit(target["url"])
                return await api.put(
                    f"{url.path}?{url.query}", content=content, headers=target["headers"]
                )

            holder = asyncio.create_task(put(first, stalls_midway()))
            await until(lambda: slots.taken == 1, "the first upload to take the slot")
            waiter = asyncio.create_task(put(second, files["rank1.json"]))
            await until(lambda: slots.waiting == 1, "the second upload to wait")
            assert not waiter.done()
            release.set()
            answers = [await holder, await waiter]
            assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
            traceset = created.json()["tracesetId"]
            completed = await api.post(f"/api/v1/tracesets/{traceset}/complete")
            assert completed.status_code == 200, completed.text
            assert (slots.taken, slots.waiting) == (0, 0)

    asyncio.run(scenario())


def test_a_put_to_an_altered_url_is_refused_at_once_not_queued(tmp_path: Path) -> None:
    """The signature is checked before the wait: a forged URL never takes a waiter's place."""
    data = secrets.token_bytes(1000)

    async def scenario() -> None:
        async with one_slot_service(tmp_path) as (api, slots):
            body = {
                "name": "one rank",
                "files": [spec("rank0.json", data)],
                "workloadMetadata": RANKS_8,
            }
            created = await api.post("/api/v1/tracesets/upload-url", json=body)
            assert created.status_code == 201, created.text
            target = created.json()["uploads"][0]
            url = urlsplit(target["url"])
            release = asyncio.Event()

            async def stalls_midway() -> AsyncIterator[bytes]:
                yield data[:10]
                await release.wait()
                yield data[10:]

            holder = asyncio.create_task(
                api.put(
                    f"{url.path}?{url.query}", content=stalls_midway(), headers=target["headers"]
                )
            )
            await until(lambda: slots.taken == 1, "the upload to take the only slot")
            forged = url.query.replace("signature=", "signature=0")
            refused = await api.put(f"{url.path}?{forged}", content=data, headers=target["headers"])
            assert refused.status_code == 403, refused.text
            assert refused.json()["errors"][0]["member"] == "signature"
            assert (slots.taken, slots.waiting) == (1, 0)  # answered while the slot was held
            release.set()
            assert (await holder).status_code == 200

    asyncio.run(scenario())
