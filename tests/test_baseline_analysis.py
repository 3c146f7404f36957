"""The baseline beside the agents: the include spec feature, agent vs baseline, both N axes."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from innolab.analysis import baseline as bl
from innolab.analysis import sweeps as sw
from innolab.paths import project_root
from innolab.sweep import SpecError, expand, load_spec

OFFLINE = project_root() / "results" / "sweeps" / "offline"
SPECS = project_root() / "data" / "sweeps"


def agents_only() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The committed offline tables without the baseline's runs (they may hold some)."""
    runs = pd.read_parquet(OFFLINE / "runs.parquet")
    trajectory = pd.read_parquet(OFFLINE / "trajectory.parquet")
    theirs = set(runs.loc[runs["agent"] == "baseline", "config_id"])
    return (runs[runs["agent"] != "baseline"].reset_index(drop=True),
            trajectory[~trajectory["config_id"].isin(theirs)].reset_index(drop=True))


def with_baseline(folder: Path, seeds: int = 4, outcome: bool = True) -> Path:
    """A sweep folder: the committed offline tables plus baseline runs (and N_out when asked).

    The baseline's rows: `seeds` runs of 60 s from scratch whose best-so-far rises at 3 times,
    and one of 30 s at seed 0 (the agents' budget and seed), as the offline spec runs them.
    """
    runs, trajectory = agents_only()
    template = runs.iloc[0]
    added, steps = [], []
    for index, (seed, budget) in enumerate([(s, 60.0) for s in range(seeds)] + [(0, 30.0)]):
        cid = f"base{index:02d}"
        ratio = -0.08 + 0.01 * seed
        added.append({**template.to_dict(), "config_id": cid, "run_dir": f"runs/{cid}",
                      "agent": "baseline", "model": "none", "temperature": np.nan,
                      "seed": seed, "budget_s": budget, "prior_solution": None, "valid": True,
                      "complete": True, "ratio": ratio, "novelty": 12.0 + seed,
                      "score": 2.6 + ratio, "novelty_backend": "ast"})
        for k, t in enumerate((budget / 6, budget / 3, budget / 2)):
            steps.append({"config_id": cid, "t_s": t, "step": k, "file": "submission.json",
                          "dev_valid": True, "dev_score": 2.0 + 0.2 * k, "improving": True,
                          "valid": True, "score": 2.0 + 0.2 * k, "gain": 0.0,
                          "ratio": ratio - 0.2 * (2 - k), "novelty": 10.0 + k + seed,
                          "novelty_vs_prior": np.nan, "v_star": 2.635,
                          "beats_v_star": False, "headroom_closed": 0.0})
    runs = pd.concat([runs, pd.DataFrame(added)], ignore_index=True)
    trajectory = pd.concat([trajectory, pd.DataFrame(steps)], ignore_index=True)
    if outcome:
        runs["novelty_out"] = np.where(runs["valid"], runs["novelty"] / 2, 0.0)
        runs.loc[runs.index[-1], "novelty_out"] = np.nan  # one not computed
        trajectory["novelty_out"] = trajectory["novelty"] / 2
    folder.mkdir(parents=True, exist_ok=True)
    runs.to_parquet(folder / "runs.parquet")
    trajectory.to_parquet(folder / "trajectory.parquet")
    return folder


def test_include_adds_configurations_outside_the_grid():
    data = {
        "name": "s", "base": {"task": "circle-packing-26", "runtime": "local", "budget": "30s",
                              "temperature": 0.5},
        "grid": {"agent": ["aide", "codeact"]},
        "include": [{"agent": "baseline", "temperature": None, "budget": "60s",
                     "seeds": [0, 1, 2]}],
    }
    configurations = expand(load_spec(data))
    assert len(configurations) == 5
    baseline = [c for c in configurations if c.levels.get("agent") == "baseline"]
    assert [c.levels["seed"] for c in baseline] == [0, 1, 2]
    assert all(c.config["model_reported"] == "none" and c.config["wall_clock_s"] == 60.0
               for c in baseline)
    assert "temperature" not in baseline[0].parameters
    small = expand(load_spec(data, ["budget=20s", "seeds=[4]"]))
    assert {(c.levels["seed"], c.config["wall_clock_s"]) for c in small} == {(4, 20.0)}


