"""Clients that stall on purpose, on raw sockets: headers or a body that never finish."""

from __future__ import annotations

import select
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

#: The longest any test waits for the service to act on a stalled client.
PATIENCE = 60.0


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=10)
    sock.settimeout(PATIENCE)
    return sock


def head(
    method: str, url: str, length: int, content_type: str, headers: dict[str, str] | None = None
) -> bytes:
    """A request's line and headers, announcing a body of ``length`` bytes."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    more = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    return (
        f"{method} {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n{more}"
        f"Content-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def stalled(
    method: str,
    url: str,
    *,
    length: int,
    sent: bytes = b"",
    content_type: str = "application/octet-stream",
    headers: dict[str, str] | None = None,
) -> socket.socket:
    """A request whose headers arrive whole and whose body stops after ``sent``."""
    sock = connect(url)
    sock.sendall(head(method, url, length, content_type, headers) + sent)
    return sock


def answered(sock: socket.socket, wait: float = 0.0) -> bool:
    """Whether the service has written to (or closed) the socket within ``wait`` seconds."""
    readable, _, _ = select.select([sock], [], [], wait)
    return bool(readable)


def read_answer(sock: socket.socket) -> Answer | None:
    """The answer the service sends before closing, or None if it closes without one."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
            if _whole(data):
                break
    except ConnectionResetError:
        pass
    if not data:
        return None
    top, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = top.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Answer(int(status_line.split()[1]), headers, body)


def _whole(data: bytes) -> bool:
    top, found, body = data.partition(b"\r\n\r\n")
    if not found:
        return False
    for line in top.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def closed_without_answer(sock: socket.socket) -> bool:
    """Whether the service closed the connection having sent nothing."""
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True
