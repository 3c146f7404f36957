"""Kernel clients ready at their own info request's idle status (innolab.kernel_client): no wait
for IOPub to fall silent, no output of the first cell missed, a dead kernel reported."""

from __future__ import annotations

import signal
import threading

import pytest
from jupyter_client.manager import KernelManager

from innolab.kernel_client import BlockingReadyClient, ReadyClient
from innolab.notebooks import KERNEL_NAME, ipc_kernel_manager

# a thread in the kernel that prints every 20 ms for as long as the kernel lives: its IOPub channel
# is never silent (jupyter_client's own wait_for_ready waits for 0.2 s of silence, forever here)
CHATTER = """
import threading, time
def _chatter():
    while True:
        print("tick", flush=True)
        time.sleep(0.02)
threading.Thread(target=_chatter, daemon=True).start()
"""


@pytest.fixture
def manager(tmp_path):
    manager = KernelManager(kernel_name=KERNEL_NAME, transport="ipc", ip=str(tmp_path / "ipc"),
                            connection_file=str(tmp_path / "kernel.json"),
                            blocking_class=BlockingReadyClient)
    manager.start_kernel(extra_arguments=["--HistoryManager.hist_file=:memory:"])
    yield manager
    if manager.is_alive():
        manager.shutdown_kernel(now=True)
    manager.cleanup_resources()


def outputs(client, code: str) -> str:
    """What one execution printed on stdout, read from IOPub."""
    said: list[str] = []

    def hook(message: dict) -> None:
        if message["msg_type"] == "stream" and message["content"]["name"] == "stdout":
            said.append(message["content"]["text"])

    reply = client.execute_interactive(code, timeout=60, output_hook=hook)
    assert reply["content"]["status"] == "ok"
    return "".join(said)


def test_a_client_is_ready_while_the_kernel_prints_and_misses_no_output(manager):
    """Every client the manager makes is ready though IOPub never falls silent, and the first
    execution's output after it is complete (its IOPub subscription was connected)."""
    first = manager.blocking_client()
    assert isinstance(first, BlockingReadyClient)
    first.start_channels(hb=False)
    first.wait_for_ready(timeout=60)
    outputs(first, CHATTER)
    first.stop_channels()
    ready: list[BaseException | None] = []

    def connect() -> None:
        client = manager.blocking_client()
        client.start_channels(hb=False)
        try:
            client.wait_for_ready(timeout=60)
            ready.append(None)
            said = outputs(client, "print('first line'); print('second line')")
            # the thread's lines too, even within one of ours (print writes the newline apart)
            lines = [line for line in said.replace("tick", "").splitlines() if line]
            ready.append(None if lines == ["first line", "second line"] else AssertionError(said))
        except BaseException as error:
            ready.append(error)
        finally:
            client.stop_channels()

    thread = threading.Thread(target=connect, daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the client waited for IOPub to fall silent"
    assert ready == [None, None]


def test_nbclients_client_is_the_ready_one():
    """The kernel managers innolab executes notebooks with make ready clients, both kinds."""
    from innolab.sweep.pool import manager_class

    for made in (ipc_kernel_manager()(kernel_name=KERNEL_NAME),
                 manager_class()([], kernel_name=KERNEL_NAME)):
        assert isinstance(made.client(), ReadyClient)
        assert isinstance(made.blocking_client(), BlockingReadyClient)


def test_a_dead_kernel_is_reported(manager):
    client = manager.blocking_client()
    client.start_channels(hb=False)
    try:
        manager.signal_kernel(signal.SIGKILL)
        with pytest.raises(RuntimeError, match="Kernel died"):
            client.wait_for_ready(timeout=60)
    finally:
        client.stop_channels()
