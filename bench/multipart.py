"""Upload MB/s of a large file to S3: the Python client's multipart upload against one PUT.

An S3 server on loopback (moto, as scripts/with-scaled-services starts it; or the one
that script already started, found by AWS_ENDPOINT_URL and TRACESETS_TEST_STORAGE_URL)
and ``tracesets serve`` (one uvicorn worker) storing into it, with the service's
multipart threshold and part size at their defaults (64 MiB). One file of random bytes,
1 GiB (256 MiB with --quick). Each run, alternating:

- **client**: ``tracesets.Client(...).upload([path], name=…, workload_metadata=…)``, in
  this process, timed from the call to its return: sha256 of the file and of each part,
  upload-url (declaring the parts' digests; the answer has ``parts``, each URL signing
  its digest), the part PUTs (8 at a time, the client's default), complete (S3 joins
  the parts; the service compares S3's composite checksum with the declared parts');
- **curl parts**: parts PUT by one ``curl --parallel --parallel-max 8`` from part files
  cut beforehand, for a file declared with its sha256 only (no part digests); upload-url
  and complete are outside the timing; complete reads the object back to hash it;
- **single PUT**: one presigned ``put_object`` URL made with boto3, the whole file sent
  by ``curl -T``, straight to the bucket, no service involved.

The script prints the median MB/s of each (1 MB = 10⁶ bytes) and the ratios to the
single PUT; for the client also the time of each phase, so what the client adds and
what the S3 server costs can be told apart. For each complete it prints the bytes the S3
server sent while it ran: the service reaches S3 through a counting TCP relay
(``tests/relay.py``), so a complete that reads the object back shows its size. The
presigned URLs point at the relay too, so the PUTs pass through it (one more copy on
loopback).
``--client-only`` runs only the client's uploads (for large files).

    .venv/bin/python bench/multipart.py [--quick] [--size-mib N] [--runs N] [--client-only]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import boto3
import httpx
from botocore.config import Config

# The counting relay lives with the tests, which use it too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from put_upload import curl_put, make_file
from servers import LOOPBACK, VENV_BIN, debian_command, free_port, running, service_argv

from tests.relay import CountingRelay
from tracesets import Client

TOKEN: Final = "bench-token-" + "3" * 24
MB: Final = 1_000_000
MIB: Final = 1024 * 1024
PARALLEL: Final = 8  # the client's default concurrency
METADATA: Final = {"parallelism": {"dp": 8, "tp": 8}, "shape": {"rankCount": 64}}


@dataclass(frozen=True, slots=True)
class Bucket:
    name: str
    prefix: str

    @property
    def storage_url(self) -> str:
        return f"s3://{self.name}/{self.prefix}"


def s3_client() -> Any:
    return boto3.client(
        "s3", config=Config(signature_version="s3v4", s3={"addressing_style": "path"})
    )


@contextmanager
def s3_server(workdir: Path) -> Iterator[Bucket]:
    """The S3 server scripts/with-scaled-services started, else a moto of our own."""
    prefix = f"bench-multipart-{os.getpid()}"
    shared = os.environ.get("TRACESETS_TEST_STORAGE_URL", "")
    if os.environ.get("AWS_ENDPOINT_URL") and shared.startswith("s3://"):
        yield Bucket(shared.removeprefix("s3://").split("/", 1)[0], prefix)
        return
    port = free_port()
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "tracesets-bench",
            "AWS_SECRET_ACCESS_KEY": "tracesets-bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://{LOOPBACK}:{port}",
        }
    )
    with running(
        [str(VENV_BIN / "moto_server"), "-H", LOOPBACK, "-p", str(port)],
        ready_url=f"http://{LOOPBACK}:{port}/",
        log=workdir / "moto.log",
    ):
        s3_client().create_bucket(Bucket="tracesets-bench")
        yield Bucket("tracesets-bench", prefix)


class Timeline(httpx.HTTPTransport):
    """The client's own transport (same pool size), noting when each request starts and ends."""

    def __init__(self) -> None:
        super().__init__(limits=httpx.Limits(max_connections=PARALLEL + 2))
        self.requests: list[tuple[str, str, float, float]] = []
        self._lock = threading.Lock()
        self.relay: CountingRelay | None = None
        self.complete_read: list[int] = []  # bytes S3 sent during each complete

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        relay = self.relay if request.url.path.endswith("/complete") else None
        before = relay.received if relay else 0
        started = time.perf_counter()
        response = super().handle_request(request)
        if relay:
            self.complete_read.append(relay.received - before)
        response.read()  # the answers are small; reading here puts their end in the timing
        with self._lock:
            self.requests.append((request.method, request.url.path, started, time.perf_counter()))
        return response

    def phases(self, started: float, done: float) -> dict[str, float]:
        """Seconds of each step of an upload: sha256, upload-url, PUTs, complete, and all."""
        _, _, create_start, create_end = next(r for r in self.requests if r[0] == "POST")
        puts = [r for r in self.requests if r[0] == "PUT"]
        complete = next(r for r in self.requests if r[1].endswith("/complete"))
        return {
            "sha256": create_start - started,
            "upload-url": create_end - create_start,
            "PUTs": max(r[3] for r in puts) - min(r[2] for r in puts),
            "complete": complete[3] - complete[2],
            "total": done - started,
        }

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()


