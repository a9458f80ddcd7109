"""``tracesets show`` of a job of thousands of ranks: a summary, every file on request."""

from __future__ import annotations

import httpx

from tests.cli.test_cli import Run, ok
from tests.server import ServerProcess
from tracesets import Client
from tracesets.cli.commands import natural_key

RANKS = 4_096


def names_in(lines: list[str]) -> list[str]:
    return [line.split()[3] for line in lines if line.startswith("  primary")]


def test_show_summarises_thousands_of_files_in_natural_order(
    tracesets: Run, server: ServerProcess, workspace_token: str
) -> None:
    with Client(server.url, workspace_token) as client:
        created = client.request_upload_urls(
            name="job",
            files=[{"name": f"rank-{r}.json", "size": 1, "role": "primary"} for r in range(RANKS)],
            workload_metadata={"shape": {"rankCount": RANKS}},
        )
    for upload in created.uploads[:2]:
        assert upload.url is not None
        assert httpx.put(upload.url, content=b"x").status_code == 200
    lines = ok(tracesets("show", created.tracesetId)).stdout.splitlines()
    assert len(lines) < 30, lines
    counts = lines.index(f"files: {RANKS:,}, 4.1 kB, 2 received")
    assert names_in(lines) == [
        *(f"rank-{r}.json" for r in range(5)),
        *(f"rank-{r}.json" for r in range(RANKS - 5, RANKS)),
    ]
    assert lines[counts + 1].endswith("rank-0.json")  # arrived: nothing said
    assert lines[counts + 3].endswith("rank-2.json  (not received)")
    assert f"  … {RANKS - 10:,} more (--files lists every file)" in lines
    assert "inspection: none (no primary files, or the upload is not complete)" in lines

    every = ok(tracesets("show", created.tracesetId, "--files")).stdout.splitlines()
    assert names_in(every) == [f"rank-{r}.json" for r in range(RANKS)]
    assert not any("more (--files" in line for line in every)


def test_the_natural_key_compares_digit_runs_as_numbers() -> None:
    names = ["rank-10.json", "b", "rank-2.json", "rank-1.json.gz", "10", "2", "rank-2.json.gz"]
    assert sorted(names, key=natural_key) == [
        "2",
        "10",
        "b",
        "rank-1.json.gz",
        "rank-2.json",
        "rank-2.json.gz",
        "rank-10.json",
    ]