@pytest.mark.parametrize("entry, message", [
    ({"agnt": "baseline"}, r"include\[0\]\.agnt: not a run field"),
    ({"seeds": [1]}, r"include\[0\]: an entry needs at least one run field"),
    ({"agent": "baseline", "seeds": [1, 1]}, r"include\[0\]\.seeds: a seed is listed twice"),
    ({"agent": "baseline", "seeds": []}, r"include\[0\]\.seeds: a non-empty list"),
    ({"temperature": "hot"}, r"include\[0\]\.temperature: Input should be a valid number"),
])
def test_bad_include_entries_name_the_field(entry, message):
    with pytest.raises(SpecError, match=message):
        load_spec({"name": "s", "base": {"task": "circle-packing-26", "agent": "aide"},
                   "include": [entry]})


def test_shipped_specs_have_the_baseline_as_a_row(monkeypatch):
    for name in ("offline", "main_results", "time_budget", "backbone", "temperature",
                 "prior_solution", "innovation_prompt"):
        spec = load_spec(SPECS / f"{name}.yaml")
        agents = [e.get("agent") for e in spec.include]
        assert "baseline" in agents, name
    for name in ("DEEPSEEK_V31", "GEMINI_25_PRO", "GPT_5"):
        monkeypatch.setenv(f"{name}_BASE_URL", "http://endpoint.invalid/v1")
        monkeypatch.setenv(f"{name}_MODEL", name.lower())
    offline = expand(load_spec(SPECS / "offline.yaml"))
    runs = [c for c in offline if c.levels.get("agent") == "baseline"]
    assert len({c.levels["seed"] for c in runs if c.config["wall_clock_s"] == 60}) >= 4
    assert any(c.config["wall_clock_s"] == 30 and c.levels["seed"] == 0 for c in runs)
    for name in ("main_results", "temperature", "backbone"):  # resolvable with endpoints set
        assert any(c.config["model_reported"] == "none"
                   for c in expand(load_spec(SPECS / f"{name}.yaml", ["seeds=[0]"])))


def test_agent_vs_baseline_pairs_on_task_seed_budget_and_start(tmp_path):
    runs = pd.read_parquet(with_baseline(tmp_path / "s") / "runs.parquet")
    table = bl.agent_vs_baseline(runs, n_resamples=200)
    assert list(table.columns) == bl.VERSUS_COLUMNS
    assert set(table["agent"]) == {"aide", "codeact"}
    assert set(table["metric"]) == {"ratio", "novelty", "novelty_out"}
    aide = table[(table["agent"] == "aide") & (table["metric"] == "ratio")].iloc[0]
    # aide's 2 runs from scratch at (circle-packing-26, 0, 30 s) average into one pair with the
    # 30 s baseline; its 2 runs from the prior solution have no baseline run of that start
    assert aide["n_pairs"] == 1 and aide["runs_agent"] == 2 and aide["runs_baseline"] == 1
    mine = runs[(runs["agent"] == "aide") & runs["prior_solution"].isna()]["ratio"].mean()
    base = runs[(runs["agent"] == "baseline") & (runs["budget_s"] == 30)]["ratio"].iloc[0]
    assert aide["mean_diff"] == pytest.approx(mine - base)
    scratch = runs[(runs["agent"] == "aide") & runs["prior_solution"].isna()]
    assert aide["valid_agent"] == int(scratch["valid"].sum())
    out = table[(table["agent"] == "aide") & (table["metric"] == "novelty_out")].iloc[0]
    # the one baseline run at the agents' budget has N_out not computed: no pair, said so
    assert out["n_pairs"] == 0 and out["known_baseline"] == 0 and out["note"].startswith("no")


def test_agent_vs_baseline_without_baseline_runs_says_so():
    runs, _ = agents_only()
    table = bl.agent_vs_baseline(runs, n_resamples=200)
    assert (table["n_pairs"] == 0).all() and (table["runs_baseline"] == 0).all()
    assert table["note"].str.contains("no baseline runs").all()
    with pytest.raises(sw.AnalysisError, match="lacks the columns"):
        bl.agent_vs_baseline(runs, metrics=["nope"])