class Runs:
    """The three ways of sending ``source``, each leaving the bucket as it found it."""

    def __init__(
        self, base: str, source: Path, sha256: str, parts_dir: Path, relay: CountingRelay
    ) -> None:
        self.source = source
        self.size = source.stat().st_size
        self.sha256 = sha256
        self.parts_dir = parts_dir
        self.timeline = Timeline()
        self.timeline.relay = relay
        self.client = Client(base, TOKEN, timeout=600, transport=self.timeline)
        self.base = base
        self.s3 = s3_client()

    def checked(self, traceset_id: str) -> str:
        """What the service recorded as vouching for the file's bytes at complete."""
        answer = httpx.get(
            f"{self.base}/api/v1/tracesets/{traceset_id}",
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=60,
        ).json()
        checked = answer["files"][0]["checked"]
        return f"checked by {checked['by']} {checked['checksum']}" if checked else "not checked"

    def plan(self) -> tuple[str, list[dict[str, Any]], int]:
        """A fresh upload-url answer's traceset id, parts and part size (cut the part files)."""
        created = self.client.request_upload_urls(
            name="bench curl parts",
            files=[
                {"name": "big.bin", "size": self.size, "role": "primary", "sha256": self.sha256}
            ],
            workload_metadata=METADATA,
        )
        target = created.uploads[0]
        if not target.parts or target.partSize is None:
            raise RuntimeError("the upload-url answer has no parts: is the service on S3?")
        parts = [{"number": p.partNumber, "url": p.url, "size": p.size} for p in target.parts]
        return created.tracesetId, parts, target.partSize

    def cut_parts(self, part_size: int) -> None:
        with self.source.open("rb") as whole:
            for number in range(1, math.ceil(self.size / part_size) + 1):
                (self.parts_dir / f"part-{number}").write_bytes(whole.read(part_size))

    def client_upload(self) -> dict[str, float]:
        """Seconds of the whole ``upload()`` call ("total") and of each of its steps."""
        self.timeline.clear()
        started = time.perf_counter()
        traceset = self.client.upload(
            [self.source], name="bench multipart", workload_metadata=METADATA
        )
        phases = self.timeline.phases(started, time.perf_counter())
        phases["complete read"] = self.timeline.complete_read[-1]
        if traceset.status != "ready":
            raise RuntimeError(f"the client's traceset is {traceset.status}, not ready")
        print(f"    {self.checked(traceset.id)}", flush=True)
        self.client.delete_traceset(traceset.id)
        return phases

    def curl_parts(self, curl: str) -> tuple[float, float, int]:
        """Seconds of the PUTs, and of the complete call that follows (not in the timing);
        the bytes the service read during that complete."""
        traceset_id, parts, _ = self.plan()
        argv = [curl, "-sS", "--fail", "--parallel", "--parallel-max", str(PARALLEL)]
        argv += ["-H", "Expect:"]
        for part in parts:
            argv += ["-T", str(self.parts_dir / f"part-{part['number']}"), "-o", "/dev/null"]
            argv.append(part["url"])
        started = time.perf_counter()
        subprocess.run(argv, check=True, timeout=1800, capture_output=True)
        took = time.perf_counter() - started
        started = time.perf_counter()
        if self.client.complete(traceset_id).status != "ready":
            raise RuntimeError("the service did not complete curl's traceset")
        completed = time.perf_counter() - started
        print(f"    {self.checked(traceset_id)}", flush=True)
        self.client.delete_traceset(traceset_id)
        return took, completed, self.timeline.complete_read[-1]

    def single_put(self, curl: str, bucket: Bucket) -> tuple[float, float]:
        """Seconds of the PUT, and of reading the object back with its sha256 (not timed in).

        The reading back is what the service's complete does with a multipart object.
        """
        key = f"{bucket.prefix}/single/big.bin"
        url = self.s3.generate_presigned_url(
            "put_object", Params={"Bucket": bucket.name, "Key": key}, ExpiresIn=3600
        )
        took = curl_put(curl, self.source, url)
        stored = self.s3.head_object(Bucket=bucket.name, Key=key)["ContentLength"]
        if stored != self.size:
            raise RuntimeError(f"the bucket holds {stored} bytes, not {self.size}")
        started = time.perf_counter()
        digest = hashlib.sha256()
        for chunk in self.s3.get_object(Bucket=bucket.name, Key=key)["Body"].iter_chunks(8 * MIB):
            digest.update(chunk)
        read_back = time.perf_counter() - started
        if digest.hexdigest() != self.sha256:
            raise RuntimeError("the bucket holds other bytes than were sent")
        self.s3.delete_object(Bucket=bucket.name, Key=key)
        return took, read_back


