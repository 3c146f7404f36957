"""The executed copy of a notebook (innolab.notebooks.record_engine): written as execution starts,
again where SAVE_EVERY_S have passed at a cell's start or end, and whole at the end, failed or not;
not at every cell's start and end as papermill's own engine writes it."""

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
    source = folder / "source.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]),
                   source)
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
    # papermill's own engine writes it 2 + 2 per cell + 1 times (9 here)
    assert len(writes) <= 3 and set(writes) == {str(executed)}
    cells = nbformat.read(executed, as_version=4).cells
    assert [c.outputs[0]["text"] for c in cells[1:]] == ["2\n", "done\n"]
    for cell in cells:
        recorded = cell.metadata["papermill"]
        assert recorded["status"] == "completed" and recorded["duration"] is not None


def test_a_long_notebooks_copy_holds_the_cells_done_while_it_runs(tmp_path):
    """While a cell runs, SAVE_EVERY_S after the previous write, the copy on disk holds the cells
    done before it; a failing notebook's copy is whole at the end."""
    started, release = tmp_path / "started", tmp_path / "release"
    source = notebook(
        tmp_path,
        "print('first')",
        f"import time; time.sleep({notebooks.SAVE_EVERY_S + 0.5})",
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
    assert during[0].outputs[0]["text"] == "first\n"
    # written as the sleeping cell ended; the next started within SAVE_EVERY_S of that
    assert [c.metadata["papermill"]["status"] for c in during] == [
        "completed", "completed", "pending", "pending"]
    final = nbformat.read(executed, as_version=4).cells
    assert final[-1].metadata["papermill"]["status"] == "failed"
    assert final[-1].outputs[-1]["ename"] == "ValueError"
