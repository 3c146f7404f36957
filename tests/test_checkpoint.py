"""Workspace checkpoints (innolab.gym.checkpoint): a manifest over a content-addressed store that
costs what the agent changed. A task's data folder never enters one; an unchanged step writes no
content; a large file is stored once across steps; a same-size rewrite whose mtime the agent put
back (`touch -r`) is still caught, by its ctime, and restored as written."""

from __future__ import annotations

import io
import tarfile

import pytest

from innolab.gym import checkpoint
from innolab.gym.factory import open_sandbox
from innolab.tasks import get_task


@pytest.fixture
def box():
    sandbox = open_sandbox(get_task("kissing-number-11"), "local")
    try:
        yield sandbox
    finally:
        sandbox.close()


def run(sandbox, command: str) -> None:
    done = sandbox.exec(command)
    assert done.returncode == 0, done


def files_of(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_the_tasks_data_folder_is_not_in_the_manifest(tmp_path):
    task = get_task("mnist1d")
    sandbox = open_sandbox(task, "local")
    try:
        assert "train.npz" in sandbox.exec("ls ../data").stdout  # mounted beside the workspace
        run(sandbox, "echo hello > notes.txt")
        saved = checkpoint.save(sandbox, tmp_path, 1, None)
    finally:
        sandbox.close()
    paths = {e.path for e in saved.entries}
    assert "notes.txt" in paths
    assert not any("npz" in p or p.startswith("data") or ".." in p for p in paths), paths
    data_bytes = sum(f.stat().st_size for f in task.data_dir.iterdir())
    assert data_bytes > 1_000_000 and saved.new_bytes < 100_000


def test_an_unchanged_step_writes_no_content(tmp_path, box):
    run(box, "mkdir -p sub && echo a > sub/a.txt && head -c 5000 /dev/urandom > b.bin")
    first = checkpoint.save(box, tmp_path, 1, None)
    assert first.new_bytes >= 5000 and first.read_files >= 2
    second = checkpoint.save(box, tmp_path, 2, first.entries)
    assert second.new_bytes == 0 and second.read_files == 0
    assert {e.path: e.sha256 for e in second.entries} == {e.path: e.sha256 for e in first.entries}


def test_a_large_file_is_stored_once_across_steps(tmp_path, box):
    run(box, "head -c 20000000 /dev/urandom > big.bin")
    first = checkpoint.save(box, tmp_path, 1, None)
    assert first.new_bytes >= 20_000_000
    run(box, "echo step two > small.txt")
    second = checkpoint.save(box, tmp_path, 2, first.entries)
    assert second.new_bytes < 1000 and second.read_files == 1
    run(box, "cp big.bin copy.bin")  # a new file (read) with a content already stored
    third = checkpoint.save(box, tmp_path, 3, second.entries)
    assert third.new_bytes == 0 and third.read_files == 1
    checkpoint.prune(tmp_path, third.manifest)
    blobs = list((tmp_path / "blobs").iterdir())
    assert sum(b.stat().st_size >= 20_000_000 for b in blobs) == 1  # one copy of the big file
    assert sum(b.stat().st_size for b in blobs) < first.new_bytes + 1000


def _same_size_rewrite_is_caught_and_restored(tmp_path, box, runtime: str) -> None:
    """A same-size rewrite of a file whose mtime the agent put back (`touch -r`) is read again,
    by its ctime, and a fresh sandbox of the same runtime restored from the checkpoint holds it as
    written."""
    run(box, "printf aaaa > f.txt && touch -d '2001-01-01 00:00:00' f.txt && cp -p f.txt ref")
    first = checkpoint.save(box, tmp_path, 1, None)
    old = next(e for e in first.entries if e.path == "f.txt")
    assert old.ctime_ns > 0 and old.inode > 0  # the listing gives them
    run(box, "printf bbbb > f.txt && touch -r ref f.txt")  # same size, same mode, same mtime
    listed = box.listing()
    assert (listed["f.txt"][2], listed["f.txt"][3]) == (old.size, old.mtime_ns)  # as before
    assert listed["f.txt"][4] != old.ctime_ns  # but not its ctime
    second = checkpoint.save(box, tmp_path, 2, first.entries)
    entry = next(e for e in second.entries if e.path == "f.txt")
    assert entry.sha256 != old.sha256 and second.read_files == 1
    checkpoint.prune(tmp_path, second.manifest)
    archive = checkpoint.as_tar(tmp_path, checkpoint.load_entries(second.manifest))
    assert files_of(archive)["f.txt"] == b"bbbb"
    fresh = open_sandbox(get_task("kissing-number-11"), runtime)  # a resumed run's sandbox
    try:
        fresh.restore(archive)
        assert fresh.read_file("f.txt") == b"bbbb" and fresh.read_file("ref") == b"aaaa"
    finally:
        fresh.close()


def test_a_same_size_rewrite_with_its_mtime_put_back_is_caught_and_restored(tmp_path, box):
    _same_size_rewrite_is_caught_and_restored(tmp_path, box, "local")


@pytest.mark.docker
def test_in_docker_a_same_size_rewrite_with_its_mtime_put_back_is_caught_and_restored(
        tmp_path, docker_client, base_image):
    """As above in a Docker sandbox, whose listing (the executor's) gives ctime and inode too."""
    sandbox = open_sandbox(get_task("kissing-number-11"), "docker")
    try:
        _same_size_rewrite_is_caught_and_restored(tmp_path, sandbox, "docker")
    finally:
        sandbox.close()
