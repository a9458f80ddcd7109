"""PUT upload MB/s of a large file: the service's signed URL against nginx's WebDAV PUT.

One file of random bytes (1 GiB; 128 MiB with --quick) in a temporary folder; nginx
(Debian's, installed if missing, run with a config of its own on loopback) and the
service (``tracesets serve``, one uvicorn worker) both store into that same folder's
disk. curl sends the file to each, alternating and taking turns at going first; before
each PUT the last copy is deleted and the disk synced, so no run pays for another's
writeback. A first, unmeasured run of each warms up the page cache and the processes.
Each run prints how busy the cores were: on a shared machine that, not the disk, is
what moves a run most.

The service checks the declared sha256 and fsyncs the file before it answers; nginx
does neither (it writes a temporary file and renames it). The service's peak RSS is
its process's VmHWM after all the uploads.

nginx's runs spread widely (on a virtual machine whose freed memory goes back to the
host, the kernel's time allocating page cache for its writes moves with how long the
memory was free: bench/README), so besides the ratio of the medians the service's median
is also given against nginx's fastest run.

    .venv/bin/python bench/put_upload.py [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Final

from servers import LOOPBACK, debian_command, free_port, peak_rss_bytes, running, service_argv

TOKEN: Final = "bench-token-" + "1" * 24
MB: Final = 1_000_000
CHUNK: Final = 4 * 1024 * 1024

NGINX_CONF: Final = """\
{user}worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    server {{
        listen {host}:{port};
        root {root}/files;
        location / {{
            dav_methods PUT DELETE;
            create_full_put_path on;
            client_max_body_size 0;{body_buffer}
        }}
    }}
}}
"""


def make_file(path: Path, size: int) -> str:
    """Random bytes, so no layer can compress or deduplicate them; their sha256."""
    digest = hashlib.sha256()
    with path.open("wb") as out:
        left = size
        while left:
            block = os.urandom(min(CHUNK, left))
            digest.update(block)
            out.write(block)
            left -= len(block)
        os.fsync(out.fileno())
    return digest.hexdigest()


def curl_put(curl: str, source: Path, url: str) -> float:
    """Seconds curl took to PUT ``source`` and get a 2xx answer."""
    # No "Expect: 100-continue" round trip; -w prints what curl itself measured.
    argv = [curl, "-sS", "-o", "/dev/null", "-H", "Expect:", "-w", "%{http_code} %{time_total}"]
    argv += ["-T", str(source), url]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=600)
    status, seconds = done.stdout.split()
    if not status.startswith("2"):
        raise RuntimeError(f"PUT {url} answered {status}")
    return float(seconds)


def call(method: str, url: str, body: Any | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=120) as answer:
        text = answer.read()
        return json.loads(text) if text else None


class Nginx:
    def __init__(self, workdir: Path, body_buffer: str | None) -> None:
        found = debian_command("nginx", "nginx")
        if found is None:
            raise SystemExit("nginx is not installed and could not be installed with apt-get")
        self.binary = found
        self.root = workdir / "nginx"
        self.files = self.root / "files"
        for folder in ("files", "body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.root / folder).mkdir(parents=True)
        self.port = free_port()
        self.conf = self.root / "nginx.conf"
        tuning = f"\n            client_body_buffer_size {body_buffer};" if body_buffer else ""
        user = "user root;\n" if os.geteuid() == 0 else ""
        self.conf.write_text(
            NGINX_CONF.format(
                user=user, root=self.root, host=LOOPBACK, port=self.port, body_buffer=tuning
            )
        )
        version = subprocess.run([found, "-v"], capture_output=True, text=True, check=False)
        self.version = version.stderr.strip().removeprefix("nginx version: ")
        self.body_buffer = body_buffer or "16k (nginx's default)"
        self.url = f"http://{LOOPBACK}:{self.port}/upload.bin"

    def pids(self) -> list[int]:
        """nginx's master process and its workers."""
        master = int((self.root / "nginx.pid").read_text())
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        return [master, *map(int, children)]

    def argv(self) -> list[str]:
        # -e: the error log from the very start, before the config names ours.
        return [self.binary, "-p", f"{self.root}/", "-c", str(self.conf), "-e", "error.log"]

    def put(self, curl: str, source: Path) -> tuple[float, float]:
        """Seconds of the PUT, and of an fsync of the file nginx stored right after it."""
        seconds = curl_put(curl, source, self.url)
        stored = self.files / "upload.bin"
        if stored.stat().st_size != source.stat().st_size:
            raise RuntimeError("nginx stored a file of the wrong size")
        start = time.perf_counter()
        fd = os.open(stored, os.O_RDONLY)
        try:
            os.fsync(fd)  # what the service does before it answers
        finally:
            os.close(fd)
        synced = time.perf_counter() - start
        stored.unlink()
        return seconds, synced


