"""PUT upload MB/s of a large file: the service's signed URL against nginx's WebDAV PUT.

One file of random bytes (1 GiB; 128 MiB with --quick) in a temporary folder; nginx
(Debian's, installed if missing, run with a config of its own on loopback) and the
service (``tracesets serve``, one uvicorn worker) both store into that same folder's
disk. curl sends the file to each, alternating, several times; between runs the
uploaded copy is deleted and the disk synced, so no run pays for another's writeback.
A first, unmeasured run of each warms up the page cache and the processes.

The service checks the declared sha256 and fsyncs the file before it answers; nginx
does neither (it writes a temporary file and renames it). The service's peak RSS is
its process's VmHWM after all the uploads.

    .venv/bin/python bench/put_upload.py [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import urllib.request
from contextlib import ExitStack
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

    def argv(self) -> list[str]:
        # -e: the error log from the very start, before the config names ours.
        return [self.binary, "-p", f"{self.root}/", "-c", str(self.conf), "-e", "error.log"]

    def put(self, curl: str, source: Path) -> float:
        seconds = curl_put(curl, source, self.url)
        if (self.files / "upload.bin").stat().st_size != source.stat().st_size:
            raise RuntimeError("nginx stored a file of the wrong size")
        (self.files / "upload.bin").unlink()
        return seconds


class Service:
    def __init__(self, workdir: Path) -> None:
        self.data_dir = workdir / "service"
        self.port = free_port()
        self.base = f"http://{LOOPBACK}:{self.port}"

    def put(self, curl: str, source: Path, sha256: str) -> float:
        created = call(
            "POST",
            f"{self.base}/api/v1/tracesets/upload-url",
            {
                "name": "bench upload",
                "files": [
                    {
                        "name": "upload.bin",
                        "size": source.stat().st_size,
                        "role": "primary",
                        "sha256": sha256,
                    }
                ],
                "workloadMetadata": {"shape": {"rankCount": 8}},
            },
        )
        traceset = f"{self.base}/api/v1/tracesets/{created['tracesetId']}"
        seconds = curl_put(curl, source, created["uploads"][0]["url"])
        if call("POST", f"{traceset}/complete")["status"] != "ready":
            raise RuntimeError("the service did not complete the traceset")
        call("DELETE", traceset)
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description="PUT upload MB/s: service vs nginx WebDAV")
    parser.add_argument("--quick", action="store_true", help="128 MiB instead of 1 GiB")
    parser.add_argument("--size-mib", type=int, help="file size in MiB")
    parser.add_argument("--runs", type=int, default=3, help="runs per server (median is kept)")
    parser.add_argument("--tmp-dir", type=Path, help="where the file and uploads go")
    parser.add_argument(
        "--nginx-body-buffer",
        metavar="SIZE",
        help="nginx's client_body_buffer_size (default: nginx's own, 16k)",
    )
    args = parser.parse_args()
    size = (args.size_mib or (128 if args.quick else 1024)) * 1024 * 1024
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
        nginx = Nginx(workdir, args.nginx_body_buffer)
        print(
            f"put-upload: {size / 2**20:,.0f} MiB of random bytes in {workdir}, curl, "
            f"{args.runs} runs each after a warm-up; {nginx.version}, "
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
        seconds: dict[str, list[float]] = {"nginx": [], "service": []}
        for run in range(args.runs + 1):
            for name, taken in seconds.items():
                os.sync()
                if name == "nginx":
                    took = nginx.put(curl, source)
                else:
                    took = service.put(curl, source, sha256)
                label = f"run {run}" if run else "warm-up"
                print(
                    f"  {label:<7}  {name:<7}  {size / took / MB:8.1f} MB/s  ({took:.2f} s)",
                    flush=True,
                )
                if run:
                    taken.append(took)
        peak_rss = peak_rss_bytes(process.pid)

    nginx_rate = size / statistics.median(seconds["nginx"]) / MB
    service_rate = size / statistics.median(seconds["service"]) / MB
    print(f"nginx    {nginx_rate:8.1f} MB/s (median)")
    print(f"service  {service_rate:8.1f} MB/s (median, sha256 checked, fsync before the answer)")
    print(f"ratio service/nginx: {service_rate / nginx_rate:.2f}  (target >= 0.6)")
    print(
        f"service peak RSS: {peak_rss / MB:.1f} MB = {peak_rss / 2**20:.1f} MiB  "
        f"(after start-up {started_rss / MB:.1f} MB; target < 100 MB)"
    )


if __name__ == "__main__":
    main()
