"""The novelty back ends by name.

Each name's factory, the list of names (`BACKENDS`) and `make_backend`.

The CLI's choices and the sweep spec's allowed values read `BACKENDS`; a new back end is registered
here once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from innolab.novelty.backends import (
    DistanceBackend,
    EmbeddingBackend,
    LLMJudge,
    NoveltyError,
    TfidfBackend,
)
from innolab.novelty.structure import StructuralBackend

FACTORIES: dict[str, Callable[..., DistanceBackend]] = {
    "ast": StructuralBackend,
    "tfidf": TfidfBackend,
    "embedding": EmbeddingBackend,
    "llm": LLMJudge,
}
BACKENDS: tuple[str, ...] = tuple(FACTORIES)
# Back ends whose constructor takes no options (those of the others are passed through).
_WITHOUT_OPTIONS = frozenset({"ast", "tfidf"})


def make_backend(name: str, **options: Any) -> DistanceBackend:
    """Return a new distance back end by its registered name.

    Args:
        name: One of `BACKENDS`.
        **options: The back end's own settings (`EmbeddingBackend`'s endpoint, `LLMJudge`'s LLM
            settings and cache path); the `ast` and `tfidf` back ends take none.

    Returns:
        The back end.

    Raises:
        NoveltyError: When `name` is not registered, or options are given to a back end that
            takes none.
    """
    factory = FACTORIES.get(name)
    if factory is None:
        raise NoveltyError(f"backend must be one of {', '.join(BACKENDS)}, got {name!r}")
    if name in _WITHOUT_OPTIONS and options:
        raise NoveltyError(f"backend {name!r} takes no options, got {sorted(options)}")
    return factory(**options)
