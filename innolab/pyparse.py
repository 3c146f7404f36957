"""Parsing Python source safely from any thread: one lock, and a fresh thread when the parser trips.

CPython 3.11's `ast.parse` is not safe to enter from several threads at once, and after such an
overlap (or deep in a long call stack) it can fail with `SystemError: AST constructor recursion
depth mismatch`. Every parse of innolab goes through `parse`: one at a time, and a parse that trips
is retried once in a new thread (a fresh thread state with fresh recursion counters).
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.RLock()


def parse(source: str) -> ast.Module:
    """Parse Python source, one parse at a time, retrying once in a new thread if CPython trips.

    Args:
        source: The source.

    Returns:
        The module's tree.

    Raises:
        SyntaxError: The source is not valid Python.
    """
    with _LOCK:
        try:
            return ast.parse(source)
        except SystemError:
            result: dict[str, object] = {}

            def again() -> None:
                try:
                    result["tree"] = ast.parse(source)
                except BaseException as error:  # re-raised in the caller's thread
                    result["error"] = error

            worker = threading.Thread(target=again, daemon=True)
            worker.start()
            worker.join()
            if "error" in result:
                raise result["error"] from None  # type: ignore[misc]
            return result["tree"]  # type: ignore[return-value]


def lock() -> threading.RLock:
    """Return the lock that serialises parsing.

    Hold it around ast.unparse of trees that are being built, too.

    Returns:
        The lock.
    """
    return _LOCK
