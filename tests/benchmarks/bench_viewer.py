"""Viewer figure: a run of 5,000 steps (about 30,000 trace events) read and its timeline rendered
(target: <= 2 s on 2 cores); also the whole HTML export and the JupyterLab RunView of that run, for
scale."""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

from innolab.traces import SCHEMA_VERSION

TARGET_S = 2.0


def synthetic_run(folder: Path, steps: int = 5000, seed: int = 0) -> Path:
    """A run folder whose trace holds `steps` steps of CodeAct-like work: a model call, a tool call
    and its result and a checkpoint per step, a validation every 5th step and a submission every
    10th."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "task": "circle-packing-26",
        "policy": "innolab.agents.codeact:CodeActAgent",
        "agent": "codeact",
        "llm": {"model": "synthetic"},
        "wall_clock_s": 36000.0,
        "seed": seed,
    }
    (folder / "config.json").write_text(json.dumps(config))
    events, t, best = [], 1_000_000.0, 1.0

    def emit(kind: str, step: int | None, **fields) -> None:
        events.append(
            {
                "v": SCHEMA_VERSION,
                "seq": len(events),
                "time": t,
                "type": kind,
                "step": step,
                **fields,
            }
        )

    emit("run_started", 0, config=config)
    for step in range(steps):
        latency = rng.uniform(0.5, 3.0)
        t += latency
        emit(
            "llm_call",
            step,
            purpose="agent",
            response='{"action": "python"}',
            prompt_tokens=900,
            completion_tokens=120,
            latency_s=latency,
            key=f"{step:064x}",
            call_index=step,
        )
        emit(
            "tool_call",
            step,
            call_id=f"c{step}",
            tool="python_session",
            arguments={"code": "print(1)"},
        )
        duration = rng.uniform(0.1, 5.0)
        t += duration
        emit(
            "tool_result",
            step,
            call_id=f"c{step}",
            tool="python_session",
            ok=rng.random() > 0.2,
            output="1\n" * 5,
            duration_s=duration,
        )
        if step % 5 == 4:
            score = best + rng.uniform(-0.1, 0.05)
            emit("validation", step, call_id=f"c{step}", valid=True, score=score, errors=[])
            if step % 10 == 9:
                best = max(best, score)
                emit(
                    "submission",
                    step,
                    file=f"submission/step{step:05d}-000.json",
                    dev_valid=True,
                    dev_score=score,
                )
        emit("checkpoint", step + 1)
    emit(
        "run_finished",
        None,
        reason="steps",
        budget={"used_s": t - 1_000_000.0, "used_steps": steps},
        final_submission=None,
        dev_valid=False,
        dev_score=None,
    )
    (folder / "trace.jsonl").write_text("\n".join(json.dumps(e) for e in events) + "\n")
    return folder


QUICK = {"steps": 200}  # `run.py --quick`


def main(steps: int = 5000) -> dict[str, float]:
    from innolab.viewer.export import run_html
    from innolab.viewer.model import load_run
    from innolab.viewer.render import timeline_svg

    with tempfile.TemporaryDirectory() as scratch:
        folder = synthetic_run(Path(scratch) / "run", steps)
        started = time.perf_counter()
        run = load_run(folder)
        svg = timeline_svg(run)
        timeline_s = time.perf_counter() - started
        started = time.perf_counter()
        page = run_html(run)
        export_s = time.perf_counter() - started
        started = time.perf_counter()
        from innolab.viewer.views import RunView

        view = RunView(folder)
        view_s = time.perf_counter() - started
    figures = {
        "steps": float(len(run.steps)),
        "timeline_s": timeline_s,
        "ratio": timeline_s / TARGET_S,
        "svg_mb": len(svg) / 1e6,
        "export_s": export_s,
        "html_mb": len(page) / 1e6,
        "run_view_s": view_s,
    }
    print(
        f"{len(run.steps)} steps: read + timeline {timeline_s:.2f} s, ratio "
        f"{timeline_s / TARGET_S:.2f} to the target <= {TARGET_S:g} s "
        f"(SVG {len(svg) / 1e6:.1f} MB); whole HTML export {export_s:.2f} s "
        f"({len(page) / 1e6:.1f} MB); RunView built in {view_s:.2f} s "
        f"({view.step_slider.max + 1} steps)"
    )
    return figures


if __name__ == "__main__":
    main()
