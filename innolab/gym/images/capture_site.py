"""The sandbox's Python start-up hook: it logs which workspace files each Python process ran.

innolab copies this file into a sandbox as `sitecustomize.py`, on the PYTHONPATH of the sandbox's
commands, with a last line that calls `install(WORKSPACE, LOG, LIMIT)`. Every Python process of the
sandbox then installs an audit hook (PEP 578) that appends JSON lines to LOG:

* `proc`: the process (pid, parent pid, argv, working folder), before its first other record;
* `run`: what the interpreter was started to run (`cpython.run_file`, `cpython.run_module`,
  `cpython.run_command`);
* `code`: a workspace file whose code ran in the process (a script, an imported module, a module
  run by `-m`, a file run by `exec(open(...).read())`), with its text as it ran;
* `cell`: the persistent interpreter (innolab.gym.session) compiled an action (its code's sha256);
* `write` / `read`: a workspace file opened for writing (or renamed onto) / for reading;
* `spawn`: a subprocess started (its argv);
* `line` / `lines_end`, only where the process starts with INNOLAB_LINES=1 in its environment (the
  re-run of a stored program at scoring): a line of a workspace file that ran, once per line; and,
  at the process's exit, whether the line tracer was still the process's trace function
  (`intact`).

It is provenance, not scoring: innolab re-runs the program it builds from this log to check it. The
hook never raises and never changes what a program does; it depends on the standard library only
and runs under any Python 3.8+.
"""

import _thread
import hashlib
import json
import os
import sys
import time

MAX_TEXT = 400_000
LINES_VARIABLE = "INNOLAB_LINES"  # "1": the process logs which workspace lines ran
WATCHED = {"cpython.run_file", "cpython.run_module", "cpython.run_command", "exec", "compile",
           "open", "os.rename", "subprocess.Popen", "os.exec", "os.posix_spawn"}
CELL_FILENAME = "<action>"


class _Capture:
    """One process's capture state: the log's descriptor and what it has logged already."""

    def __init__(self, workspace, log, limit):
        self.workspace = os.path.realpath(workspace)
        self.prefix = self.workspace.rstrip("/") + "/"
        self.log = log
        self.limit = limit
        self.fd = None
        self.pid = None
        self.busy = set()
        self.seen = set()
        self.sources = {}

    def _start(self):
        """Begin a process's records (again after a fork): its `proc` record first."""
        self.pid = os.getpid()
        self.seen = set()
        self.sources = {}
        if self.fd is None:
            self.fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        argv = list(getattr(sys, "argv", None) or [])
        self._write({"k": "proc", "ppid": os.getppid(), "argv": argv[:50],
                     "orig_argv": list(getattr(sys, "orig_argv", []) or [])[:50],
                     "cwd": self._relative(os.getcwd(), allow_outside=True)})

    def _write(self, record):
        size = os.fstat(self.fd).st_size
        if size > self.limit:
            return  # the log is full: nothing more is logged
        if size > self.limit // 2 and record.get("text") is not None:
            text = record["text"].encode("utf-8", "replace")
            record["text"], record["sha"] = None, hashlib.sha256(text).hexdigest()
        record["pid"] = self.pid
        record["t"] = round(time.time(), 6)
        os.write(self.fd, (json.dumps(record) + "\n").encode("utf-8"))

    def emit(self, record, key=None):
        """Append a record once per key (None: always); a new process begins with its `proc`."""
        if self.pid != os.getpid():
            self._start()
        if key is not None:
            if key in self.seen:
                return
            self.seen.add(key)
        self._write(record)

    def _relative(self, path, allow_outside=False):
        """A path as workspace-relative, or None outside the workspace (the path when allowed)."""
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return None
        if path.startswith("/") and not path.startswith(self.prefix) and "/.." not in path \
                and path != self.workspace:
            return path if allow_outside else None  # the common case, decided at once
        absolute = os.path.normpath(os.path.join(os.getcwd(), path))
        if absolute == self.workspace:
            return "."
        if absolute.startswith(self.prefix):
            return absolute[len(self.prefix):]
        return absolute if allow_outside else None

    def _text(self, relative):
        try:
            with open(os.path.join(self.workspace, relative), "rb") as handle:
                data = handle.read(MAX_TEXT + 1)
        except OSError:
            return None
        return data.decode("utf-8", "replace") if len(data) <= MAX_TEXT else None

    def hook(self, event, args):
        """The audit hook: one event of the process."""
        if event not in WATCHED:
            return
        thread = _thread.get_ident()
        if thread in self.busy:  # the hook's own file reads and writes
            return
        self.busy.add(thread)
        try:
            self._event(event, args)
        except Exception:  # the hook never breaks the program it watches
            pass
        finally:
            self.busy.discard(thread)

    def _event(self, event, args):
        if event == "exec":
            filename = getattr(args[0], "co_filename", "")
            relative = self._relative(filename) if not filename.startswith("<") else None
            if relative is not None:
                text = self._text(relative)
                self.emit({"k": "code", "path": relative, "text": text}, ("code", relative, text))
        elif event == "compile":
            self._compiled(args[0], args[1])
        elif event == "open":
            self._opened(args[0], args[1], args[2])
        elif event == "os.rename":
            relative = self._relative(args[1])
            if relative is not None:
                self.emit({"k": "write", "path": relative, "append": False},
                          ("write", relative, False))
        elif event == "cpython.run_file":
            self.emit({"k": "run", "how": "file", "path": self._relative(args[0], True)})
        elif event == "cpython.run_module":
            self.emit({"k": "run", "how": "module", "module": str(args[0])})
        elif event == "cpython.run_command":
            command = args[0] if isinstance(args[0], str) else os.fsdecode(args[0])
            self.emit({"k": "run", "how": "command", "code": command[:MAX_TEXT]})
        elif event in ("subprocess.Popen", "os.exec", "os.posix_spawn"):
            argv = args[1] if len(args) > 1 else args[0]
            argv = [argv] if isinstance(argv, (str, bytes)) else list(argv or [])
            self.emit({"k": "spawn", "argv": [os.fsdecode(a) if isinstance(a, bytes) else str(a)
                                              for a in argv][:50]})

    def _compiled(self, source, filename):
        if source is None:
            return
        if isinstance(source, (bytes, bytearray, memoryview)):
            source = bytes(source).decode("utf-8", "replace")
        if not isinstance(source, str):
            return  # an AST: not a text that ran from a file
        if filename == CELL_FILENAME:
            digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
            self.emit({"k": "cell", "sha": digest})
            self.seen = set()  # each action's files are logged anew
            return
        if not isinstance(filename, str) or not filename.startswith("<"):
            return
        for relative, text in list(self.sources.items()):  # exec(open(f).read()) and the like
            if text is not None and text.strip() and text == source:
                self.emit({"k": "code", "path": relative, "text": text, "via": "exec"},
                          ("code", relative, text))
                return

    def _opened(self, path, mode, flags):
        if isinstance(path, int):
            return
        relative = self._relative(path)
        if relative is None or "__pycache__/" in relative:
            return
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR))
        if writing:
            append = (isinstance(mode, str) and "a" in mode) or (
                mode is None and bool(flags & os.O_APPEND))
            self.emit({"k": "write", "path": relative, "append": append},
                      ("write", relative, append))
            return
        if relative.endswith(".py") and len(self.sources) < 256:
            self.sources[relative] = self._text(relative)
        self.emit({"k": "read", "path": relative}, ("read", relative))