def test_baseline_trend_over_runs_decides(tmp_path):
    folder = with_baseline(tmp_path / "s")
    runs = pd.read_parquet(folder / "runs.parquet")
    trajectory = pd.read_parquet(folder / "trajectory.parquet")
    grid = list(np.linspace(0, 60, 31))
    per_run = bl.anytime_runs_axes(trajectory, runs, grid)
    stated = pd.DataFrame({"quantity": ["gain", "novelty"], "trend": ["increasing", "decreasing"],
                           "detail": ["G rises", "N falls"]})
    checks = bl.trend_checks(stated, per_run, "t_s")
    gain = checks[(checks["agent"] == bl.BASELINE_LABEL) & (checks["axis"] == "ratio")].iloc[0]
    # the baseline's runs rise from -1 (net change 0.93 over its 5 runs) but its four 60 s runs
    # stop improving at 30 s, their middle time (its later-half change 0.04, one run's): 5 runs
    # are too few for the bootstrap bound the verdict rests on (MIN_UNITS 10), so no verdict,
    # the effect reported without an interval
    assert gain["this sweep"] == "not enough data" and gain["unit"] == "config_id"
    assert gain["n_units"] == 5  # runs, not grid points
    assert "1 of 5 units still rising by more than it" in gain["detail"]
    assert "needs at least 10" in gain["detail"] and gain["min_effect"] == 0.01
    assert gain["estimate"] == pytest.approx(0.04) and np.isnan(gain["ci_low"])
    assert gain["p_min"] == pytest.approx(0.0625)  # 2/2^5: beside the returns test's p
    assert set(checks["axis"]) == {"ratio", "novelty", "novelty_out"}
    curves = bl.anytime_axes(trajectory, runs, "agent", grid, n_resamples=200)
    late = curves[(curves["agent"] == "baseline") & (curves["t_s"] == 60)].iloc[0]
    assert late["n"] == 4 and late["mean_novelty_out"] == pytest.approx(late["mean_novelty"] / 2)


def test_labels_and_levels_call_it_a_classical_search():
    runs = pd.DataFrame({"agent": ["aide", "baseline"], "model": ["m", "none"],
                         "temperature": [0.5, np.nan]})
    shown = bl.labelled(runs)
    assert shown["agent"].tolist() == ["aide", "baseline (classical search)"]
    assert shown["model"].tolist() == ["m", "baseline (classical search)"]
    assert bl.as_level(runs, "temperature")["temperature"].tolist() == [
        "0.5", "baseline (classical search)"]
    assert runs["agent"].tolist() == ["aide", "baseline"]  # the input is left as it is


def test_novelty_axes_plot_leaves_nan_out_and_names_a_missing_axis():
    frame = pd.DataFrame({"agent": ["a", "a", "baseline (classical search)"],
                          "novelty": [10.0, np.nan, 20.0]})
    fig = bl.novelty_axes_plot(frame, "agent", "agent")
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("1 not computed" in t for t in texts)
    assert any("novelty_out is not in these tables" in t for t in texts)
    with pytest.raises(sw.AnalysisError, match="kind must be"):
        bl.novelty_axes_plot(frame, "agent", kind="bars")


def test_the_viewer_names_the_baseline_a_classical_search():
    from innolab.viewer.model import AGENT_LABELS
    from innolab.viewer.views import factor_text

    assert factor_text("agent", "baseline") == "baseline (classical search)"
    assert factor_text("agent", "aide") == "aide"
    assert "classical search, not an agent" in AGENT_LABELS["baseline"]


def test_an_include_entrys_prior_solution_is_a_file_beside_the_spec(tmp_path):
    import shutil

    import yaml

    shutil.copytree(SPECS / "priors", tmp_path / "priors")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "name": "s", "base": {"task": "circle-packing-26", "agent": "aide", "runtime": "local"},
        "include": [{"agent": "baseline",
                     "prior_solution": "priors/circle-packing-26-row-lattice.py"}]}))
    plain, baseline = expand(load_spec(tmp_path / "s.yaml"))
    assert plain.config["prior_solution"] is None
    assert baseline.config["prior_solution"]["name"] == "circle-packing-26-row-lattice"
