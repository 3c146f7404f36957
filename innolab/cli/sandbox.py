"""`innolab sandbox`: build the offline image, run a command in a task's sandbox, clean up."""

from __future__ import annotations

import argparse
import sys

from innolab.cli.common import Commands, fail, group

# the command `register` adds, with its help (innolab.cli.build_parser adds it by these alone where
# another command is about to be parsed: the run schema is slow to import)
COMMANDS = {"sandbox": "sandboxes: build the offline image, run a command"}


def register(commands: Commands) -> None:
    """Add `sandbox build-image|exec|clean`.

    Args:
        commands: The parent parser's subparsers.
    """
    from innolab.runspec import add_options

    sub = group(commands, "sandbox", COMMANDS["sandbox"])
    build = sub.add_parser(
        "build-image", help="build the offline base image (debootstrap + docker import)"
    )
    build.add_argument("--tag", default=None,
                       help="the image's tag (default innolab/base:latest; with --gpu "
                       "innolab/gpu:latest)")
    build.add_argument("--gpu", action="store_true",
                       help="the image of `gpu` tasks: PyTorch's GPU build from the package index")
    build.set_defaults(handler=build_image)
    sexec = sub.add_parser(
        "exec", help="run one command in a fresh sandbox of a task, as an agent would"
    )
    add_options(sexec, only=("task", "runtime", "image"), required=("task",))
    sexec.add_argument("--timeout", type=float, default=120.0)
    sexec.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD...")
    sexec.set_defaults(handler=execute)
    clean_cmd = sub.add_parser(
        "clean",
        help="remove what ended runs left: sandbox and validator folders in the "
        "temporary folder and their processes (and, with --docker, containers, volumes)",
    )
    clean_cmd.add_argument(
        "--docker", action="store_true", help="also Docker containers and volumes of ended runs"
    )
    clean_cmd.set_defaults(handler=clean)


def build_image(args: argparse.Namespace) -> int:
    """Build the offline base image."""
    from innolab.gym.image import build_base_image

    return build_base_image(args.tag, gpu=args.gpu)


def execute(args: argparse.Namespace) -> int:
    """One command in a fresh sandbox of the task; its output and exit status are the command's."""
    from innolab.gym.factory import open_sandbox
    from innolab.gym.sandbox import SandboxError
    from innolab.runspec import SettingsError, settings_from_args
    from innolab.tasks import get_task

    command = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not command:
        return fail("sandbox exec", "give a command after --")
    try:
        settings = settings_from_args(args)
        sandbox = open_sandbox(get_task(settings.task), settings.runtime, settings.image)
    except (SandboxError, SettingsError) as error:
        return fail("sandbox exec", error)
    try:
        result = sandbox.exec(command, timeout_s=args.timeout)
    finally:
        sandbox.close()
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


def clean(args: argparse.Namespace) -> int:
    """Remove what ended runs left, and say what was removed."""
    from innolab.gym.leftovers import reap

    client = None
    if args.docker:
        from innolab.gym.docker_sandbox import docker_client
        from innolab.gym.sandbox import SandboxError

        try:
            client = docker_client()
        except SandboxError as error:
            return fail("sandbox clean", error)
    reaped = reap(docker_client=client)
    for folder in reaped.folders:
        print(f"removed {folder}")
    for kind, names in (("container", reaped.containers), ("volume", reaped.volumes)):
        for name in names:
            print(f"removed Docker {kind} {name}")
    print(
        f"{len(reaped.folders)} folders, {reaped.processes} processes, "
        f"{len(reaped.containers)} containers "
        f"and {len(reaped.volumes)} volumes of ended runs removed"
    )
    return 0
