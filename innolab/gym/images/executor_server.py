r"""The sandbox's command executor: one long-lived process that runs each requested command.

innolab starts it once per sandbox (`innolab.gym.executor`) as `python3 -I -S -c SOURCE CONFIG`:
in a Docker sandbox by one `docker exec` as the container's root, its requests and replies on that
exec's attached stream; in a local sandbox as innolab's child, over pipes. It reads requests on its
standard input and answers on its standard output, which it moves off descriptors 0 and 1 before
anything else (no command inherits them; a command's output travels inside frames, as data).

Every message is a frame: two big-endian 32-bit lengths, a JSON header of the first length and a
body of the second. Requests:

* `{"id", "op": "exec", "argv", "timeout", "env"?, "cwd"?}`: run `argv` in a process group of its
  own, as CONFIG's uid/gid (no supplementary groups), in `cwd`, with `env`, stdin /dev/null;
  its output is forwarded as it comes (`out`/`err` frames, the bytes as body); at the deadline, or
  when its process ends and its outputs close, it ends: `{"id", "kind": "done", "code",
  "timed_out"}`. Past the deadline its process group is killed (SIGKILL) and `code` is CONFIG's
  `timeout_code`. A command that cannot start: code 127, the reason on its standard error.
* `{"id", "op": "capture", "offset"}`: the bytes of CONFIG's `capture_log` from `offset` on.
* `{"id", "op": "listing"}`: the folders and regular files under CONFIG's `cwd`, no link followed,
  as `find -printf '%y %m %s %T@ %C@ %i %P\0'` prints them (kind, permission bits in octal,
  size, modification and status-change times in seconds with 9 decimals, inode, path): a
  checkpoint compares the ctime and inode too, since a command can put a file's mtime back
  (`touch -r`) but not its ctime.
* `{"id", "op": "read", "path", "max_bytes"}`: a regular file's bytes, `path` relative to
  CONFIG's `cwd`, no link followed on the way (each folder opened from its parent's descriptor
  with O_NOFOLLOW, the file too); a missing file, a link, anything but a regular file, or one
  over `max_bytes` is an error whose header also names its `errno` (ENOENT, ELOOP, ...), or
  "EFBIG" and "ENOTREG" for the last two.
* `{"id", "op": "ping"}`: an empty `done` (the executor is up).

With CONFIG's `undumpable`, it makes itself undumpable first (prctl), so that commands of its own
user can neither trace it nor open its descriptors; a command's process is dumpable again (exec).
With `detach_terminal`, it gives up its controlling terminal (it runs in innolab's session), so
that no command has one.

With `kill_leftovers` (where it runs as root and the commands as CONFIG's uid), it first kills
every process of that uid: what the commands of an executor that was killed left running.

A request that fails answers `{"id", "kind": "done", "error": text}`. End of input (or SIGTERM)
ends it, and kills the process groups of the commands still running first: no command outlives
its executor.
It depends on the standard library only and runs under any Python 3.8+.
"""

import contextlib
import json
import os
import selectors
import signal
import stat
import struct
import subprocess
import sys
import threading
import time

FRAME = struct.Struct(">II")
CHUNK = 65536
# a process group of its own (killed whole past the deadline), in the executor's session, which
# has no terminal; not a session of its own: where the kernel groups sessions for scheduling
# (autogroup), a new session costs a loaded machine milliseconds a command
OWN_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}
DRAIN_S = 1.0  # after a kill, how long outputs still held open (by an escaped process) are read
KILL_ROUNDS = 20  # `kill_leftovers`: a forking process may need several
RUNNING = set()  # the process groups of the commands running now
RUNNING_LOCK = threading.Lock()
STOPPING = []  # not empty once the executor stops: a command that starts meanwhile is killed


class Channel:
    """The executor's end of the stream: framed reads, framed writes under a lock."""

    def __init__(self, read_fd, write_fd):
        self.read_fd, self.write_fd = read_fd, write_fd
        self.lock = threading.Lock()

    def read_exactly(self, size):
        """`size` bytes of input, or None at its end."""
        parts, left = [], size
        while left:
            data = os.read(self.read_fd, min(left, 1 << 20))
            if not data:
                return None
            parts.append(data)
            left -= len(data)
        return b"".join(parts)

    def receive(self):
        """The next request's header and body, or None at the end of input."""
        head = self.read_exactly(FRAME.size)
        if head is None:
            return None
        header_size, body_size = FRAME.unpack(head)
        header = self.read_exactly(header_size)
        body = self.read_exactly(body_size) if body_size else b""
        if header is None or body is None:
            return None
        return json.loads(header.decode("utf-8")), body

    def send(self, header, body=b""):
        """Write one frame whole (frames of concurrent requests never interleave)."""
        encoded = json.dumps(header).encode("utf-8")
        data = memoryview(FRAME.pack(len(encoded), len(body)) + encoded + body)
        with self.lock:
            while data:
                data = data[os.write(self.write_fd, data):]