class Service:
    def __init__(self, workdir: Path) -> None:
        self.data_dir = workdir / "service"
        self.port = free_port()
        self.base = f"http://{LOOPBACK}:{self.port}"

    def create(self, files: list[tuple[str, Path, str]]) -> tuple[str, list[str]]:
        """A pending traceset of ``files`` (name, path, sha256); its URL and upload URLs."""
        created = call(
            "POST",
            f"{self.base}/api/v1/tracesets/upload-url",
            {
                "name": "bench upload",
                "files": [
                    {"name": name, "size": path.stat().st_size, "role": "primary", "sha256": sha}
                    for name, path, sha in files
                ],
                "workloadMetadata": {"shape": {"rankCount": 8}},
            },
        )
        urls = [upload["url"] for upload in created["uploads"]]
        return f"{self.base}/api/v1/tracesets/{created['tracesetId']}", urls

    def finish(self, traceset: str) -> None:
        if call("POST", f"{traceset}/complete")["status"] != "ready":
            raise RuntimeError("the service did not complete the traceset")
        call("DELETE", traceset)

    def put(self, curl: str, source: Path, sha256: str) -> float:
        traceset, [url] = self.create([("upload.bin", source, sha256)])
        seconds = curl_put(curl, source, url)
        self.finish(traceset)
        return seconds

    def put_many(self, curl: str, sources: list[tuple[str, Path, str]], parallel: int) -> float:
        """One traceset of every file in ``sources``, ``parallel`` PUTs at a time (one curl)."""
        traceset, urls = self.create(sources)
        argv = [curl, "-sS", "--fail", "--parallel", "--parallel-max", str(parallel)]
        argv += ["-H", "Expect:", "-o", "/dev/null"]
        for (_, path, _), url in zip(sources, urls, strict=True):
            argv += ["-T", str(path), url, "-o", "/dev/null"]
        start = time.perf_counter()
        subprocess.run(argv, check=True, timeout=900, capture_output=True)
        seconds = time.perf_counter() - start
        self.finish(traceset)
        return seconds


def user_and_system_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU seconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    clock = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / clock, int(fields[12]) / clock


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used so far."""
    return sum(user_and_system_seconds(pid))


def kernel_seconds(pids: list[int]) -> float:
    """System CPU seconds the processes have used so far."""
    return sum(user_and_system_seconds(pid)[1] for pid in pids)


def machine_seconds() -> tuple[float, float]:
    """CPU seconds so far, all cores: processes' time (user, nice, system; not interrupts,
    which loopback's networking costs both sides alike), and the total (from /proc/stat)."""
    ticks = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    clock = os.sysconf("SC_CLK_TCK")
    return (ticks[0] + ticks[1] + ticks[2]) / clock, sum(ticks[:8]) / clock


