"""A small HTTP/1.1 load generator, for when ``wrk`` cannot be installed.

N keep-alive connections each send the same POST back to back for a fixed time; it
prints one line, ``requests=… unexpected=… seconds=…``. Raw asyncio streams rather
than an HTTP client library, so that the generator costs the CPU it shares with the
server as little as Python allows.

    python bench/loadgen.py URL --body-file F --seconds 10 --connections 16 \
        --header 'Authorization: Bearer …' --expect 201
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from urllib.parse import urlsplit


def _request(url: str, body: bytes, headers: list[str]) -> tuple[str, int, bytes]:
    parts = urlsplit(url)
    if parts.hostname is None or parts.port is None:
        raise SystemExit(f"{url}: give a host and a port")
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    head = [
        f"POST {target} HTTP/1.1",
        f"Host: {parts.hostname}:{parts.port}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *headers,
    ]
    return parts.hostname, parts.port, ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def _connection(
    host: str, port: int, request: bytes, until: float, expect: int, counts: list[int]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.monotonic() < until:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            counts[0] += 1
            if status != expect:
                counts[1] += 1
    finally:
        writer.close()


async def _run(args: argparse.Namespace) -> None:
    host, port, request = _request(args.url, args.body_file.read_bytes(), args.header)
    counts = [0, 0]
    start = time.monotonic()
    until = start + args.seconds
    await asyncio.gather(
        *(
            _connection(host, port, request, until, args.expect, counts)
            for _ in range(args.connections)
        )
    )
    print(f"requests={counts[0]} unexpected={counts[1]} seconds={time.monotonic() - start:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--body-file", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--expect", type=int, default=201)
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        asyncio.run(_run(args))
    else:
        uvloop.run(_run(args))


if __name__ == "__main__":
    main()
