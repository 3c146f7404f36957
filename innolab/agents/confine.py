"""The process of an agent framework, confined where the machine allows it.

A framework (innolab.agents.bridge) runs innolab's driver of it as `python -m
innolab.agents.confine DRIVER`. Where innolab runs as root, that process switches to a user id of
its own (innolab.gym.userids, as a local sandbox's commands do) before the driver is imported, with
a HOME and a working folder it owns outside the run folder; it then

* cannot read the runner's environment or memory (`/proc/<pid>/environ`, `/mem`: another user's)
  nor the embedded model's key (a file only innolab's user reads, innolab.llm.local), so it reaches
  the run's model only through the gateway, with the run's key;
* cannot write the run folder (trace, checkpoints, submissions: innolab's, not writable by others)
  or anything else of innolab's;
* cannot read the tasks' folders that innolab ships (known solutions, hidden data: a private mount
  hides `innolab/tasks/builtin` and the solvers), nor, where innolab runs from a checkout, any of
  it but what its Python needs (`checkout_entries`: not its history, `.git`, which holds every
  solution, nor `results/` and `data/`, which hold V*, scores and earlier submissions), nor
  root's home folder;
* gains no privilege (no_new_privs: a set-user-id program runs as the framework's user), and dies
  with the runner (the parent-death signal, and a warden: innolab.gym.leftovers).

Python and the packages it imports must be readable by that user. Where the interpreter lies under a
folder only innolab's user may enter (a Python under root's home), the process makes a private
mount namespace first: a folder of its own (tmpfs) over that folder, holding only what Python needs
(each entry on the way, bound from the real one), so that the interpreter's paths stay the same.
Where a step is not possible (no mount namespace in a container without CAP_SYS_ADMIN, a path that
other users cannot read) the framework would run as innolab's user, unconfined; so it would where
innolab does not run as root (there is no other user to switch to). Such a framework is not
started: the run ends as `agent_error` saying why (`refusal`; exit status REFUSED), unless the run
was made allowing it (INNOLAB_ALLOW_UNCONFINED=1: `allow_unconfined` in its config.json). Then it
runs as innolab's user, `confinement` in framework.json says so and why, and the runner makes
itself undumpable while it runs (another process of its user cannot read its environment or
memory), but the framework can read and write whatever innolab's user can.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import runpy
import signal
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

REFUSED = 78  # the exit status of a framework not started because it cannot be confined
PLAN_VAR = "INNOLAB_CONFINE"  # the plan (JSON), in the framework process's environment
PARENT_VAR = "INNOLAB_PARENT_PID"
STATUS_FILE = "confinement.json"  # what the process could do, in its private folder

# <sys/mount.h>, <sched.h>, <sys/prctl.h>
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 4096, 16384, 1 << 18
MNT_DETACH = 2
CLONE_NEWNS = 0x00020000
PR_SET_PDEATHSIG, PR_GET_DUMPABLE, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 3, 4, 38


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _call(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


# ------------------------------------------------------------------------------------- the plan


def needed_paths() -> tuple[list[Path], list[Path]]:
    """What the framework's Python reads.

    Returns:
        The paths it cannot do without (its interpreter, its prefixes, innolab, PYTHONPATH's
        entries), and those it may do without (the rest of this process's import paths: a
        framework's process has its own, from its prefixes, their .pth files and PYTHONPATH).
    """
    import innolab

    required = [Path(sys.executable), Path(sys.base_prefix), Path(sys.prefix),
                Path(innolab.__file__).resolve().parents[1]]
    required += [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    optional = [Path(p) for p in sys.path if p]

    def existing(paths: list[Path]) -> list[Path]:
        found = [p for p in paths if p.exists()]
        return list(dict.fromkeys([*found, *(p.resolve() for p in found)]))

    needed = existing(required)
    return needed, [p for p in existing(optional) if p not in needed]


def checkout_entries(packages: tuple[str, ...] = ()) -> tuple[Path, list[str]] | None:
    """The source checkout innolab runs from, and the only entries of it the framework sees.

    A checkout holds much more than Python: its history (`.git`: every known solution of every
    task, in every commit), `results/` (earlier runs: V*, their scores and submissions),
    `data/` (the paper's scores, sweep specs) and the built-in tasks. The framework's Python
    needs innolab's package, the checkout's entries on the way to any of its import paths
    (a virtual environment inside it) and the top-level package of its driver.

    Args:
        packages: Modules the framework runs (its driver): their top-level package is exposed
            where it lies in the checkout.

    Returns:
        The checkout and its entries to expose; None where innolab is installed, not run from a
        checkout (no pyproject.toml beside the package).
    """
    import innolab

    package = Path(innolab.__file__).resolve().parent
    checkout = package.parent
    if not (checkout / "pyproject.toml").is_file():
        return None
    entries = {package.name}
    required, optional = needed_paths()
    for path in [*required, *optional]:
        for candidate in {path, path.resolve()}:
            if candidate != checkout and candidate.is_relative_to(checkout):
                entries.add(candidate.relative_to(checkout).parts[0])
    for module in packages:
        top = module.split(".")[0]
        for entry in (top, f"{top}.py"):
            if (checkout / entry).exists():
                entries.add(entry)
    return checkout, sorted(entries)


def known_answers() -> list[Path]:
    """Folders holding known solutions, V* or scores that a framework must not see.

    The built-in tasks (their solutions) and the solvers behind them; where the project's
    folder (INNOLAB_ROOT) is not the checkout, its history, results and data (the checkout's are
    left out by `checkout_entries`); and a worktree's shared history.
    """
    import innolab
    from innolab.paths import project_root

    package = Path(innolab.__file__).resolve().parent
    found = [package / "tasks" / "builtin", package / "tasks" / "solvers"]
    for root in dict.fromkeys([project_root(), package.parent]):
        if root != package.parent:
            found += [root / ".git", root / "results", root / "data"]
        git = root / ".git"
        if git.is_file():  # a worktree: its history lies in the repository it was made from
            text = git.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                common = (root / text.removeprefix("gitdir:").strip()).resolve()
                found.append(common.parent.parent if common.parent.name == "worktrees"
                             else common)
    return found


def _others_may(path: Path, need: int) -> bool:
    """Whether a user that is neither the owner nor in the group has `need` (stat bits) on it."""
    try:
        return bool(path.stat().st_mode & need == need)
    except OSError:
        return False


def _route(path: Path) -> tuple[dict[str, set[str]], str | None]:
    """How another user reaches `path`, or why no mount can make it readable.

    Returns:
        Each folder on the way it may not pass, with the entry of it that leads there (exposed
        by a mount); and None, or why.
    """
    expose: dict[str, set[str]] = {}
    parts = path.parts
    for depth in range(1, len(parts)):
        above, entry = Path(*parts[:depth]), parts[depth]
        if not _others_may(above, stat.S_IXOTH):
            if above == Path("/"):
                return {}, "/ lets no other user pass"
            expose.setdefault(str(above), set()).add(entry)
    if not _others_may(path, stat.S_IROTH | (stat.S_IXOTH if path.is_dir() else 0)):
        return {}, f"{path} is not readable by other users"
    return expose, None


def plan(uid: int, home: Path, folder: Path, hide: list[Path],
         packages: tuple[str, ...] = ()) -> dict[str, Any]:
    """What the framework's process does before it runs its driver (see the module's docstring).

    Args:
        uid: The user id to switch to.
        home: Its HOME and working folder (owned by `uid`).
        folder: Its private folder (innolab's: staging mounts go there).
        hide: Folders to hide from it (an empty, read-only folder over each).
        packages: The modules it runs (`checkout_entries`).

    Returns:
        The plan: `uid`, `home`, `folder`, `expose` (each folder others cannot enter, with the
        entries of it that Python needs, outermost first), `hide`, and `unreachable` (why a path
        Python cannot do without cannot be made readable by another user; empty when all can).
        Where innolab runs from a checkout, the checkout is one of the folders in `expose`: the
        framework sees only the entries of it that its Python needs (`listable`: its folder may
        be listed, as Python's importer does with a folder on its path).
    """
    expose: dict[str, set[str]] = {}
    unreachable: list[str] = []
    required, optional = needed_paths()
    for path in [*required, *optional]:
        route, why = _route(path)
        if why is not None:
            if path in required:
                unreachable.append(why)
            continue  # an import path it may do without: left out
        for above, entries in route.items():
            expose.setdefault(above, set()).update(entries)
    checkout = checkout_entries(packages)
    listable = []
    if checkout is not None:  # of the checkout, only what Python needs
        expose.setdefault(str(checkout[0]), set()).update(checkout[1])
        listable.append(str(checkout[0]))
    ordered = sorted(expose.items(), key=lambda item: len(Path(item[0]).parts))
    return {"uid": uid, "home": str(home), "folder": str(folder),
            "expose": [[above, sorted(entries)] for above, entries in ordered],
            "listable": listable, "hide": [str(p) for p in hide if p.is_dir()],
            "unreachable": sorted(set(unreachable))}


# ------------------------------------------------------------------------------------ the child


def _mount(libc: Any, source: str | None, target: str, kind: str | None, flags: int,
           data: str | None = None) -> None:
    _call(libc.mount(source.encode() if source else None, target.encode(),
                     kind.encode() if kind else None, ctypes.c_ulong(flags),
                     data.encode() if data else None), f"mount {target}")


def _namespace(libc: Any, steps: dict[str, Any]) -> None:
    """A private mount namespace: each private folder's needed entries exposed, `hide` hidden."""
    _call(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    # nothing mounted here may reach the machine's own namespace
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    folder = Path(steps["folder"])
    for number, (above, entries) in enumerate(steps["expose"]):
        stage = folder / f"stage-{number}"
        stage.mkdir(mode=0o700)
        _mount(libc, above, str(stage), None, MS_BIND | MS_REC)
        # a folder on an import path is listed by Python's importer: the checkout's may be
        mode = "0755" if above in steps.get("listable", ()) else "0711"
        _mount(libc, "tmpfs", above, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size=64k")
        for entry in entries:
            source, target = stage / entry, Path(above) / entry
            if source.is_dir():
                target.mkdir()
            else:
                target.touch()
            _mount(libc, str(source), str(target), None, MS_BIND | MS_REC)
        _call(libc.umount2(str(stage).encode(), MNT_DETACH), f"umount {stage}")
        stage.rmdir()
    for hidden in steps["hide"]:
        _mount(libc, "tmpfs", hidden, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
               "mode=0555,size=4k")


def confine(steps: dict[str, Any]) -> dict[str, Any]:
    """Prepare a plan in this (the framework's) process, as far as the machine allows.

    The private mount namespace is made here; the change of user is `drop`'s, once the status is
    written where innolab reads it.

    Returns:
        What was done: `user` ("own" where `drop` is to switch to `uid`, else "innolab's"),
        `uid`, `why` (where not confined), `exposed`, `hidden`.
    """
    status: dict[str, Any] = {"user": "innolab's", "uid": os.geteuid(), "exposed": [],
                              "hidden": []}
    if os.geteuid() != 0 or steps.get("uid") is None:
        status["why"] = "innolab does not run as root: there is no other user to switch to"
        return status
    if steps["unreachable"]:
        status["why"] = "Python's files are not readable by another user: " + "; ".join(
            steps["unreachable"])
        return status
    if steps["expose"] or steps["hide"]:
        try:
            _namespace(_libc(), steps)
        except OSError as error:
            if steps["expose"]:  # Python cannot be reached as another user without it
                status["why"] = f"no private mount namespace for Python's files ({error})"
                return status
            status["hide_failed"] = str(error)
        else:
            status["exposed"] = [above for above, _ in steps["expose"]]
            status["hidden"] = list(steps["hide"])
    status.update(user="own", uid=int(steps["uid"]))
    return status


def refusal(status: dict[str, Any], allowed: bool) -> str | None:
    """Why the framework is not started (None: it is confined, or the run allows it unconfined).

    Unconfined is running as innolab's user (root, where innolab is), or with the folders of
    known solutions visible (`hide_failed`): it could then read the tasks' solutions, earlier
    runs' scores, and write what innolab's user may write. A run runs it so only where its
    setting `allow_unconfined` says it may.
    """
    why = status.get("why") if status.get("user") != "own" else (
        f"the tasks' solutions cannot be hidden ({status['hide_failed']})"
        if status.get("hide_failed") else None)
    if why is None or allowed:
        return None
    return (f"the framework was not started: it cannot be confined here ({why}); unconfined, "
            "it would run as innolab's user, able to read the tasks' known solutions and earlier "
            "runs' scores. A run made with INNOLAB_ALLOW_UNCONFINED=1 in the environment runs "
            "it so (allow_unconfined=true in its config.json and framework.json)")


def drop(uid: int) -> None:
    """Become `uid` (its own group, no other), for good: no privilege can be gained after."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _call(_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def _die_with_parent(parent: int) -> None:
    """The parent-death signal (Linux), then a check that the parent is still the runner."""
    with contextlib.suppress(OSError, AttributeError):
        _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        sys.exit(1)


def main() -> None:
    """`python -m innolab.agents.confine DRIVER`: confine this process, then run the driver."""
    parent = int(os.environ[PARENT_VAR])
    _die_with_parent(parent)
    steps = json.loads(os.environ.get(PLAN_VAR) or "{}")
    status = confine(steps) if steps else {"user": "innolab's", "why": "no plan"}
    refused = refusal(status, bool(steps.get("allow_unconfined")))
    if refused:
        status["refused"] = refused
    if steps.get("folder"):
        descriptor = os.open(Path(steps["folder"]) / STATUS_FILE,
                             os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(status, handle)
    if refused:
        print(refused, file=sys.stderr, flush=True)
        sys.exit(REFUSED)
    if status["user"] == "own":
        drop(status["uid"])
    _die_with_parent(parent)  # a change of user clears the parent-death signal: set again
    if steps.get("home"):
        os.chdir(steps["home"])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # its finally blocks still run
    driver = sys.argv.pop(1)
    runpy.run_module(driver, run_name="__main__", alter_sys=True)


# ----------------------------------------------------------------------------------- the runner


class Undumpable:
    """This process made undumpable while inside, its former setting restored after.

    Another process of its user then cannot read its environment or memory through /proc.
    """

    def __enter__(self) -> Undumpable:
        self._before: int | None = None
        try:
            libc = _libc()
            self._before = int(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
            if self._before > 0:
                _call(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
        except (OSError, AttributeError):
            self._before = None
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._before:
            with contextlib.suppress(OSError, AttributeError):
                _libc().prctl(PR_SET_DUMPABLE, self._before, 0, 0, 0)


def private_folder() -> Path:
    """A new folder of innolab's for one framework process.

    Named `innolab-ws-framework-*` (the reaper's prefix), so that what a killed run leaves goes.
    """
    return Path(tempfile.mkdtemp(prefix="innolab-ws-framework-")).resolve()


if __name__ == "__main__":
    main()