def exit_code(returncode, signal_codes):
    """A command's exit status; one killed by a signal as `shell` (128 + n) or Python (-n) says."""
    if returncode < 0 and signal_codes == "shell":
        return 128 - returncode
    return returncode


def kill_group(pid):
    """Kill a command's process group (it was started in one of its own)."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def stop(code=0):
    """Kill the process groups of the commands still running, then end at once."""
    with RUNNING_LOCK:
        STOPPING.append(True)
        groups = list(RUNNING)
    for group in groups:
        kill_group(group)
    os._exit(code)


def kill_user(uid):
    """SIGKILL every process of a uid (found under /proc), again until none is left."""
    for _ in range(KILL_ROUNDS):
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                with open(f"/proc/{name}/status") as status:
                    uids = next(line for line in status if line.startswith("Uid:")).split()[1:]
            except (OSError, StopIteration):
                continue  # gone meanwhile
            if str(uid) in uids:
                found.append(int(name))
        if not found:
            return
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def pump(channel, request_id, process, deadline):
    """Forward a command's outputs until both close or the deadline passes.

    Returns:
        Whether the deadline passed first.
    """
    streams = {process.stdout.fileno(): "out", process.stderr.fileno(): "err"}
    with selectors.DefaultSelector() as selector:
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            for key, _ in selector.select(left):
                data = os.read(key.fd, CHUNK)
                if data:
                    channel.send({"id": request_id, "kind": streams[key.fd]}, data)
                else:
                    selector.unregister(key.fd)
    return False


def drain(channel, request_id, process):
    """After a kill: forward what is left in the outputs, for at most DRAIN_S."""
    pump(channel, request_id, process, time.monotonic() + DRAIN_S)


def run_command(channel, config, request):
    """Run one command (see the module's docstring) and answer `done`."""
    request_id = request["id"]
    argv = request["argv"]
    start = time.monotonic()
    deadline = start + max(float(request["timeout"]), 0.0)
    user = {}
    if config.get("uid") is not None:
        user = {"user": config["uid"], "group": config["gid"], "extra_groups": []}
    try:
        process = subprocess.Popen(
            argv, cwd=request.get("cwd") or config["cwd"],
            env=request.get("env") or config.get("env") or dict(os.environ),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            **OWN_GROUP, **user)
    except OSError as error:
        name = argv[0] if argv else ""
        channel.send({"id": request_id, "kind": "err"},
                     f"{name}: {error.strerror}\n".encode("utf-8", "replace"))
        channel.send({"id": request_id, "kind": "done", "code": 127, "timed_out": False})
        return
    with RUNNING_LOCK:
        RUNNING.add(process.pid)
        if STOPPING:  # the executor stops: this command must not outlive it
            kill_group(process.pid)
    try:
        timed_out = finish(channel, request_id, process, deadline)
    finally:
        with RUNNING_LOCK:
            RUNNING.discard(process.pid)
    code = config.get("timeout_code", 124) if timed_out else exit_code(
        process.returncode, config.get("signal_codes", "python"))
    channel.send({"id": request_id, "kind": "done", "code": code, "timed_out": timed_out})


def finish(channel, request_id, process, deadline):
    """Forward a started command's outputs until it ends, or kill its group at the deadline.

    Returns:
        Whether the deadline passed first.
    """
    with process:
        timed_out = pump(channel, request_id, process, deadline)
        if not timed_out:
            try:
                process.wait(max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                timed_out = True
        if timed_out:
            kill_group(process.pid)
            drain(channel, request_id, process)
            process.wait()
    return timed_out


def read_capture(config, request):
    """The capture log's bytes from an offset on (empty where there is no log)."""
    path = config.get("capture_log")
    if not path:
        return b""
    try:
        with open(path, "rb") as log:
            log.seek(int(request.get("offset", 0)))
            return log.read()
    except OSError:
        return b""


def listing(config):
    r"""The workspace's folders and regular files, as find prints them (the module's docstring).

    Each folder is opened from its parent's descriptor without following a link, so that a folder
    swapped for a link meanwhile is never walked through. A folder that cannot be read is an error.
    """
    records = []

    def walk(folder, prefix):
        with os.scandir(folder) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    kind = b"d"
                elif stat.S_ISREG(info.st_mode):
                    kind = b"f"
                else:
                    continue
                name = prefix + os.fsencode(entry.name)
                seconds, nanoseconds = divmod(info.st_mtime_ns, 10**9)
                c_seconds, c_nanoseconds = divmod(info.st_ctime_ns, 10**9)
                records.append(b"%s %o %d %d.%09d %d.%09d %d %s\0" % (
                    kind, stat.S_IMODE(info.st_mode), info.st_size, seconds, nanoseconds,
                    c_seconds, c_nanoseconds, info.st_ino, name))
                if kind == b"d":
                    inner = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                                    dir_fd=folder)
                    try:
                        walk(inner, name + b"/")
                    finally:
                        os.close(inner)

    root = os.open(config["cwd"], os.O_RDONLY | os.O_DIRECTORY)
    try:
        walk(root, b"")
    finally:
        os.close(root)
    return b"".join(records)


class ReadError(Exception):
    """A file `read` refuses, with the errno name its answer carries."""

    def __init__(self, name, text):
        super().__init__(text)
        self.name = name


def read_file(config, request):
    """A regular file's bytes under CONFIG's `cwd`, no link followed (the module's docstring)."""
    parts = [part for part in str(request.get("path", "")).split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise ReadError("EINVAL", "the path must name a file inside the workspace")
    limit = int(request.get("max_bytes") or 0)
    try:
        folder = os.open(config["cwd"], os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in parts[:-1]:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
                os.close(folder)
                folder = inner
            descriptor = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK,
                                 dir_fd=folder)
        finally:
            os.close(folder)
    except OSError as error:
        import errno

        raise ReadError(errno.errorcode.get(error.errno, "EIO"), error.strerror) from None
    info = os.fstat(descriptor)  # before fdopen (which refuses a folder) and any read
    refused = (("ENOTREG", "not a regular file") if not stat.S_ISREG(info.st_mode)
               else ("EFBIG", f"larger than {limit} bytes") if limit and info.st_size > limit
               else None)
    if refused:
        os.close(descriptor)
        raise ReadError(*refused)
    with os.fdopen(descriptor, "rb") as handle:
        data = handle.read(limit + 1) if limit else handle.read()
    if limit and len(data) > limit:
        raise ReadError("EFBIG", f"larger than {limit} bytes")
    return data


def answer(channel, config, request):
    """Serve one request; a failure is answered, never raised."""
    try:
        op = request.get("op")
        if op == "exec":
            run_command(channel, config, request)
            return
        if op == "capture":
            body = read_capture(config, request)
        elif op == "listing":
            body = listing(config)
        elif op == "read":
            try:
                body = read_file(config, request)
            except ReadError as error:
                channel.send({"id": request["id"], "kind": "done", "error": str(error),
                              "errno": error.name})
                return
        elif op == "ping":
            body = b""
        else:
            raise ValueError(f"unknown request {op!r}")
        channel.send({"id": request["id"], "kind": "done"}, body)
    except Exception as error:  # the request fails, the executor stays
        channel.send({"id": request.get("id"), "kind": "done",
                      "error": f"{type(error).__name__}: {error}"})


def undumpable():
    """Make this process undumpable (where the commands share the executor's user).

    A process of its user can then neither trace it nor open its descriptors under /proc.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def detach_terminal():
    """Give up the controlling terminal, if any: no command started after has one (TIOCNOTTY)."""
    import fcntl
    import termios

    try:
        terminal = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return  # none
    try:
        fcntl.ioctl(terminal, termios.TIOCNOTTY)
    finally:
        os.close(terminal)


def main():
    """Serve requests until the end of input."""
    config = json.loads(sys.argv[1])
    if config.get("undumpable"):
        undumpable()
    if config.get("detach_terminal"):
        detach_terminal()
    if config.get("kill_leftovers") and config.get("uid") not in (None, 0) and os.geteuid() == 0:
        kill_user(config["uid"])
    signal.signal(signal.SIGTERM, lambda number, frame: stop(128 + number))
    # the stream moves off 0 and 1 (descriptors no command inherits); 0 and 1 become /dev/null
    read_fd, write_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    channel = Channel(read_fd, write_fd)
    while True:
        message = channel.receive()
        if message is None:
            break
        request, _ = message
        try:
            threading.Thread(target=answer, args=(channel, config, request), daemon=True).start()
        except RuntimeError as error:  # no thread to be had (the process limit reached)
            channel.send({"id": request.get("id"), "kind": "done",
                          "error": f"the executor could not start the request: {error}"})
    stop()


if __name__ == "__main__":
    main()
