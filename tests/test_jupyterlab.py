"""Notebook 02 in JupyterLab 4 in headless Chromium, as a newcomer meets it on a fresh clone: run
every cell, click SweepView's "Open run" with no run selected, and find its message in the
notebook's output area, in the output of the cell that shows the view, beside its button (the
view's own widget text, which the callback sets; the test does not read JupyterLab's log
console)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import chromium, clone_env

pytestmark = pytest.mark.chromium

MESSAGE = "Open run: select a run first"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(check, timeout_s: float, what: str):
    """Poll `check` until it returns something true; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (OSError, ValueError) as error:  # not up yet
            last = error
        else:
            if last:
                return last
        time.sleep(0.5)
    pytest.fail(f"{what} within {timeout_s:g} s (last seen: {last!r})")


class DevTools:
    """The Chrome DevTools protocol of one page, over its WebSocket."""

    def __init__(self, url: str) -> None:
        import websocket  # websocket-client, a dependency of jupyter_server

        self.socket = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.next_id = 0

    def evaluate(self, expression: str):
        """A JavaScript expression's value in the page (awaited when it is a promise)."""
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": "Runtime.evaluate",
                                     "params": {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True}}))
        while True:
            reply = json.loads(self.socket.recv())
            if reply.get("id") == self.next_id:
                break
        result = reply.get("result", {})
        if "exceptionDetails" in result:
            raise ValueError(result["exceptionDetails"].get("text", "a script error"))
        return result.get("result", {}).get("value")

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def lab(fresh_clone, tmp_path):
    """JupyterLab serving the fresh clone (its kernels run the clone's innolab)."""
    port, token = free_port(), "innolab-test-token"
    config = tmp_path / "config"
    config.mkdir()
    # no announcements, no update check, no extension index: nothing reaches the network
    (config / "jupyter_server_config.json").write_text(json.dumps({"LabApp": {
        "news_url": None, "extension_manager": "readonly",
        "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate"}}))
    env = {**clone_env(fresh_clone), "JUPYTER_CONFIG_DIR": str(config),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    env.pop("MPLBACKEND", None)  # the kernel's inline backend, as in a person's JupyterLab
    log = (tmp_path / "lab.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={fresh_clone}", "--LabApp.expose_app_in_browser=True",
         f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)
                 .status == 200, 120, "JupyterLab did not answer")
        yield base, token, tmp_path / "lab.log"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture
def browser(tmp_path):
    """Headless Chromium with its DevTools port open; yields the port."""
    port = free_port()
    process = subprocess.Popen(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--remote-debugging-port={port}", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1400,1000", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version",
                                                timeout=5).status == 200, 60,
                 "Chromium's DevTools did not answer")
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def page(port: int, url: str) -> DevTools:
    """Open `url` in a new tab; its DevTools connection."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/json/new?{url}", method="PUT")
    target = json.loads(urllib.request.urlopen(request, timeout=30).read())
    return DevTools(target["webSocketDebuggerUrl"])


NOTEBOOK_READY = """(() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  const kernel = panel && panel.sessionContext && panel.sessionContext.session
                 && panel.sessionContext.session.kernel;
  return !!(kernel && kernel.status === 'idle' && panel.content && panel.content.widgets.length);
})()"""
RUN_ALL = """(async () => {
  await window.jupyterapp.commands.execute('notebook:run-all-cells');
  return true;
})()"""
# every code cell has run (an execution count) and the kernel is idle again
ALL_RAN = """(() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.widgets.filter(c => c.model.type === 'code');
  const kernel = panel.sessionContext.session.kernel;
  return cells.every(c => c.model.executionCount !== null) && kernel.status === 'idle'
         && cells.length;
})()"""
# the error outputs of the notebook's cells (nbformat's "error" outputs)
ERRORS = """window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code').flatMap(c => c.model.outputs.toJSON())
  .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)"""
CLICK_OPEN_RUN = """(() => {
  const button = [...document.querySelectorAll('.jp-OutputArea-output button')]
                 .find(b => b.textContent.trim() === 'Open run');
  if (!button) return false;
  button.click();
  return true;
})()"""
MESSAGE_WHERE = """(() => {
  const hits = [...document.querySelectorAll('.jp-OutputArea-output')]
               .filter(o => o.textContent.includes(MESSAGE));
  const button = [...document.querySelectorAll('.jp-OutputArea-output button')]
                 .find(b => b.textContent.trim() === 'Open run');
  return hits.map(o => ({same_output: !!button && o.contains(button),
                         text: o.querySelector('.error') ? o.querySelector('.error').textContent
                                                         : ''}));
})()""".replace("MESSAGE", json.dumps(MESSAGE))


def test_open_run_with_nothing_selected_says_so_in_the_notebook(lab, browser, tmp_path):
    base, token, _log = lab
    tab = page(browser, f"{base}/lab/tree/notebooks/02_explore_run.ipynb?token={token}")
    try:
        wait_for(lambda: tab.evaluate(NOTEBOOK_READY), 180, "notebook 02 did not open with an "
                 "idle kernel")
        assert tab.evaluate(RUN_ALL)
        wait_for(lambda: tab.evaluate(ALL_RAN), 300, "notebook 02's cells did not all run")
        errors = tab.evaluate(ERRORS)
        assert not errors, errors  # every cell ran without an error
        assert tab.evaluate(CLICK_OPEN_RUN), "no Open run button in the notebook's output"
        found = wait_for(lambda: tab.evaluate(MESSAGE_WHERE), 60,
                         "the message did not appear in the notebook's output area")
        # in the output of the cell that shows SweepView, beside its button
        assert any(hit["same_output"] and MESSAGE in hit["text"] for hit in found), found
        shot = tab.evaluate("document.body.innerText.length")
        assert shot > 1000  # a drawn page, not a blank one
    finally:
        tab.close()
