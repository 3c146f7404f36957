"""Run budgets: wall clock, steps, tokens and cost; the first one spent ends the run cleanly."""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass


class BudgetError(ValueError):
    """A budget parameter that breaks its rule."""


def parse_duration(text: str | float | int) -> float:
    """A duration in seconds.

    Args:
        text: seconds as a number, or a text like '90', '90s', '10m', '1.5h'.

    Returns:
        The seconds (positive).

    Raises:
        BudgetError: the text is no duration, or the duration is not positive.
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        seconds = float(text)
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", str(text))
        if not match:
            raise BudgetError(f"budget {text!r}: expected a duration like 90s, 10m or 1.5h")
        seconds = float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]
    if not seconds > 0:
        raise BudgetError(f"budget must be positive, got {text!r}")
    return seconds


@dataclass
class Budget:
    """Limits (None = unlimited) and what has been used; plain data, so it checkpoints as JSON.

    Raises:
        BudgetError: a limit that is not positive (on construction).
    """

    wall_clock_s: float | None = None
    max_steps: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    used_s: float = 0.0
    used_steps: int = 0
    used_tokens: int = 0
    used_cost_usd: float = 0.0

    def __post_init__(self) -> None:
        for name in ("wall_clock_s", "max_steps", "max_tokens", "max_cost_usd"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise BudgetError(f"{name} must be positive or None, got {value!r}")
        self.restart()

    def restart(self) -> None:
        """Run the clock on from `used_s` as of now (a resumed run does not count its time down)."""
        self._started = time.monotonic() - self.used_s

    def tick(self) -> None:
        """Bring `used_s` up to now."""
        self.used_s = time.monotonic() - self._started

    def remaining_s(self) -> float | None:
        """Seconds left on the wall clock (None when it is unlimited; never negative)."""
        self.tick()
        return None if self.wall_clock_s is None else max(0.0, self.wall_clock_s - self.used_s)

    def remaining_tokens(self) -> int | None:
        """Tokens left of the token budget (None when it is unlimited; never negative)."""
        return None if self.max_tokens is None else max(0, self.max_tokens - self.used_tokens)

    def remaining_cost_usd(self) -> float | None:
        """USD left of the cost budget (None when it is unlimited; never negative)."""
        return (None if self.max_cost_usd is None
                else max(0.0, self.max_cost_usd - self.used_cost_usd))

    def spend(self, steps: int = 0, tokens: int = 0, cost_usd: float = 0.0) -> None:
        """Count steps, tokens and cost as used (and bring the clock up to now)."""
        self.used_steps += steps
        self.used_tokens += tokens
        self.used_cost_usd += cost_usd
        self.tick()

    def exhausted(self) -> str | None:
        """The name of the first spent budget ("wall_clock", "steps", "tokens", "cost"), or None."""
        self.tick()
        if self.wall_clock_s is not None and self.used_s >= self.wall_clock_s:
            return "wall_clock"
        if self.max_steps is not None and self.used_steps >= self.max_steps:
            return "steps"
        if self.max_tokens is not None and self.used_tokens >= self.max_tokens:
            return "tokens"
        if self.max_cost_usd is not None and self.used_cost_usd >= self.max_cost_usd:
            return "cost"
        return None

    def as_dict(self) -> dict[str, float | int | None]:
        """Limits and use as plain data (what checkpoints and the run_finished event keep)."""
        self.tick()
        return asdict(self)
