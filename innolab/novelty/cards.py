"""Method cards.

A solution reduced to a summary and pseudocode, implementation details stripped (App. H.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

CARD_PROMPT = """Reduce this solution to its method. Write a summary (what problem framing, \
model or algorithm, search or optimisation strategy, data handling and evaluation it uses; about \
150 words) and pseudocode of its core procedure. Leave out incidental details: file layout, names, \
logging, formatting."""


@dataclass(frozen=True)
class MethodCard:
    """A solution's method: a summary and pseudocode."""

    summary: str
    pseudocode: str

    def text(self) -> str:
        """Return the card as the text a back end compares: the summary, then the pseudocode."""
        return f"Summary:\n{self.summary.strip()}\n\nPseudocode:\n{self.pseudocode.strip()}"


def load_card(folder: Path) -> MethodCard:
    """Return the stored card of a known solution.

    Args:
        folder: The solution's folder, holding summary.md and pseudocode.tex.

    Returns:
        The card.

    Raises:
        OSError: When a file cannot be read.
    """
    return MethodCard((folder / "summary.md").read_text(encoding="utf-8"),
                      (folder / "pseudocode.tex").read_text(encoding="utf-8"))


def extract_card(code: str, settings: dict[str, Any] | None = None,
                 cache_path: str | None = None) -> MethodCard:
    """Return the card the configured LLM writes of some code (JSON schema: summary, pseudocode).

    The extractor sees the code as the code back ends do: after dead-code removal
    (`strip_dead_code`), so unused definitions neither reach the card nor crowd out the code that
    runs.

    Args:
        code: The code; the first 12,000 characters of its live code are sent.
        settings: LLM settings over those of the environment (temperature 0 by default).
        cache_path: The response cache's file; None sends every request.

    Returns:
        The card; a reply that breaks the schema becomes a card of its text with no pseudocode.
    """
    from innolab.llm import LLMClient, LLMSettings
    from innolab.llm.cache import ResponseCache
    from innolab.llm.client import json_schema, parse_json_object
    from innolab.novelty.deadcode import strip_dead_code

    client = LLMClient(LLMSettings.from_env(**{"temperature": 0.0, **(settings or {})}),
                       ResponseCache(Path(cache_path)) if cache_path else None)
    schema = json_schema("method_card",
                         {"summary": {"type": "string"}, "pseudocode": {"type": "string"}},
                         ["summary", "pseudocode"])
    live = strip_dead_code(code)
    completion = client.chat([{"role": "system", "content": CARD_PROMPT},
                              {"role": "user", "content": live[:12000]}], response_format=schema)
    try:
        reply = parse_json_object(completion.text)
        return MethodCard(str(reply["summary"]), str(reply["pseudocode"]))
    except (ValueError, KeyError):
        return MethodCard(completion.text.strip() or "(no summary)", "(no pseudocode)")