def rate(size: int, seconds: float) -> float:
    return size / seconds / MB


@dataclass
class Figures:
    """Seconds of each way, run after run; of the client's part PUTs and completes; bytes
    the service read during each complete, by way."""

    seconds: dict[str, list[float]]
    put_phase: list[float]
    complete: dict[str, list[float]]
    complete_read: dict[str, list[int]]


def measure(bench: Runs, curl: str, bucket: Bucket, runs: int, client_only: bool) -> Figures:
    """Each way, run after run, alternating."""
    size = bench.size
    ways = ["client"] if client_only else ["client", "curl parts", "single PUT"]
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    put_phase: list[float] = []
    complete: dict[str, list[float]] = {"client": [], "curl parts": []}
    complete_read: dict[str, list[int]] = {"client": [], "curl parts": []}
    for run in range(runs + 1):
        label = f"run {run}" if run else "warm-up"
        for name, taken in seconds.items():
            os.sync()
            if name == "client":
                phases = bench.client_upload()
                took = phases.pop("total")
                read = int(phases.pop("complete read"))
                detail = "  " + ", ".join(f"{step} {t:.2f} s" for step, t in phases.items())
                detail += f" (S3 sent {read:,} B)"
                if run:
                    put_phase.append(phases["PUTs"])
                    complete["client"].append(phases["complete"])
                    complete_read["client"].append(read)
            elif name == "curl parts":
                took, completed, read = bench.curl_parts(curl)
                detail = f"  then complete {completed:.2f} s (S3 sent {read:,} B)"
                if run:
                    complete["curl parts"].append(completed)
                    complete_read["curl parts"].append(read)
            else:
                took, read_back = bench.single_put(curl, bucket)
                detail = f"  then GET + sha256 {read_back:.2f} s"
            print(
                f"  {label:<7}  {name:<10}  {rate(size, took):8.1f} MB/s  ({took:6.2f} s){detail}",
                flush=True,
            )
            if run:
                taken.append(took)
    return Figures(seconds, put_phase, complete, complete_read)


