"""JSON routes take JSON: a body sent as text, as a form or with no type is 415."""

from __future__ import annotations

import httpx
import pytest

from tests.flows import problems, request_urls, upload
from tests.server import ServerProcess

BODY = b'{"name":"x","files":[{"name":"a","size":1,"role":"supporting"}]}'


def post(api: httpx.Client, path: str, body: bytes, content_type: str | None) -> httpx.Response:
    headers = {} if content_type is None else {"Content-Type": content_type}
    request = api.build_request("POST", path, content=body, headers=headers)
    assert request.headers.get("Content-Type") == content_type
    return api.send(request)


def listed(api: httpx.Client) -> list[object]:
    items: list[object] = api.get("/api/v1/tracesets").json()["items"]
    return items


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain; charset=utf-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/octet-stream",
        "text/json",
        "application/jsonp",
        "",
        None,
    ],
)
def test_upload_url_refuses_a_body_not_sent_as_json(
    api: httpx.Client, content_type: str | None
) -> None:
    answer = post(api, "/api/v1/tracesets/upload-url", BODY, content_type)
    assert answer.status_code == 415, answer.text
    (problem,) = problems(answer)
    assert problem["member"] == "Content-Type"
    assert problem["value"] == content_type
    assert problem["message"] == (
        "The request body must be JSON, sent with Content-Type: application/json; "
        f"got {content_type or 'no Content-Type'}"
    )
    assert answer.json()["type"] == "urn:tracesets:problem:unsupported-media-type"
    assert listed(api) == [], "nothing is stored"


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON;charset=UTF-8",
        "application/vnd.tracesets+json",
    ],
)
def test_upload_url_takes_json_and_json_suffixed_types(
    api: httpx.Client, content_type: str
) -> None:
    answer = post(api, "/api/v1/tracesets/upload-url", BODY, content_type)
    assert answer.status_code == 201, answer.text


def test_promote_refuses_a_body_not_sent_as_json(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"})
    path = f"/api/v1/tracesets/{traceset['id']}/promote"
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        answer = post(api, path, b"{}", content_type)
        assert answer.status_code == 415, (content_type, answer.text)
        assert problems(answer)[0]["member"] == "Content-Type"
    assert api.get(f"/api/v1/tracesets/{traceset['id']}").json()["status"] == "ready"
    assert post(api, path, b"{}", "application/json").status_code == 200


def test_a_post_without_a_body_needs_no_type(api: httpx.Client) -> None:
    """No bytes, no type to check: promote's empty body still means ``{}``."""
    traceset = upload(api, {"a": b"x"})
    answer = post(api, f"/api/v1/tracesets/{traceset['id']}/promote", b"", None)
    assert answer.status_code == 200, answer.text


def test_the_token_is_checked_before_the_type(server: ServerProcess) -> None:
    answer = httpx.post(
        f"{server.url}/api/v1/tracesets/upload-url",
        content=BODY,
        headers={"Content-Type": "text/plain"},
    )
    assert answer.status_code == 401


def test_requests_with_the_right_type_still_work(api: httpx.Client) -> None:
    assert request_urls(api, {"a": b"x"})["uploads"]