def kernel_threads_seconds() -> float:
    """CPU seconds of the kernel's threads (writeback, the journal): they work for whichever
    server wrote through the page cache, so they are not counted as the others' share."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if fields[1] == "2" or entry.name == "2":  # kthreadd and its children
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


class Interference:
    """The share of the cores that processes other than the bench's took during a PUT.

    Everything the machine ran but the servers, curl (this script's child), this script
    (its fsync of nginx's file writes the file back), the kernel's threads and interrupts:
    other users' work, which slows either side at random.
    """

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids

    def seconds(self) -> tuple[float, float]:
        ours = sum(map(cpu_seconds, self.pids)) + kernel_threads_seconds() + time.process_time()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy, total = machine_seconds()
        return busy - ours - children.ru_utime - children.ru_stime, total

    @contextmanager
    def measured(self) -> Iterator[list[float]]:
        """Yields a list that holds, once the block ends, the others' share (0 to 1)."""
        share: list[float] = []
        others, total = self.seconds()
        yield share
        others_after, total_after = self.seconds()
        share.append(max(0.0, others_after - others) / (total_after - total))


def order_of(run: int) -> tuple[str, str]:
    """nginx first in odd runs, the service first in even ones: neither side always runs
    right after the other's writes and deletes."""
    return ("nginx", "service") if run % 2 else ("service", "nginx")


def alternate(
    curl: str,
    nginx: Nginx,
    service: Service,
    source: Path,
    sha256: str,
    runs: int,
    interference: Interference,
    pid: int,
) -> dict[str, list[float]]:
    """MB/s of each run of each server, taking turns, after one unmeasured run each.

    Each PUT starts after ``sync`` (no dirty pages; the blocks of the copy deleted before
    it freed and discarded) with the file to send in the page cache. Beside each run: the
    service's CPU seconds, nginx's seconds in the kernel (its writes into the page cache,
    where its spread comes from), and the share of the cores other processes took, which
    slows either side at random on a shared machine.
    """
    size = source.stat().st_size
    rates: dict[str, list[float]] = {"nginx": [], "nginx+fsync": [], "service": []}
    rates["service CPU s"] = []
    for run in range(runs + 1):
        label = f"run {run}" if run else "warm-up"
        for name in order_of(run):
            os.sync()  # each run starts with no dirty pages of the run before
            with interference.measured() as others:
                if name == "nginx":
                    kernel = kernel_seconds(nginx.pids())
                    took, synced = nginx.put(curl, source)
                    kernel = kernel_seconds(nginx.pids()) - kernel
                else:
                    cpu = cpu_seconds(pid)
                    took = service.put(curl, source, sha256)
                    cpu = cpu_seconds(pid) - cpu
            if name == "nginx":
                line = (
                    f"{size / took / MB:8.1f} MB/s  ({took:.2f} s, {kernel:.2f} s of it in the "
                    f"kernel; then fsync {synced:.2f} s)"
                )
                if run:
                    rates["nginx"].append(size / took / MB)
                    rates["nginx+fsync"].append(size / (took + synced) / MB)
            else:
                line = f"{size / took / MB:8.1f} MB/s  ({took:.2f} s; {cpu:.2f} s of CPU)"
                if run:
                    rates["service"].append(size / took / MB)
                    rates["service CPU s"].append(cpu)
            line += f"  others took {100 * others[0]:3.0f} % of the cores"
            print(f"  {label:<7}  {name:<7}  {line}", flush=True)
    return rates


def spread(values: list[float]) -> str:
    return f"{min(values):.0f} to {max(values):.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description="PUT upload MB/s: service vs nginx WebDAV")
    parser.add_argument("--quick", action="store_true", help="128 MiB instead of 1 GiB")
    parser.add_argument("--size-mib", type=int, help="file size in MiB")
    parser.add_argument("--runs", type=int, default=5, help="runs per server (median is kept)")
    parser.add_argument("--tmp-dir", type=Path, help="where the file and uploads go")
    parser.add_argument(
        "--nginx-body-buffer",
        metavar="SIZE",
        help="nginx's client_body_buffer_size (default: nginx's own, 16k)",
    )
    parser.add_argument("--many-files", type=int, default=64, help="files of the parallel upload")
    parser.add_argument("--many-parallel", type=int, default=8, help="PUTs at once in it")
    parser.add_argument("--many-size-mib", type=int, help="size of each (default 16, quick 2)")
    args = parser.parse_args()
    size = (args.size_mib or (128 if args.quick else 1024)) * 1024 * 1024
    many_size = (args.many_size_mib or (2 if args.quick else 16)) * 1024 * 1024
    curl = shutil.which("curl") or debian_command("curl", "curl")
    if curl is None:
        raise SystemExit("curl is needed")

    with (
        tempfile.TemporaryDirectory(prefix="tracesets-bench-", dir=args.tmp_dir) as tmp,
        ExitStack() as stack,
    ):
        workdir = Path(tmp)
        source = workdir / "source.bin"
        sha256 = make_file(source, size)
        many = []
        for i in range(args.many_files):
            path = workdir / f"many-{i}.bin"
            many.append((f"rank{i}.bin", path, make_file(path, many_size)))
        nginx = Nginx(workdir, args.nginx_body_buffer)
        print(
            f"put-upload: {size / 2**20:,.0f} MiB of random bytes in {workdir}, curl, "
            f"{args.runs} runs each after a warm-up, alternating; {nginx.version}, "
            f"client_body_buffer_size {nginx.body_buffer}",
            flush=True,
        )
        stack.enter_context(
            running(
                nginx.argv(),
                ready_url=f"http://{LOOPBACK}:{nginx.port}/",
                log=nginx.root / "out.log",
            )
        )
        service = Service(workdir)
        process = stack.enter_context(
            running(
                service_argv(service.port, service.data_dir),
                ready_url=f"{service.base}/healthz",
                log=workdir / "service.log",
                env={"TRACESETS_BOOTSTRAP_TOKEN": TOKEN},
            )
        )
        started_rss = peak_rss_bytes(process.pid)
        os.sync()
        took = service.put_many(curl, many, args.many_parallel)
        many_rss = peak_rss_bytes(process.pid)
        print(
            f"  {args.many_files} files of {many_size / 2**20:g} MiB, {args.many_parallel} PUTs "
            f"at once: {args.many_files * many_size / took / MB:.0f} MB/s ({took:.2f} s); "
            f"service peak RSS {many_rss / MB:.1f} MB",
            flush=True,
        )
        servers = [process.pid, *nginx.pids()]
        rates = alternate(
            curl, nginx, service, source, sha256, args.runs, Interference(servers), process.pid
        )
        peak_rss = peak_rss_bytes(process.pid)

    median = {name: statistics.median(values) for name, values in rates.items()}
    print(f"nginx        {median['nginx']:8.1f} MB/s (median; runs {spread(rates['nginx'])})")
    print(
        f"nginx+fsync  {median['nginx+fsync']:8.1f} MB/s (median; runs "
        f"{spread(rates['nginx+fsync'])}; the PUT, then an fsync of the file)"
    )
    print(
        f"service      {median['service']:8.1f} MB/s (median; runs {spread(rates['service'])}; "
        "sha256 checked, fsync before the answer)"
    )
    cpu = rates["service CPU s"]
    print(
        f"service CPU  {statistics.median(cpu) * 2**30 / size:8.2f} s a GiB (median; runs "
        f"{min(cpu) * 2**30 / size:.2f} to {max(cpu) * 2**30 / size:.2f}; PUT, complete, DELETE)"
    )
    print(f"ratio service/nginx: {median['service'] / median['nginx']:.2f}  (target >= 0.8)")
    print(
        f"ratio service/nginx's fastest run: {median['service'] / max(rates['nginx']):.2f}  "
        "(the service's median against nginx at its best)"
    )
    print(f"ratio service/(nginx+fsync): {median['service'] / median['nginx+fsync']:.2f}")
    print(
        f"service peak RSS: {peak_rss / MB:.1f} MB = {peak_rss / 2**20:.1f} MiB  "
        f"(after start-up {started_rss / MB:.1f} MB; after the {args.many_files}-file upload "
        f"{many_rss / MB:.1f} MB; target < 100 MB)"
    )


if __name__ == "__main__":
    main()
