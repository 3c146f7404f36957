"""A persistent Python interpreter in a sandbox (CodeAct's trait): state survives between actions.

A small server runs in the background in the sandbox, as the agent's user, with the workspace as its
working directory; it executes each action's code in one global namespace and answers over a Unix
socket in the sandbox's own temporary folder (`sandbox.tmp_dir`, removed with the sandbox). Each
action is one `sandbox.exec` of a small client that sends the code and prints the reply, so the
session works through the sandbox protocol alone, in the local and the Docker runtimes. An action
that outlives its time limit is interrupted (SIGINT, a KeyboardInterrupt in the action) and the
interpreter keeps its state; one that ignores the interrupt gets the interpreter killed and
restarted, which the output says. The interpreter is one of the sandbox's processes: it is killed
with them when the sandbox closes or when the run that opened it ends, however it ends
(innolab.gym.leftovers).
"""

from __future__ import annotations

import json
import secrets
import time

from innolab.gym.sandbox import Sandbox

SERVER = r'''
import contextlib, io, json, os, signal, socket, sys, traceback
path = sys.argv[1]
namespace = {"__name__": "__main__"}
# a background job starts with SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
with open(path + ".pid", "w") as handle:
    handle.write(str(os.getpid()))
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(1)
while True:
    connection, _ = server.accept()
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
    code = json.loads(data or b'""')
    buffer = io.StringIO()
    status = "ok"
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            try:
                exec(compile(code, "<action>", "exec"), namespace)
            except KeyboardInterrupt:
                status = "interrupted"
                print("KeyboardInterrupt: the action was interrupted at its time limit; "
                      "the interpreter keeps its state", file=sys.stderr)
            except SystemExit as stop:
                status = "error" if stop.code not in (None, 0) else "ok"
            except BaseException:
                status = "error"
                traceback.print_exc()
    except KeyboardInterrupt:
        status = "interrupted"
    try:
        connection.sendall(
            (json.dumps({"status": status, "output": buffer.getvalue()[-200000:]}) + "\n").encode())
    except OSError:
        pass
    connection.close()
'''

CLIENT = r'''
import json, os, signal, socket, sys, time
path, limit, grace, code = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
for _ in range(100):
    try:
        client.connect(path)
        break
    except OSError:
        time.sleep(0.05)
else:
    print(json.dumps({"status": "dead", "output": "the interpreter is not running"}))
    sys.exit(0)
client.sendall((json.dumps(code) + "\n").encode())
client.settimeout(limit)
data = b""
interrupted = False
while not data.endswith(b"\n"):
    try:
        chunk = client.recv(65536)
    except socket.timeout:
        if interrupted:
            print(json.dumps({"status": "hung", "output": ""}))
            sys.exit(0)
        interrupted = True
        os.kill(int(open(path + ".pid").read()), signal.SIGINT)
        client.settimeout(grace)
        continue
    if not chunk:
        break
    data += chunk
reply = json.loads(data or b'{"status": "dead", "output": "the interpreter stopped"}')
if interrupted and reply["status"] == "ok":
    reply["status"] = "interrupted"
print(json.dumps(reply))
'''

START_GRACE_S = 10.0
REPLAY_TIMEOUT_S = 120.0
MAX_CODE_BYTES = 100_000  # one argv string (Linux allows 128 KiB)


class SessionError(RuntimeError):
    """The interpreter could not be started in the sandbox."""


