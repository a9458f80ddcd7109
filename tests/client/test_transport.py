"""The clients set up TLS only for https:// URLs, and then verify as httpx does;
httpx's plain transport only when httpx is asked for an http:// URL."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tracesets import Client
from tracesets.client import AsyncClient
from tracesets.client.transport import AsyncSchemeTransport, SchemeTransport


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"workspace": "w", "scopes": ["read"], "multipartThreshold": null}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def plain_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _scheme_transport(client: Client) -> SchemeTransport:
    transport = client._http._transport
    assert isinstance(transport, SchemeTransport)
    return transport


def test_plain_http_answers_without_a_tls_transport(plain_url: str) -> None:
    with Client(plain_url, "a-token") as client:
        assert client.whoami().workspace == "w"
        assert _scheme_transport(client)._tls is None
        assert _scheme_transport(client)._plain is None  # whoami went on http.client


def test_https_gets_a_verifying_transport_on_first_use(plain_url: str) -> None:
    secure = plain_url.replace("http://", "https://")
    with Client(plain_url, "a-token") as client:
        transport = _scheme_transport(client)
        with pytest.raises(httpx.ConnectError):  # the server speaks no TLS
            client._http.get(f"{secure}/x")
        assert transport._tls is not None
        pool = transport._tls._pool
        context = pool._ssl_context
        assert context is not None
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        assert context.cert_store_stats()["x509_ca"] > 0


def test_the_plain_transport_can_verify_no_server() -> None:
    transport = SchemeTransport(httpx.Limits())
    assert transport._plain is None  # made on first use
    context = transport._insecure()._pool._ssl_context
    assert context is not None
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.cert_store_stats()["x509_ca"] == 0
    transport.close()


def test_the_asyncio_client_sets_up_tls_only_for_https(plain_url: str) -> None:
    async def use() -> None:
        async with AsyncClient(plain_url, "a-token") as client:
            transport = client._http._transport
            assert isinstance(transport, AsyncSchemeTransport)
            assert transport._tls is None and transport._plain is None  # made on first use
            assert (await client.whoami()).workspace == "w"
            assert transport._tls is None and transport._plain is not None
            with pytest.raises(httpx.ConnectError):  # the server speaks no TLS
                await client._http.get(plain_url.replace("http://", "https://") + "/x")
            assert transport._tls is not None
            context = transport._tls._pool._ssl_context
            assert context is not None
            assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
            assert context.cert_store_stats()["x509_ca"] > 0
            plain = transport._plain._pool._ssl_context
            assert plain is not None and plain.cert_store_stats()["x509_ca"] == 0

    asyncio.run(use())
