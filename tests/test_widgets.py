"""The teaching explorer recomputes the metrics when its controls change, shows V exactly as given
(in Python, in a kernel's messages and in headless Chromium), and sends no output message from a
redraw."""

from __future__ import annotations

import html
import json
import math
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from innolab.widgets import decimals, metric_summary, metrics_explorer, parse_distances, slider_grid


def test_summary_of_the_worked_example():
    s = metric_summary(54.86, 83.45, "max", [70.83, 80.0])
    assert round(s["G"], 2) == -28.59 and round(s["ratio"], 2) == -0.34 and s["N"] == 70.83
    assert s["region"] == "unsuccessful exploration"


def test_explorer_redraws_on_change():
    open_before = set(plt.get_fignums())  # figures other tests left open are not the explorer's
    box = metrics_explorer(54.86, 83.45, "max", [70.83])
    assert box.summary["ratio"] == pytest.approx(-0.3426, abs=1e-4)
    first = bytes(box.images[0].value)
    box.controls["v"].value = 95.0
    assert box.summary["V"] == 95.0 and box.summary["region"] == "breakthrough innovation"
    assert bytes(box.images[0].value) != first and bytes(box.images[0].value).startswith(b"\x89PNG")
    box.controls["distances"].value = "10, 20"
    assert box.summary["N"] == 10.0 and box.summary["region"] == "performance innovation"
    box.controls["valid"].value = False
    assert box.summary["ratio"] == -1.0 and box.summary["N"] == 0.0
    box.controls["distances"].value = "10, abc"
    assert "abc" in box.summary["error"] and "abc" in box.children[-2].value
    assert set(plt.get_fignums()) == open_before  # every figure the explorer drew was closed


def test_parse_distances():
    assert parse_distances("40, 70.5 55") == [40.0, 70.5, 55.0]
    with pytest.raises(ValueError, match="'x'"):
        parse_distances("1, x")


@pytest.mark.parametrize(
    "v, v_star",
    [
        (54.86, 83.45),
        (2.6359830849176076, 2.635983),
        (12.0, 12.889),
        (19481.0, 19481.5),
        (0.0415, 0.05),
        (-3.25, -1.5),
    ],
)
def test_the_explorer_keeps_the_value_it_was_given(v, v_star):
    box = metrics_explorer(v, v_star, "max", [40.0])
    assert (
        box.controls["v"].value == v and box.controls["v_star"].value == v_star
    )  # exactly, not snapped
    assert box.summary["V"] == v and box.summary["V*"] == v_star
    assert f'<td class="summary-V">{v!r}</td>' in box.children[-2].value
    low, high, step, places = slider_grid([v, v_star])
    for given, slider in ((v, box.sliders["v"]), (v_star, box.sliders["v_star"])):
        assert (slider.min, slider.max, slider.step) == (low, high, step) and low <= given <= high
        assert not slider.continuous_update and not slider.readout  # drawing it sends nothing back
        # the browser snaps to min + k·step: where the value has no more decimals than the grid, it
        # is a grid point
        if decimals(given, 99) <= places:
            assert math.isclose(
                low + round((given - low) / step) * step, given, rel_tol=0, abs_tol=step * 1e-6
            )
    box.sliders["v"].value = (
        v + step * 7 + 1e-14
    )  # a slider's value, with the browser's float noise
    assert (
        box.controls["v"].value == round(v + step * 7, places)
        and box.summary["V"] == box.controls["v"].value
    )


def test_the_explorer_starts_from_every_parameter_given():
    box = metrics_explorer(
        54.86, 83.45, "max", [70.83], valid=False, gain_tolerance=0.025, novelty_threshold=37.5
    )
    assert box.controls["valid"].value is False and box.summary["ratio"] == -1.0
    tolerance, threshold = box.controls["gain_tolerance"], box.controls["novelty_threshold"]
    assert (tolerance.value, tolerance.step, tolerance.readout_format) == (0.025, 0.001, ".3f")
    assert (threshold.value, threshold.step, threshold.readout_format) == (37.5, 0.1, ".1f")


def test_slider_grid_and_decimals():
    assert (
        decimals(54.86) == 2
        and decimals(120.0) == 0
        and decimals(1e-9) == 6
        and decimals(2.5e3) == 0
    )
    assert slider_grid([54.86, 83.45]) == (0.0, 167.0, 0.01, 2)
    assert slider_grid([0.0415, 0.05]) == (0.0, 1.0, 0.0001, 4)
    with pytest.raises(ValueError, match="not a finite number"):
        decimals(float("nan"))


