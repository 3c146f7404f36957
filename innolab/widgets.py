"""Teaching widgets: ipywidgets controls for V, V*, direction and distances that redraw the metrics.

What the explorer shows is widget state only (an HTML table and two PNG images): a redraw sends no
output message, so nothing lands in JupyterLab's log console, and every figure is drawn once and
closed. V and V* sit in number fields that hold the value given exactly; the slider beside each only
moves it (it never sends a value of its own when it is drawn, and its steps fall on the decimals of
the values given).
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Callable, Sequence
from decimal import Decimal

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from innolab.analysis.plots import complex_plane, gain_novelty_plane
from innolab.metrics import (
    DEFAULT_GAIN_TOLERANCE,
    DEFAULT_NOVELTY_THRESHOLD,
    Direction,
    innovation_region,
    score_solution,
)

# a slider finer than this is no use to a hand; the number field beside it keeps every digit
MOST_DECIMALS = 6
# shown as given (shortest repr); the rest of the summary to 6 significant digits
EXACT_FIELDS = ("V", "V*")


def metric_summary(
    v: float,
    v_star: float,
    direction: Direction,
    distances: Sequence[float],
    valid: bool = True,
    gain_tolerance: float = DEFAULT_GAIN_TOLERANCE,
    novelty_threshold: float = DEFAULT_NOVELTY_THRESHOLD,
) -> dict[str, object]:
    """Compute everything the explorer shows for one solution.

    Args:
        v: The solution's performance V.
        v_star: The best known performance V*.
        direction: "max" or "min".
        distances: The solution's distances D to the known solutions (0-100).
        valid: Whether the solution is valid (C = 1).
        gain_tolerance: The ratio within which a solution ties with the best known.
        novelty_threshold: The N from which a solution counts as novel.

    Returns:
        valid, V, V*, direction, G, ratio, N and the innovation region, in that order.
    """
    score = score_solution(valid, v, v_star, direction, distances)
    n = score.novelty if score.novelty is not None else 0.0
    region = innovation_region(score.ratio, n, gain_tolerance, novelty_threshold)
    return {"valid": score.valid, "V": score.v, "V*": score.v_star, "direction": direction,
            "G": score.gain, "ratio": score.ratio, "N": n, "region": region.value}


def summary_points(summary: dict[str, object], label: str = "solution") -> pd.DataFrame:
    """Make the one-row frame the plots expect.

    Args:
        summary: A `metric_summary`.
        label: The point's label.

    Returns:
        ratio, novelty and label; an exploratory task's N = inf is drawn at 100.
    """
    n = float(summary["N"])  # type: ignore[arg-type]
    return pd.DataFrame([{"ratio": summary["ratio"], "novelty": 100.0 if math.isinf(n) else n,
                          "label": label}])


def parse_distances(text: str) -> list[float]:
    """Read distances written with commas or spaces: '40, 70.5 55' -> [40.0, 70.5, 55.0].

    Args:
        text: The distances.

    Returns:
        The numbers.

    Raises:
        ValueError: An item is not a number (naming it).
    """
    items = [item for item in text.replace(",", " ").split() if item]
    values = []
    for item in items:
        try:
            values.append(float(item))
        except ValueError:
            raise ValueError(f"distances: {item!r} is not a number") from None
    return values


def decimals(value: float, most: int = MOST_DECIMALS) -> int:
    """Count the decimals of the shortest spelling of `value` (54.86 -> 2, 120.0 -> 0).

    Args:
        value: A finite number.
        most: The most decimals counted.

    Returns:
        The count, at most `most`.

    Raises:
        ValueError: The value is not finite.
    """
    if not math.isfinite(value):
        raise ValueError(f"value: {value!r} is not a finite number")
    exponent = Decimal(repr(float(value))).normalize().as_tuple().exponent
    return min(max(-int(exponent), 0), most)


def slider_grid(
    values: Sequence[float], most: int = MOST_DECIMALS
) -> tuple[float, float, float, int]:
    """Choose a slider's grid for these values.

    Integer bounds (0 to twice the largest magnitude) and a step of 10^-decimals, so that each value
    given, written with at most `most` decimals, is a point of the slider's grid (the browser's
    slider snaps to min + k·step) and the slider has at least about 100 steps.

    Args:
        values: The values the slider must hold.
        most: The most decimals of the step.

    Returns:
        (min, max, step, decimals).

    Raises:
        ValueError: A value is not finite.
    """
    low = math.floor(min(0.0, *(2 * v for v in values)))
    high = math.ceil(max(1.0, *(2 * abs(v) for v in values)))
    coarse = math.ceil(2 - math.log10(high - low))  # at least ~100 steps over the range
    places = min(max(coarse, *(decimals(v, most) for v in values), 0), most)
    return float(low), float(high), 10.0**-places, places


def exact_number(description: str, value: float, grid: tuple[float, float, float, int]) -> tuple[
        widgets.FloatText, widgets.FloatSlider, widgets.HBox]:
    """Make a number field holding `value` exactly, with a slider beside it that moves it.

    The slider shows no readout (the field is the one place the value is written), sends its value
    only when released (so drawing it sends nothing back), and each of its values is rounded to the
    grid's decimals before it reaches the field.

    Args:
        description: The field's label.
        value: The value.
        grid: The slider's (min, max, step, decimals), see `slider_grid`.

    Returns:
        The field, the slider and the row holding both.
    """
    low, high, step, places = grid
    field = widgets.FloatText(value=value, description=description,
                              layout=widgets.Layout(width="15em"))
    slider = widgets.FloatSlider(value=min(max(value, low), high), min=low, max=high, step=step,
                                 readout=False, continuous_update=False, description="",
                                 layout=widgets.Layout(width="20em"))
    syncing = [False]

    def from_slider(change: dict) -> None:
        if syncing[0]:
            return
        field.value = round(float(change["new"]), places)

    def from_field(change: dict) -> None:
        syncing[0] = True
        try:
            slider.value = min(max(float(change["new"]), slider.min), slider.max)
        finally:
            syncing[0] = False

    slider.observe(from_slider, names="value")
    field.observe(from_field, names="value")
    return field, slider, widgets.HBox([field, slider])


def figure_png(fig: Figure, dpi: int = 90) -> bytes:
    """Render a figure as PNG and close it (drawn once, never left for a backend to show again).

    Args:
        fig: The figure.
        dpi: The resolution.

    Returns:
        The PNG's bytes.
    """
    try:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
        return buffer.getvalue()
    finally:
        plt.close(fig)


def summary_html(summary: dict[str, object]) -> str:
    """Render the summary as a small HTML table.

    Args:
        summary: A `metric_summary` (or any dict).

    Returns:
        The table: V and V* as given, the derived numbers to 6 significant digits.
    """
    def shown(key: str, value: object) -> str:
        if isinstance(value, float) and not isinstance(value, bool):
            return repr(value) if key in EXACT_FIELDS else f"{value:.6g}"
        return str(value)

    rows = "".join(f'<tr><th>{html.escape(k)}</th><td class="summary-{html.escape(k)}">'
                   f"{html.escape(shown(k, v))}</td></tr>" for k, v in summary.items())
    return f'<table class="innolab-summary">{rows}</table>'


def metrics_explorer(
    v: float = 54.86,
    v_star: float = 83.45,
    direction: Direction = "max",
    distances: Sequence[float] = (70.83, 75.0),
    valid: bool = True,
    gain_tolerance: float = DEFAULT_GAIN_TOLERANCE,
    novelty_threshold: float = DEFAULT_NOVELTY_THRESHOLD,
) -> widgets.VBox:
    """Make the metrics explorer: controls whose change redraws the summary and both planes.

    Fields (with sliders) for V and V*, direction, validity, distances and the region thresholds.

    Args:
        v: V's starting value.
        v_star: V*'s starting value.
        direction: The starting direction.
        distances: The starting distances to the known solutions.
        valid: The starting validity.
        gain_tolerance: The starting gain tolerance.
        novelty_threshold: The starting novelty threshold.

    Returns:
        The explorer; `box.controls` names the controls that hold the values, `box.sliders` the
        sliders beside V and V*, `box.summary` what is shown, `box.images` the two planes.

    Raises:
        ValueError: V or V* is not finite.
    """
    grid = slider_grid([v, v_star])
    v_input, v_slider, v_row = exact_number("V", v, grid)
    v_star_input, v_star_slider, v_star_row = exact_number("V*", v_star, grid)
    direction_input = widgets.ToggleButtons(options=["max", "min"], value=direction,
                                            description="direction")
    valid_input = widgets.Checkbox(value=bool(valid), description="valid (C = 1)")
    distances_input = widgets.Text(value=", ".join(f"{d!r}" for d in map(float, distances)),
                                   description="D to known")
    # thresholds: steps on the given values' decimals, readouts with as many, so that they too show
    # as given
    tolerance_places = max(decimals(gain_tolerance), 2)
    tolerance_input = widgets.FloatSlider(value=gain_tolerance, min=0.0,
                                          max=max(0.5, gain_tolerance),
                                          step=10.0**-tolerance_places,
                                          readout_format=f".{tolerance_places}f",
                                          continuous_update=False, description="G tol.")
    threshold_places = decimals(novelty_threshold)
    threshold_input = widgets.FloatSlider(value=novelty_threshold, min=0.0,
                                          max=max(100.0, novelty_threshold),
                                          step=10.0**-threshold_places,
                                          readout_format=f".{threshold_places}f",
                                          continuous_update=False, description="N thresh.")
    table = widgets.HTML()
    planes = widgets.Image(format="png", layout=widgets.Layout(max_width="48%")), \
        widgets.Image(format="png", layout=widgets.Layout(max_width="48%"))
    box = widgets.VBox()

    def redraw(_: object = None) -> None:
        before = set(plt.get_fignums())
        try:
            draw()
        except Exception as error:  # a callback's failure is shown here, not in the log console
            for number in set(plt.get_fignums()) - before:  # a figure half made: never shown
                plt.close(number)
            box.summary = {"error": str(error)}  # type: ignore[attr-defined]
            table.value = (f'<p class="innolab-error">could not redraw: '
                           f'{html.escape(str(error) or type(error).__name__)}</p>')

    def draw() -> None:
        try:
            summary = metric_summary(v_input.value, v_star_input.value, direction_input.value,
                                     parse_distances(distances_input.value), valid_input.value,
                                     tolerance_input.value, threshold_input.value)
        except ValueError as error:
            box.summary = {"error": str(error)}  # type: ignore[attr-defined]
            table.value = (f'<p class="innolab-error">invalid input: '
                           f'{html.escape(str(error))}</p>')
            return
        box.summary = summary  # type: ignore[attr-defined]
        table.value = summary_html(summary)
        points = summary_points(summary)
        makers: tuple[Callable[[], Figure], ...] = (
            lambda: gain_novelty_plane(points, tolerance_input.value, threshold_input.value),
            lambda: complex_plane(points))
        for image, make in zip(planes, makers, strict=True):
            # made with pyplot off: a figure drawn in a callback is never registered for the
            # inline backend to show later (it would land in JupyterLab's log console)
            with plt.ioff():
                image.value = figure_png(make())

    controls = (v_input, v_star_input, direction_input, valid_input, distances_input,
                tolerance_input, threshold_input)
    for control in controls:
        control.observe(redraw, names="value")
    box.children = (v_row, v_star_row, *controls[2:], table, widgets.HBox(list(planes)))
    box.controls = dict(zip(  # type: ignore[attr-defined]
        ("v", "v_star", "direction", "valid", "distances", "gain_tolerance", "novelty_threshold"),
        controls, strict=True))
    box.sliders = {"v": v_slider, "v_star": v_star_slider}  # type: ignore[attr-defined]
    box.images = planes  # type: ignore[attr-defined]
    redraw()
    return box
