"""The executed copy of a notebook (innolab.notebooks.record_engine): written as execution starts,
as each code cell starts (the cells before it done, the cell running) and whole at the end, failed
or not; not also at every cell's end and at a markdown cell's start, as papermill's engine does."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import nbformat
import papermill
import pytest
from papermill import iorw

from innolab import notebooks


def notebook(folder: Path, *cells: str) -> Path:
    """A notebook of code cells, a markdown cell first."""
    source = folder / "source.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# a title"),
        *(nbformat.v4.new_code_cell(c) for c in cells)]), source)
    return source


def test_a_short_notebook_is_written_as_it_starts_and_whole_at_its_end(tmp_path, monkeypatch):
    writes: list[str] = []
    write = iorw.write_ipynb

    def counted(nb, path):
        writes.append(path)
        return write(nb, path)

    for module in ("papermill.iorw", "papermill.engines", "papermill.execute"):
        monkeypatch.setattr(f"{module}.write_ipynb", counted)
    executed = tmp_path / "executed.ipynb"
    notebooks.execute(notebook(tmp_path, "a = 1", "print(a + 1)", "print('done')"), executed)
    # at the start, at each code cell's start, at the end and once more after (papermill's engine:
    # 2 + 2 per cell + 1 times, 11 here)
    assert len(writes) == 3 + 3 and set(writes) == {str(executed)}
    cells = nbformat.read(executed, as_version=4).cells
    assert [c.outputs[0]["text"] for c in cells[2:]] == ["2\n", "done\n"]
    for cell in cells:
        recorded = cell.metadata["papermill"]
        assert recorded["status"] == "completed" and recorded["duration"] is not None


def test_the_copy_shows_the_cells_done_and_the_one_running(tmp_path):
    """While a cell runs, the copy on disk holds the cells done before it, and shows it running;
    a failing notebook's copy is whole at the end."""
    started, release = tmp_path / "started", tmp_path / "release"
    source = notebook(
        tmp_path,
        "print('first')",
        "print('second')",
        "import pathlib, time\n"
        f"pathlib.Path({str(started)!r}).touch()\n"
        f"while not pathlib.Path({str(release)!r}).exists(): time.sleep(0.05)",
        "raise ValueError('the end')",
    )
    executed = tmp_path / "executed.ipynb"
    seen: dict = {}

    def look() -> None:
        deadline = time.monotonic() + 120
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        seen["cells"] = nbformat.read(executed, as_version=4).cells
        release.touch()

    watcher = threading.Thread(target=look, daemon=True)
    watcher.start()
    with pytest.raises(papermill.PapermillExecutionError, match="the end"):
        notebooks.execute(source, executed)
    watcher.join(60)
    during = seen["cells"]
    assert [c.outputs[0]["text"] for c in during[1:3]] == ["first\n", "second\n"]
    assert [c.metadata["papermill"]["status"] for c in during] == [
        "completed", "completed", "completed", "running", "pending"]
    final = nbformat.read(executed, as_version=4).cells
    assert final[-1].metadata["papermill"]["status"] == "failed"
    assert final[-1].outputs[-1]["ename"] == "ValueError"