def test_a_redraw_in_a_kernel_sends_widget_state_and_no_output(tmp_path):
    """As in JupyterLab: a change from the browser arrives as a comm message; what the kernel sends
    back under it must be widget state only. An output message under a comm message lands in
    JupyterLab's log console."""
    from jupyter_client.manager import start_new_kernel

    env = {
        k: v for k, v in os.environ.items() if k != "MPLBACKEND"
    }  # the kernel's own inline backend
    found: list[dict] = []
    manager, client = start_new_kernel(
        kernel_name="python3", env=env, cwd=str(tmp_path), startup_timeout=120
    )
    try:
        client.execute_interactive(
            "from innolab.widgets import metrics_explorer\n"
            "box = metrics_explorer(54.86, 83.45, 'max', [70.83, 75.0])\n"
            "display(box)",
            timeout=120,
        )
        reply = client.execute_interactive(
            "print(box.controls['v'].model_id)", timeout=60, output_hook=lambda m: found.append(m)
        )
        assert reply["content"]["status"] == "ok"
        model_id = next(m["content"]["text"].strip() for m in found if m["msg_type"] == "stream")
        update = client.session.msg(
            "comm_msg",
            {
                "comm_id": model_id,
                "data": {"method": "update", "state": {"value": 95.0}, "buffer_paths": []},
            },
        )
        client.shell_channel.send(update)
        under = []
        while True:
            message = client.get_iopub_msg(timeout=60)
            if message["parent_header"].get("msg_id") != update["header"]["msg_id"]:
                continue
            if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                break
            under.append(message)
        kinds = {m["msg_type"] for m in under}
        outputs = {
            "display_data",
            "update_display_data",
            "clear_output",
            "stream",
            "execute_result",
            "error",
        }
        assert not kinds & outputs, kinds
        states = [
            m["content"]["data"].get("state", {}) for m in under if m["msg_type"] == "comm_msg"
        ]
        assert any(
            "breakthrough innovation" in str(s.get("value", "")) for s in states
        )  # the summary redrew
        assert sum("value" in s for s in states) >= 3  # and both images
        check = client.execute_interactive(
            "import matplotlib.pyplot as plt\nprint(plt.get_fignums(), box.summary['V'])",
            timeout=60,
            output_hook=lambda m: found.append(m),
        )
        assert check["content"]["status"] == "ok"
        printed = [m["content"]["text"].strip() for m in found if m["msg_type"] == "stream"]
        assert printed[-1] == "[] 95.0"  # no figure left open for the inline backend to show again
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


# ----------------------------------------------------------------- in a browser (headless Chromium)


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


REQUIRED = os.environ.get("INNOLAB_REQUIRE_CHROMIUM") == "1"

# after the widget manager has drawn the widgets, write what each shows into an attribute --dump-dom
# keeps (an input's value is a property, not an attribute)
PROBE = """<script>
setInterval(function () {
  var shown = [];
  document.querySelectorAll('.widget-text, .widget-slider').forEach(function (w) {
    var label = w.querySelector('.widget-label'), input = w.querySelector('input');
    var handle = w.querySelector('.noUi-handle'), readout = w.querySelector('.widget-readout');
    shown.push({label: label ? label.textContent : '', input: input ? input.value : null,
                slider: handle ? handle.getAttribute('aria-valuetext') : null,
                readout: readout && readout.style.display !== 'none' ? readout.textContent : null});
  });
  document.body.setAttribute('data-shown', JSON.stringify(shown));
}, 100);
</script>"""


@pytest.fixture(scope="session")
def widget_renderer(request) -> Path:
    """The standalone renderer of widgets in a page (@jupyter-widgets/html-manager's dist/embed.js,
    the version this ipywidgets embeds), fetched once with npm into pytest's cache: the page loads
    it from a local file."""
    from ipywidgets._version import __html_manager_version__ as version

    folder = Path(request.config.cache.mkdir("html-manager")) / version
    script = folder / "embed.js"
    if script.is_file():
        return script
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(
            "npm is needed to fetch @jupyter-widgets/html-manager (the page's widget renderer)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            npm,
            "pack",
            f"@jupyter-widgets/html-manager@{version}",
            "--pack-destination",
            str(folder),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    packed = sorted(folder.glob("*.tgz"))
    if done.returncode != 0 or not packed:
        message = f"npm pack @jupyter-widgets/html-manager@{version} failed: {done.stderr[-1000:]}"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    with tarfile.open(packed[0]) as archive:
        member = archive.extractfile("package/dist/embed.js")
        assert member is not None
        script.write_bytes(member.read())
    packed[0].unlink()
    return script


def shown_in_chromium(box, renderer: Path, folder: Path) -> list[dict]:
    """Embed the widget (its state and a view of it) in a page, open it in headless Chromium, return
    what each number field and slider shows once the widget manager has drawn them."""
    from ipywidgets.embed import embed_minimal_html

    page = folder / "explorer.html"
    embed_minimal_html(
        str(page),
        views=[box],
        title="metrics explorer",
        requirejs=False,
        embed_url=renderer.as_uri(),
        cors=False,
    )
    page.write_text(
        page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8"
    )
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={folder / 'profile'}",
            "--virtual-time-budget=15000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    match = re.search(r'data-shown="([^"]*)"', done.stdout)
    assert match, f"the widgets were not drawn: {done.stderr[-2000:]}"
    return json.loads(html.unescape(match.group(1)))


@pytest.mark.chromium
@pytest.mark.parametrize("v, v_star", [(54.86, 83.45), (2.6359830849176076, 2.635983)])
def test_the_explorer_shows_the_given_value_in_chromium(v, v_star, widget_renderer, tmp_path):
    shown = shown_in_chromium(
        metrics_explorer(v, v_star, "max", [70.83, 75.0]), widget_renderer, tmp_path
    )
    labels = [w["label"] for w in shown]
    assert labels[:4] == ["V", "", "V*", ""], shown  # each number field, then its slider
    field, slider = shown[0], shown[1]
    assert field["input"] == repr(v)  # the value given, every digit of it
    assert slider["readout"] is None  # the field is the one place V is written
    places = slider_grid([v, v_star])[3]
    assert round(float(slider["slider"]), places) == round(
        v, places
    )  # the handle sits at V (no snap away)
    assert shown[2]["input"] == repr(v_star)
    # nothing on the page shows another V
    assert all(w["readout"] is None for w in shown[:4])