class _Lines:
    """Line coverage of the workspace's files: the first run of each line is logged once.

    A code object stops being traced once each of its lines has run, so that a hot loop costs
    little after its first pass.
    """

    def __init__(self, capture):
        self.capture = capture
        self.seen = set()
        self.files = {}
        self.left = {}

    def relative(self, filename):
        """A code object's file as workspace-relative (None: not a workspace file)."""
        if filename not in self.files:
            self.files[filename] = None if filename.startswith("<") \
                else self.capture._relative(filename)
        return self.files[filename]

    def call(self, frame, event, arg):
        """The global trace function: trace the frames of workspace code with lines left."""
        try:
            return self._call(frame)
        except Exception:  # never break the program: a frame it cannot trace is left alone
            return None

    def _call(self, frame):
        code = frame.f_code
        if self.relative(code.co_filename) is None:
            return None
        left = self.left.get(code)
        if left is None:
            left = {line for _, _, line in code.co_lines() if line is not None}
            if code.co_name != "<module>":
                left.discard(code.co_firstlineno)  # the def line runs in the defining frame
            left -= {n for f, n in self.seen if f == code.co_filename}
            self.left[code] = left
        return self.line if left else None

    def line(self, frame, event, arg):
        """The local trace function: log a line's first run."""
        if event != "line":
            return self.line
        try:
            return self._line(frame)
        except Exception:
            return self.line

    def _line(self, frame):
        code = frame.f_code
        key = (code.co_filename, frame.f_lineno)
        if key not in self.seen:
            self.seen.add(key)
            self.capture.emit({"k": "line", "path": self.relative(code.co_filename),
                               "n": frame.f_lineno})
        left = self.left.get(code)
        if left is not None:
            left.discard(frame.f_lineno)
            if not left:
                frame.f_trace = None  # every line of this code has run: no more events
                return None
        return self.line

    def end(self):
        """At exit: say whether this tracer was still the process's trace function."""
        self.capture.emit({"k": "lines_end", "intact": sys.gettrace() == self.call})


def _trace_lines(capture):
    import atexit
    import threading

    if not hasattr(_trace_lines.__code__, "co_lines"):
        return  # Python before 3.10: no line table to know when a code object is done

    lines = _Lines(capture)
    sys.settrace(lines.call)
    threading.settrace(lines.call)
    atexit.register(lines.end)


def install(workspace, log, limit=64_000_000):
    """Install the capture hook for this process, then the sitecustomize it stands in front of.

    Args:
        workspace: the sandbox's workspace folder.
        log: the capture log (appended to, one JSON line per record).
        limit: the log's largest size in bytes; past half of it, files' texts are left out (innolab
            then reads them from the workspace), past it nothing more is logged.
    """
    try:
        capture = _Capture(workspace, log, limit)
        sys.addaudithook(capture.hook)
        if os.environ.get(LINES_VARIABLE) == "1":
            _trace_lines(capture)
    except Exception:
        pass
    _chain()


def _chain():
    """Run the sitecustomize this file hides on sys.path, as Python would have."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import importlib.machinery
        import importlib.util

        rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
    except Exception:
        pass
