"""A pre-started checker's program: it waits for one order, then runs the checker in itself, once.

innolab.gym.checker_pool starts it as `python3 -I -c <this file's source>` (in a local process or
in a container of the run's image) before any check needs it, so that a check does not wait for an
interpreter to start. It imports only what waiting and verifying need (the standard library's
atexit, base64, hashlib, json, os, runpy, sys; ctypes, to make itself undumpable), makes itself
undumpable (prctl(PR_SET_DUMPABLE, 0): a process of its user, such as an agent's command where
innolab is not root, can then neither trace it, nor read its environment or memory, nor open its
descriptors under /proc), writes READY on its standard output, and reads nothing but its standard
input: first its key, one line (sent by its starter once READY came, never in its environment or
command line, which any process of its user could read), then its order, one line of JSON,

    {"key", "argv", "cwd", "root", "files"?, "digests", "end"?}

which must carry that key. In `cwd`, it writes `files` (name: base64 content, names relative to
`root`), then reads back every file `digests` names and compares its sha256, and writes its report,
one line: {"altered": [names whose content differs]}. Only when none differs does it run argv[0]
as `__main__` with argv as sys.argv, its standard input /dev/null (sys.path as a script's under
`-I`; before Python 3.11, the script's folder first). What follows the report is the checker's.
Once the checker is done, it ends as the interpreter ends a script (non-daemon threads joined,
exit handlers run, output flushed, the exit status a script's) but without tearing its modules
down, which takes longer than many a check (`finish`); where the order has an `end` mark (fresh
for each check, so that no output can forge it), it writes it last on both its outputs. End of
input before an order (its run ended, however it ended) ends it with nothing run. It never takes a
second order: the process (or container) goes after its one check.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import json
import os
import runpy
import sys

READY = b"ready\n"  # its first output: it waits for its order now


def _path(root: str, name: str) -> str:
    """A file's path under root; a name that leaves it ends the waiter."""
    parts = name.split("/")
    if not name or name.startswith("/") or ".." in parts or "" in parts:
        raise SystemExit(f"checker: a file name that leaves its folder: {name!r}")
    return os.path.join(root, *parts)


def verify(order: dict) -> list[str]:
    """Write the order's files, then read back each file it has a digest of.

    Returns:
        The names whose content differs from their digest (or cannot be read).
    """
    root = str(order.get("root", "."))
    for name, data in (order.get("files") or {}).items():
        path = _path(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))
    altered = []
    for name, digest in (order.get("digests") or {}).items():
        try:
            with open(_path(root, name), "rb") as handle:
                found = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            found = ""
        if found != digest:
            altered.append(name)
    return altered


def status(code: object) -> int:
    """The exit status of `SystemExit(code)`, as the interpreter gives it (and prints a message)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def finish(code: int, end: str = "") -> None:
    """End the process as the interpreter ends a script, its modules left as they are.

    Args:
        code: The exit status.
        end: The order's end mark: written last on standard output and on standard error, each
            on a line of its own after a newline, so that its reader need not wait for the end of
            the process's streams (empty: none).
    """
    threading = sys.modules.get("threading")
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()  # the non-daemon threads, joined
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # a closed or replaced stream: nothing left to flush
            pass
    if end:
        for fd in (1, 2):
            os.write(fd, b"\n" + end.encode() + b"\n")
    os._exit(code)


def undumpable() -> None:
    """Make this process undumpable (prctl(PR_SET_DUMPABLE, 0)), or end it.

    A process of its user can then neither trace it nor read its memory or environment, nor open
    its descriptors under /proc (its input among them). Its checker's process stays so: runpy
    runs it in this process, with no exec.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        raise SystemExit(f"checker: prctl(PR_SET_DUMPABLE, 0) failed: errno {ctypes.get_errno()}")


def main() -> None:
    """Wait for the key and the order on standard input; verify the copy and run the checker."""
    undumpable()  # before READY: its starter sends the key only once READY came
    os.write(1, READY)
    key = sys.stdin.buffer.readline().strip().decode(errors="replace")
    line = sys.stdin.buffer.readline() if key else b""
    if not line:
        raise SystemExit(0)  # its run ended before it was used
    try:
        order = json.loads(line)
        argv = [str(arg) for arg in order["argv"]]
        cwd = str(order["cwd"])
    except (ValueError, KeyError, TypeError):
        raise SystemExit("checker: an order that is not {key, argv, cwd, ...}") from None
    if not key or order.get("key") != key:
        raise SystemExit("checker: an order without this checker's key")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # nothing more is read from innolab
    os.close(null)
    os.chdir(cwd)
    end = str(order.get("end") or "")
    altered = verify(order)
    os.write(1, (json.dumps({"altered": altered}) + "\n").encode())
    if altered:
        finish(0, end)
    sys.argv = argv
    if sys.path and sys.path[0] == "":  # `-c` before 3.11: a script has its own folder there
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    try:
        runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = status(stop.code)
    except BaseException:  # reported as the interpreter reports it
        sys.excepthook(*sys.exc_info())
        code = 1
    finish(code, end)


if __name__ == "__main__":
    main()