class PythonSession:
    """One persistent interpreter in one sandbox, started on first use.

    Attributes:
        sandbox: The sandbox it runs in.
        replay: Code already run in this session before a resume, rerun on start.
        path: The server's Unix socket in the sandbox.
        started: Whether the interpreter is running.
        restarts: How many times it was killed and restarted.
    """

    def __init__(self, sandbox: Sandbox, replay: list[str] | None = None) -> None:
        """Prepare a session; nothing starts until the first action.

        Args:
            sandbox: The sandbox to run in.
            replay: The actions' code already run before a resume, rerun in order on start.
        """
        self.sandbox = sandbox
        # code already run in this session before a resume: rerun on start
        self.replay = list(replay or [])
        self.path = f"{sandbox.tmp_dir}/innolab-session-{secrets.token_hex(6)}.sock"
        self.started = False
        self.restarts = 0

    def start(self) -> None:
        """Start the interpreter and rerun the replayed actions.

        Raises:
            SessionError: The interpreter could not be started, or did not answer within 10 s.
        """
        script = 'rm -f "$1" "$1.pid"; nohup python3 -c "$0" "$1" >/dev/null 2>&1 </dev/null &'
        result = self.sandbox.exec(["/bin/bash", "-c", script, SERVER, self.path], timeout_s=30)
        if result.returncode != 0:
            raise SessionError(f"could not start the interpreter: {result.stderr.strip()[-500:]}")
        deadline = time.monotonic() + START_GRACE_S
        while time.monotonic() < deadline:
            probe = self.sandbox.exec(["test", "-S", self.path], timeout_s=10)
            if probe.returncode == 0:
                self.started = True
                self._replay()
                return
            time.sleep(0.05)
        raise SessionError("the interpreter did not start within 10 s")

    def _replay(self) -> None:
        """Rebuild the interpreter's state after a resume: rerun the recorded actions in order."""
        history, self.replay = self.replay, []
        for code in history:
            self.run(code, REPLAY_TIMEOUT_S)

    def run(self, code: str, timeout_s: float) -> tuple[str, bool, dict[str, object]]:
        """Execute code in the interpreter, starting it if needed.

        An action that outlives its limit is interrupted; one that ignores the interrupt gets the
        interpreter killed and restarted (its variables lost), which the output says.

        Args:
            code: The action's Python code (at most MAX_CODE_BYTES).
            timeout_s: The action's time limit in seconds, answer included.

        Returns:
            The output, whether the action succeeded, and extra fields for the tool's event
            (status, restarted), as a tool reports them.

        Raises:
            SessionError: The interpreter could not be (re)started.
        """
        if not self.started:
            self.start()
        if len(code.encode("utf-8")) > MAX_CODE_BYTES:
            return (f"error: an action holds at most {MAX_CODE_BYTES} bytes of code", False,
                    {"status": "refused"})
        # time left, within timeout_s, to interrupt and hear back
        margin = min(8.0, 0.25 * timeout_s)
        limit, grace = max(timeout_s - margin, 0.2), 0.7 * margin
        argv = ["python3", "-c", CLIENT, self.path, f"{limit:.3f}", f"{grace:.3f}", code]
        result = self.sandbox.exec(argv, timeout_s=timeout_s)
        try:
            reply = json.loads(result.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            reply = {"status": "dead", "output": (result.stdout + result.stderr)[-2000:]}
        status, output = reply["status"], reply["output"]
        if status in ("hung", "dead") or result.timed_out:
            self.kill()
            self.restarts += 1
            note = (f"[the action did not stop at its time limit ({limit:.0f} s): the interpreter "
                    "was killed and restarted; its variables are lost]") if status != "dead" else (
                "[the interpreter had stopped: it was restarted; its variables are lost]")
            self.start()
            return f"{output}\n{note}", False, {"status": status, "restarted": True}
        if status == "interrupted":
            output += f"\n[interrupted after {limit:.0f} s; the interpreter keeps its state]"
        return output, status == "ok", {"status": status}

    def kill(self) -> None:
        """Kill the interpreter (its state is lost); the next action starts a new one."""
        if self.started:
            self.sandbox.exec(["/bin/bash", "-c",
                               'kill -9 "$(cat "$0.pid")" 2>/dev/null; rm -f "$0" "$0.pid"',
                               self.path], timeout_s=10)
        self.started = False

    def close(self) -> None:
        """Kill the interpreter; a sandbox that is already gone is no error."""
        try:
            self.kill()
        except Exception:  # closing a sandbox that is already gone
            self.started = False
