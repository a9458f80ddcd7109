"""Strict JSON in, faithful JSON out, over real HTTP."""

from __future__ import annotations

import httpx

from tests.flows import problems, request_urls

FILES = '[{"name":"a","size":1,"role":"primary"}]'


def post_raw(api: httpx.Client, body: bytes | str) -> httpx.Response:
    return api.post(
        "/api/v1/tracesets/upload-url", content=body, headers={"Content-Type": "application/json"}
    )


def with_metadata(metadata: str) -> str:
    return f'{{"name":"x","files":{FILES},"workloadMetadata":{metadata}}}'


def test_stored_metadata_comes_back_as_given(api: httpx.Client) -> None:
    metadata = (
        '{"workload_name":"llama-3 70b ✓ 東京","shape":{"rankCount":8,"seq":0.1000000000000000000001,'
        '"ratio":2.0,"exp":2e0,"big":' + "9" * 40 + ',"neg":-0},"parallelism":{"dp":8,"cp":null},'
        '"zeta":[1,{"b":true,"a":false}],"alpha":"\\u00e9\\n"}'
    )
    created = post_raw(api, with_metadata(metadata))
    assert created.status_code == 201, created.text
    got = api.get(f"/api/v1/tracesets/{created.json()['tracesetId']}")
    compact = metadata.replace('"\\u00e9\\n"', '"é\\n"')
    assert f'"workloadMetadata":{compact},'.encode() in got.content
    assert got.json()["rankCountDerived"] == 8


def test_malformed_json_is_400(api: httpx.Client) -> None:
    for body in ["{", '{"name": "x",}', "{'name': 'x'}", "// c\n{}", ""]:
        answer = post_raw(api, body)
        assert answer.status_code == 400, body
        assert problems(answer)


def test_repeated_member_names_are_refused(api: httpx.Client) -> None:
    answer = post_raw(api, with_metadata('{"shape":{"rankCount":8,"rankCount":16}}'))
    assert answer.status_code == 400 and "rankCount" in answer.json()["detail"]


def test_nan_and_infinity_are_refused(api: httpx.Client) -> None:
    for literal in ["NaN", "Infinity", "-Infinity"]:
        answer = post_raw(api, with_metadata(f'{{"shape":{{"rankCount":8,"x":{literal}}}}}'))
        assert answer.status_code == 400, literal


def test_a_5000_digit_number_is_a_clear_400(api: httpx.Client) -> None:
    answer = post_raw(api, with_metadata('{"shape":{"rankCount":' + "9" * 5000 + "}}"))
    assert answer.status_code == 400
    assert "must not exceed 2,147,483,647" in answer.json()["detail"]


def test_a_5000_digit_descriptive_number_is_stored_with_every_digit(api: httpx.Client) -> None:
    digits = "1" + "0" * 4999
    created = post_raw(api, with_metadata('{"shape":{"rankCount":8},"tokens":' + digits + "}"))
    assert created.status_code == 201
    got = api.get(f"/api/v1/tracesets/{created.json()['tracesetId']}")
    assert f'"tokens":{digits}}}'.encode() in got.content


def test_20000_levels_of_nesting_is_a_clear_400(api: httpx.Client) -> None:
    deep = "[" * 20_000 + "]" * 20_000
    answer = post_raw(api, with_metadata(f'{{"shape":{{"rankCount":8}},"x":{deep}}}'))
    assert answer.status_code == 400 and "nested" in answer.json()["detail"]


def test_invalid_utf8_is_400(api: httpx.Client) -> None:
    assert post_raw(api, b'{"name":"\xff"}').status_code == 400


def test_lone_surrogate_is_400(api: httpx.Client) -> None:
    answer = post_raw(api, with_metadata('{"shape":{"rankCount":8},"x":"\\ud800"}'))
    assert answer.status_code == 400


def test_body_over_4_mib_is_413(api: httpx.Client) -> None:
    answer = post_raw(api, with_metadata('{"x":"' + "a" * (4 * 1024 * 1024) + '"}'))
    assert answer.status_code == 413
    assert problems(answer)[0]["member"] == "body"


def test_body_over_4_mib_without_content_length_is_413(api: httpx.Client) -> None:
    def chunks() -> object:
        yield with_metadata('{"x":"').encode()
        for _ in range(5):
            yield b"a" * (1024 * 1024)
        yield b'"}'

    answer = api.post(
        "/api/v1/tracesets/upload-url",
        content=chunks(),  # type: ignore[arg-type]
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 413


def test_metadata_over_65536_bytes_is_refused_and_at_the_limit_accepted(api: httpx.Client) -> None:
    skeleton = '{"shape":{"rankCount":8},"pad":""}'
    room = 65_536 - len(skeleton)
    fits = skeleton.replace('""', '"' + "é" * (room // 2) + "a" * (room % 2) + '"')
    assert len(fits.encode()) == 65_536
    assert post_raw(api, with_metadata(fits)).status_code == 201
    over = fits.replace('"pad":"', '"pad":"x')
    answer = post_raw(api, with_metadata(over))
    assert answer.status_code == 400 and "65,536" in answer.json()["detail"]


def test_null_metadata_is_absent(api: httpx.Client) -> None:
    created = request_urls(
        api, {"a": b"x"}, metadata={"shape": None, "parallelism": {"dp": 8, "tp": None}}
    )
    got = api.get(f"/api/v1/tracesets/{created['tracesetId']}").json()
    assert got["rankCountDerived"] == 8
    assert got["workloadMetadata"] == {"shape": None, "parallelism": {"dp": 8, "tp": None}}


def test_a_nul_character_in_metadata_is_stored_and_returned(api: httpx.Client) -> None:
    """PostgreSQL's JSON functions refuse \\u0000; the service stores it all the same."""
    metadata = '{"shape":{"rankCount":8},"workload_family":"a\\u0000b","workload_name":"nul"}'
    created = post_raw(api, with_metadata(metadata))
    assert created.status_code == 201, created.text
    got = api.get(f"/api/v1/tracesets/{created.json()['tracesetId']}").json()
    assert got["workloadMetadata"]["workload_family"] == "a\x00b"
    assert api.get("/api/v1/tracesets", params={"workload_name": "other"}).json()["items"] == []
