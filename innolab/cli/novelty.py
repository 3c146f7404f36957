"""`innolab novelty`: distances, the back ends' validation, method cards, outcome distances."""

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
        help="agreement per transformation family and back end on the hand-written triplet set, "
        "method and outcome axes (CSV + markdown), then the circular normaliser regression check",
    )
    val.add_argument(
        "--backend",
        action="append",
        choices=BACKENDS,
        help="repeat for several (default: ast, tfidf, embedding; llm where "
        "$INNOLAB_LLM_BASE_URL is set)",
    )
    val.add_argument(
        "--models", help="comma-separated judge models for the llm back end (the first judges "
        "the hand-written triplets; >= 2: alpha on the regression check)"
    )
    val.add_argument("--limit", type=int,
                     help="judge only the first N regression triplets of each kind (llm)")
    val.add_argument("--no-outcome", action="store_true",
                     help="skip the outcome axis (which runs every triplet program once)")
    val.add_argument("--no-regression", action="store_true",
                     help="skip the circular normaliser regression check")
    val.add_argument("--timeout", type=float, default=120.0,
                     help="time limit of each triplet program in seconds (default 120)")
    val.add_argument("--output", help="CSV path of the agreement table (default "
                     "results/novelty/triplet_validation.csv; beside it the per-triplet "
                     "distances (_distances.csv), the markdown (.md) and the regression check's "
                     "normaliser_regression_circular.csv)")
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
    from innolab.novelty.scoring import distance as code_distance

    try:
        a, b = (Path(f).read_text() for f in (args.file_a, args.file_b))
        found = code_distance(a, b, args.backend)
    except (NoveltyError, OSError) as error:
        return fail("novelty distance", error)
    print(f"back end: {found.backend}", file=sys.stderr)
    print(f"dead code: {found.dead_code} — {found.note}", file=sys.stderr)
    print(f"{found.value:.2f}")
    return 0


def validate(args: argparse.Namespace) -> int:
    """Agreement on the hand-written triplets (CSV, markdown, printed), then the circular check."""
    from innolab.novelty.backends import NoveltyError
    from innolab.novelty.triplets import judge_endpoint, regression_table
    from innolab.novelty.validation import (
        TripletSetError,
        agreement,
        backend_notes,
        default_backends,
        distance_table,
        markdown_report,
    )
    from innolab.paths import project_root

    models = [m for m in (args.models or "").split(",") if m]
    output = (
        Path(args.output)
        if args.output
        else project_root() / "results" / "novelty" / "triplet_validation.csv"
    )
    backends = args.backend or default_backends()
    axes = ("method",) if args.no_outcome else ("method", "outcome")
    try:
        distances = distance_table(backends, output.parent / "cache", axes=axes,
                                   llm_settings={"model": models[0]} if models else None,
                                   timeout_s=args.timeout)
        table = agreement(distances)
        regression = None
        if not args.no_regression:
            limit = args.limit if args.limit is not None else judge_endpoint()[1]
            regression = regression_table(backends, output.parent / "cache", models=models,
                                          llm_limit=limit)
    except (NoveltyError, TripletSetError) as error:
        return fail("novelty validate", error)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False)
    distances.to_csv(output.with_name(output.stem + "_distances.csv"), index=False)
    report = output.with_suffix(".md")
    report.write_text(markdown_report(table, regression, backend_notes(backends), distances),
                      encoding="utf-8")
    print("hand-written triplets: agreement = share with d(anchor, near) < d(anchor, far)")
    labelled = table.assign(column=table["backend"] + " (" + table["axis"] + ")")
    pivot = labelled.pivot(index="family", columns="column", values="agreement")
    pivot = pivot.loc[list(dict.fromkeys(labelled["family"])),
                      list(dict.fromkeys(labelled["column"]))]
    print(pivot.to_string(float_format=lambda v: f"{v:.2f}"))
    if regression is not None:
        circular = output.parent / "normaliser_regression_circular.csv"
        regression.to_csv(circular, index=False)
        columns = ["backend", "kind", "n", "mean_closer", "mean_farther", "agreement", "alpha"]
        print("\nnormaliser regression check (circular: near variants rename as the normaliser "
              "does; not a validation)")
        print(regression[[c for c in columns if c in regression.columns]].to_string(index=False))
        print(circular)
    print(report)
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
