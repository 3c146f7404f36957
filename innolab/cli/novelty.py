"""`innolab novelty`: distances between methods, the back ends' validation, method cards."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from innolab.cli.common import Commands, fail, group


def register(commands: Commands) -> None:
    """Add `novelty distance|validate|card` (back-end choices from the back-end registry).

    Args:
        commands: The parent parser's subparsers.
    """
    from innolab.novelty.registry import BACKENDS

    sub = group(commands, "novelty", "method cards and novelty distances (DAGENT and others)")
    dist = sub.add_parser(
        "distance", help="distance 0-100 between two method descriptions or programs"
    )
    dist.add_argument(
        "--backend",
        choices=BACKENDS,
        default=None,
        help="default: llm where $INNOLAB_LLM_BASE_URL is set, else ast (prints the distance last)",
    )
    dist.add_argument("file_a", metavar="FILE_A")
    dist.add_argument("file_b", metavar="FILE_B")
    dist.set_defaults(handler=distance)
    val = sub.add_parser(
        "validate",
        help="every back end on the project's full triplet set: agreement, "
        "means, Spearman where human scores exist, Krippendorff's alpha with >= 2 judges",
    )
    val.add_argument(
        "--backend",
        action="append",
        choices=BACKENDS,
        help="repeat for several (default: ast, tfidf, embedding)",
    )
    val.add_argument(
        "--models", help="comma-separated judge models for the llm back end (>= 2: alpha)"
    )
    val.add_argument("--limit", type=int, help="judge only the first N triplets of each kind (llm)")
    val.add_argument("--output", help="CSV path (default results/novelty/dagent_validation.csv)")
    val.set_defaults(handler=validate)
    card_cmd = sub.add_parser(
        "card", help="the method card (summary, pseudocode) of a solution file, by the LLM"
    )
    card_cmd.add_argument("file", metavar="FILE")
    card_cmd.set_defaults(handler=card)
    out = sub.add_parser(
        "outcome", help="outcome distance 0-100 of two submissions of a task, up to its "
        "symmetries (the family's scale to stderr, the distance last)"
    )
    out.add_argument("task", metavar="TASK")
    out.add_argument("file_a", metavar="A")
    out.add_argument("file_b", metavar="B")
    out.set_defaults(handler=outcome)


def distance(args: argparse.Namespace) -> int:
    """The distance between two files by one back end (its name to stderr, the distance last)."""
    import sys

    from innolab.novelty.backends import NoveltyError
    from innolab.novelty.registry import make_backend
    from innolab.novelty.scoring import comparable, default_backend

    name = args.backend or default_backend()
    try:
        backend = make_backend(name)
        a, b = (comparable(Path(f).read_text(), name) for f in (args.file_a, args.file_b))
        value = backend.distance(a, b)
    except (NoveltyError, OSError) as error:
        return fail("novelty distance", error)
    print(f"back end: {backend.name}", file=sys.stderr)
    print(f"{value:.2f}")
    return 0


def validate(args: argparse.Namespace) -> int:
    """The back ends' validation table, written as CSV and printed."""
    from innolab.novelty.backends import NoveltyError
    from innolab.novelty.triplets import validation_table
    from innolab.paths import project_root

    models = [m for m in (args.models or "").split(",") if m]
    output = (
        Path(args.output)
        if args.output
        else project_root() / "results" / "novelty" / "dagent_validation.csv"
    )
    try:
        table = validation_table(
            args.backend or ["ast", "tfidf", "embedding"],
            output.parent / "cache",
            models=models,
            llm_limit=args.limit,
        )
    except NoveltyError as error:
        return fail("novelty validate", error)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False)
    columns = ["backend", "kind", "n", "mean_closer", "mean_farther", "agreement", "alpha"]
    print(table[[c for c in columns if c in table.columns]].to_string(index=False))
    print(output)
    return 0


def card(args: argparse.Namespace) -> int:
    """A solution file's method card as JSON."""
    from innolab.novelty.cards import extract_card

    extracted = extract_card(Path(args.file).read_text())
    print(json.dumps({"summary": extracted.summary, "pseudocode": extracted.pseudocode}, indent=2))
    return 0


def outcome(args: argparse.Namespace) -> int:
    """The outcome distance of two submission files (the family's scale to stderr, it last)."""
    import sys

    from innolab.novelty.outcome import OutcomeError, family_outcome, outcome_distance
    from innolab.tasks.model import TaskError

    try:
        value = outcome_distance(args.task, Path(args.file_a), Path(args.file_b))
        found = family_outcome(args.task)
    except (OutcomeError, TaskError) as error:
        return fail("novelty outcome", error)
    if found is not None:
        print(f"{found.scale}; tie threshold {found.tie:g}", file=sys.stderr)
    print(f"{value:.2f}")
    return 0