def main() -> None:
    parser = argparse.ArgumentParser(description="Client multipart upload vs one PUT, to S3")
    parser.add_argument("--quick", action="store_true", help="256 MiB, 1 run (default 1 GiB, 3)")
    parser.add_argument("--size-mib", type=int, help="file size in MiB")
    parser.add_argument("--runs", type=int, help="runs of each (median is kept)")
    parser.add_argument("--tmp-dir", type=Path, help="where the file and the service's data go")
    parser.add_argument("--client-only", action="store_true", help="only the client's uploads")
    args = parser.parse_args()
    size = (args.size_mib or (256 if args.quick else 1024)) * MIB
    runs: int = args.runs or (1 if args.quick else 3)
    curl = shutil.which("curl") or debian_command("curl", "curl")
    if curl is None:
        raise SystemExit("curl is needed")
    # The service's own defaults (64 MiB), whatever scripts/with-scaled-services exported.
    for name in ("TRACESETS_MULTIPART_THRESHOLD", "TRACESETS_PART_SIZE"):
        os.environ.pop(name, None)

    with (
        tempfile.TemporaryDirectory(prefix="tracesets-bench-", dir=args.tmp_dir) as tmp,
        ExitStack() as stack,
    ):
        workdir = Path(tmp)
        bucket = stack.enter_context(s3_server(workdir))
        source = workdir / "big.bin"
        sha256 = make_file(source, size)
        port = free_port()
        base = f"http://{LOOPBACK}:{port}"
        relay = stack.enter_context(CountingRelay(os.environ["AWS_ENDPOINT_URL"]))
        stack.enter_context(
            running(
                service_argv(port, workdir / "service"),
                ready_url=f"{base}/healthz",
                log=workdir / "service.log",
                env={
                    "TRACESETS_BOOTSTRAP_TOKEN": TOKEN,
                    "TRACESETS_STORAGE_URL": bucket.storage_url,
                    "AWS_ENDPOINT_URL": relay.url,
                    "DATABASE_URL": f"sqlite:///{workdir / 'service' / 'tracesets.db'}",
                },
            )
        )
        parts_dir = workdir / "parts"
        parts_dir.mkdir()
        bench = Runs(base, source, sha256, parts_dir, relay)
        stack.callback(bench.client.close)
        traceset_id, parts, part_size = bench.plan()
        bench.client.delete_traceset(traceset_id)
        if not args.client_only:
            bench.cut_parts(part_size)
        with urllib.request.urlopen(os.environ["AWS_ENDPOINT_URL"], timeout=10) as answer:
            server = answer.headers.get("Server", "?")
        print(
            f"multipart: {size / MIB:,.0f} MiB of random bytes; S3 at "
            f"{os.environ['AWS_ENDPOINT_URL']} ({server}); upload-url answered "
            f"{len(parts)} parts of {part_size / MIB:g} MiB; {PARALLEL} PUTs at a time; "
            f"{runs} runs each after a warm-up; {os.cpu_count()} CPUs; Python "
            f"{sys.version.split()[0]}",
            flush=True,
        )
        figures = measure(bench, curl, bucket, runs, args.client_only)

    for way, label in (("client", "declared parts"), ("curl parts", "sha256 only   ")):
        if figures.complete[way]:
            print(
                f"complete, {label}: {statistics.median(figures.complete[way]):6.2f} s "
                f"(median), S3 sent the service {max(figures.complete_read[way]):,} B at most"
            )
    client = rate(size, statistics.median(figures.seconds["client"]))
    puts = rate(size, statistics.median(figures.put_phase))
    print(f"client upload(), start to return         {client:8.1f} MB/s (median)")
    print(f"client upload(), its part PUTs only      {puts:8.1f} MB/s (median)")
    if args.client_only:
        return
    single = rate(size, statistics.median(figures.seconds["single PUT"]))
    parallel = rate(size, statistics.median(figures.seconds["curl parts"]))
    print(f"single PUT (curl, presigned put_object)  {single:8.1f} MB/s (median)")
    print(f"curl --parallel of the same parts        {parallel:8.1f} MB/s (median)")
    print(f"ratio client/single PUT: {client / single:.2f} (part PUTs only: {puts / single:.2f})")
    print(f"ratio curl parts/single PUT: {parallel / single:.2f}")


if __name__ == "__main__":
    main()
