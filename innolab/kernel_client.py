"""Kernel clients that know a kernel is ready without waiting for silence on its IOPub channel.

jupyter_client's `wait_for_ready` asks for the kernel's info, checks that IOPub carries a message,
then reads IOPub until it has been silent for 0.2 s: a fixed 0.2 s on every notebook's start, which
nbclient pays each time it connects a client (papermill, a sweep's run). These clients end the wait
as soon as IOPub carries the idle status of their own info request: the kernel has answered, and
the client's IOPub subscription is connected (it received a message published after the request),
so no output of the first cell can be missed. A message left on IOPub from before is not the
executed cells' (nbclient reads only the replies to its own requests). Where IOPub carries nothing
for the request within 0.2 s (a subscription not yet connected), the request is sent again. They
are for clients a kernel manager makes (innolab's kernel managers use them): whether the kernel
lives is asked of the manager, not of a heartbeat.
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.utils import run_sync
from jupyter_core.utils import ensure_async
from traitlets import HasTraits, Type

SHELL_WAIT_S = 1.0  # jupyter_client's wait for one info reply before asking again
IOPUB_WAIT_S = 0.2  # its wait for the first IOPub message after the reply


async def wait_for_ready(client: Any, timeout: float | None = None) -> None:
    """Wait until the kernel answers an info request and IOPub carries that request's idle status.

    Args:
        client: A kernel client with started channels (asynchronous or blocking).
        timeout: Seconds in all (None: no limit).

    Raises:
        RuntimeError: The kernel died, or did not answer within `timeout`, in jupyter_client's
            words.
    """
    deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
    while True:
        asked = client.kernel_info()
        reply = await _reply(client, asked)
        if reply is not None and await _idle(client, asked):
            client._handle_kernel_info_reply(reply)
            return
        if not await client._async_is_alive():
            raise RuntimeError("Kernel died before replying to kernel_info")
        if time.monotonic() > deadline:
            raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")


async def _reply(client: Any, asked: str) -> dict[str, Any] | None:
    """The kernel's reply to info request `asked`, or None after SHELL_WAIT_S without one."""
    until = time.monotonic() + SHELL_WAIT_S
    while (left := until - time.monotonic()) > 0:
        try:
            message = await ensure_async(client.shell_channel.get_msg(timeout=left))
        except Empty:
            return None
        if (message.get("msg_type") == "kernel_info_reply"
                and message.get("parent_header", {}).get("msg_id") == asked):
            return message
    return None


async def _idle(client: Any, asked: str) -> bool:
    """Whether IOPub carries the idle status of request `asked` (each message within 0.2 s).

    All of them within SHELL_WAIT_S (a kernel that keeps printing), else it is asked again.
    """
    until = time.monotonic() + SHELL_WAIT_S
    while time.monotonic() < until:
        try:
            message = await ensure_async(client.iopub_channel.get_msg(timeout=IOPUB_WAIT_S))
        except Empty:
            return False
        if (message.get("msg_type") == "status"
                and message.get("parent_header", {}).get("msg_id") == asked
                and message.get("content", {}).get("execution_state") == "idle"):
            return True
    return False


class ReadyClient(AsyncKernelClient):
    """nbclient's asynchronous client, ready at its info request's idle status."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:  # type: ignore[override]
        """See `wait_for_ready`."""
        await wait_for_ready(self, timeout)


class BlockingReadyClient(BlockingKernelClient):
    """The blocking client, ready at its info request's idle status."""

    def wait_for_ready(self, timeout: float | None = None) -> None:  # type: ignore[override]
        """See `wait_for_ready`."""
        run_sync(wait_for_ready)(self, timeout)


class ReadyClients(HasTraits):
    """A kernel manager's mixin, listed before the manager: its clients are these.

    The asynchronous one (nbclient's kind) and the blocking one.
    """

    client_factory = Type(ReadyClient)
    blocking_class = Type(BlockingReadyClient)
