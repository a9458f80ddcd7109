"""Which local files a path stands for, under which names: links, odd files, a file twice."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from tracesets.client.files import LocalFile, collect


def named(files: list[LocalFile]) -> list[tuple[str, int, str]]:
    return [(f.name, f.size, f.role) for f in files]


def test_a_folder_stands_for_its_regular_files_and_links_to_them_in_name_order(
    tmp_path: Path,
) -> None:
    job = tmp_path / "job"
    (job / "b" / "c").mkdir(parents=True)
    (job / "rank-1.json").write_bytes(b"1")
    (job / "b" / "rank-2.json").write_bytes(b"22")
    (job / "b" / "c" / "rank-3.json").write_bytes(b"333")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "rank-9.json").write_bytes(b"999999999")
    (elsewhere / "hidden.json").write_bytes(b"x")
    (job / "linked.json").symlink_to(elsewhere / "rank-9.json")
    (job / "broken.json").symlink_to(tmp_path / "nothing")
    (job / "folder-link").symlink_to(elsewhere, target_is_directory=True)  # not followed
    os.mkfifo(job / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(job / "sock"))
        files = collect(job)
    assert named(files) == [
        ("b/c/rank-3.json", 3, "primary"),
        ("b/rank-2.json", 2, "primary"),
        ("linked.json", 9, "primary"),
        ("rank-1.json", 1, "primary"),
    ]
    assert files[0].path == job / "b" / "c" / "rank-3.json"
    assert files[2].path == job / "linked.json"


def test_a_file_given_twice_or_through_a_link_is_sent_once(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank-0.json").write_bytes(b"0")
    (job / "notes.txt").write_bytes(b"notes")
    (tmp_path / "alias").symlink_to(job, target_is_directory=True)
    (tmp_path / "rank-0-link.json").symlink_to(job / "rank-0.json")
    files = collect(
        [job, tmp_path / "alias" / "rank-0.json", tmp_path / "rank-0-link.json"],
        supporting=[job / "notes.txt"],
    )
    # the folder's own names are kept; the notes inside it become supporting
    assert named(files) == [("notes.txt", 5, "supporting"), ("rank-0.json", 1, "primary")]


def test_a_folder_reached_through_a_link_names_its_files_as_the_folder_does(
    tmp_path: Path,
) -> None:
    job = tmp_path / "job"
    (job / "node-0").mkdir(parents=True)
    (job / "node-0" / "rank-0.json").write_bytes(b"0")
    (tmp_path / "alias").symlink_to(job, target_is_directory=True)
    through_link = collect(tmp_path / "alias")
    assert named(through_link) == [("node-0/rank-0.json", 1, "primary")]
    assert named(collect([tmp_path / "alias", job])) == named(through_link)
