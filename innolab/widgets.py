"""Teaching widgets: ipywidgets controls for V, V*, direction and distances that redraw the metrics live."""

from __future__ import annotations

import math
from collections.abc import Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from innolab.analysis.plots import complex_plane, gain_novelty_plane
from innolab.metrics import (
    DEFAULT_GAIN_TOLERANCE,
    DEFAULT_NOVELTY_THRESHOLD,
    Direction,
    innovation_region,
    score_solution,
)


def metric_summary(
    v: float,
    v_star: float,
    direction: Direction,
    distances: Sequence[float],
    valid: bool = True,
    gain_tolerance: float = DEFAULT_GAIN_TOLERANCE,
    novelty_threshold: float = DEFAULT_NOVELTY_THRESHOLD,
) -> dict[str, object]:
    """Everything the explorer shows for one solution: V, G, ratio, N and its innovation region."""
    score = score_solution(valid, v, v_star, direction, distances)
    n = score.novelty if score.novelty is not None else 0.0
    region = innovation_region(score.ratio, n, gain_tolerance, novelty_threshold)
    return {"valid": score.valid, "V": score.v, "V*": score.v_star, "direction": direction, "G": score.gain,
            "ratio": score.ratio, "N": n, "region": region.value}


def summary_points(summary: dict[str, object], label: str = "solution") -> pd.DataFrame:
    """The one-row frame the plots expect; an exploratory task's N = inf is drawn at 100."""
    n = float(summary["N"])  # type: ignore[arg-type]
    return pd.DataFrame([{"ratio": summary["ratio"], "novelty": 100.0 if math.isinf(n) else n, "label": label}])


def parse_distances(text: str) -> list[float]:
    """'40, 70.5 55' -> [40.0, 70.5, 55.0]; a clear error names the offending item."""
    items = [item for item in text.replace(",", " ").split() if item]
    values = []
    for item in items:
        try:
            values.append(float(item))
        except ValueError:
            raise ValueError(f"distances: {item!r} is not a number") from None
    return values


def metrics_explorer(
    v: float = 54.86,
    v_star: float = 83.45,
    direction: Direction = "max",
    distances: Sequence[float] = (70.83, 75.0),
) -> widgets.VBox:
    """Sliders and fields for V, V*, direction and distances; the summary and both planes redraw on change."""
    span = max(abs(v), abs(v_star)) * 2 or 1.0
    v_input = widgets.FloatSlider(value=v, min=0.0, max=span, step=span / 1000, description="V")
    v_star_input = widgets.FloatSlider(value=v_star, min=span / 1000, max=span, step=span / 1000, description="V*")
    direction_input = widgets.ToggleButtons(options=["max", "min"], value=direction, description="direction")
    valid_input = widgets.Checkbox(value=True, description="valid (C = 1)")
    distances_input = widgets.Text(value=", ".join(f"{d:g}" for d in distances), description="D to known")
    tolerance_input = widgets.FloatSlider(value=DEFAULT_GAIN_TOLERANCE, min=0.0, max=0.5, step=0.01,
                                          description="G tol.")
    threshold_input = widgets.FloatSlider(value=DEFAULT_NOVELTY_THRESHOLD, min=0.0, max=100.0, step=1.0,
                                          description="N thresh.")
    output = widgets.Output()
    box = widgets.VBox()

    def redraw(_: object = None) -> None:
        output.clear_output(wait=True)
        with output:
            try:
                summary = metric_summary(v_input.value, v_star_input.value, direction_input.value,
                                         parse_distances(distances_input.value), valid_input.value,
                                         tolerance_input.value, threshold_input.value)
            except ValueError as error:
                box.summary = {"error": str(error)}  # type: ignore[attr-defined]
                print(f"invalid input: {error}")
                return
            box.summary = summary  # type: ignore[attr-defined]
            display(pd.Series(summary, name="value").to_frame())
            points = summary_points(summary)
            for fig in (gain_novelty_plane(points, tolerance_input.value, threshold_input.value),
                        complex_plane(points)):
                display(fig)
                plt.close(fig)

    controls = (v_input, v_star_input, direction_input, valid_input, distances_input, tolerance_input,
                threshold_input)
    for control in controls:
        control.observe(redraw, names="value")
    box.children = (*controls, output)
    box.controls = dict(zip(("v", "v_star", "direction", "valid", "distances", "gain_tolerance",  # type: ignore[attr-defined]
                             "novelty_threshold"), controls, strict=True))
    redraw()
    return box
