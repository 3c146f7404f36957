"""The teaching explorer recomputes the metrics when its controls change."""

import pytest

from innolab.widgets import metric_summary, metrics_explorer, parse_distances


def test_summary_of_the_worked_example():
    s = metric_summary(54.86, 83.45, "max", [70.83, 80.0])
    assert round(s["G"], 2) == -28.59 and round(s["ratio"], 2) == -0.34 and s["N"] == 70.83
    assert s["region"] == "unsuccessful exploration"


def test_explorer_redraws_on_change():
    box = metrics_explorer(54.86, 83.45, "max", [70.83])
    assert box.summary["ratio"] == pytest.approx(-0.3426, abs=1e-4)
    box.controls["v"].value = 95.0
    assert box.summary["V"] == 95.0 and box.summary["region"] == "breakthrough innovation"
    box.controls["distances"].value = "10, 20"
    assert box.summary["N"] == 10.0 and box.summary["region"] == "performance innovation"
    box.controls["valid"].value = False
    assert box.summary["ratio"] == -1.0 and box.summary["N"] == 0.0
    box.controls["distances"].value = "10, abc"
    assert "abc" in box.summary["error"]


def test_parse_distances():
    assert parse_distances("40, 70.5 55") == [40.0, 70.5, 55.0]
    with pytest.raises(ValueError, match="'x'"):
        parse_distances("1, x")
