"""Prediction on hidden labels (iBench's data kind): MNIST-1D generated offline and pinned by hash,
test labels that never enter a sandbox, strict prediction files, the metrics and the sampling tie
margin, the data folder mounted read-only beside the workspace."""

import io
import json
import math
import shutil

import numpy as np
import pytest

from innolab.gym.factory import open_sandbox
from innolab.tasks import get_task, load_task
from innolab.tasks.checks import fuzz
from innolab.tasks.data import DataError, mnist1d
from innolab.tasks.evaluation import evaluate
from innolab.tasks.leaks import scan
from innolab.tasks.taskkit import prediction

TASK = get_task("mnist1d")
PARAMS = TASK.problem_params


def rows(test_pred, dev_pred=None):
    dev_pred = PARAMS["dev_labels"] if dev_pred is None else dev_pred
    return ([[i, int(p)] for i, p in zip(PARAMS["dev_ids"], dev_pred, strict=True)]
            + [[i, int(p)] for i, p in zip(PARAMS["test_ids"], test_pred, strict=True)])


def with_errors(count):
    labels = np.array(PARAMS["test_labels"])
    wrong = labels.copy()
    wrong[:count] = (wrong[:count] + 1) % 10
    return wrong


def write(tmp_path, data, name="s.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_the_standard_split_is_made_offline_and_pinned_by_its_hash():
    assert len(PARAMS["dev_ids"]) == 500 and len(PARAMS["test_ids"]) == 1000
    assert len(PARAMS["test_labels"]) == 1000 and PARAMS["classes"] == 10
    with np.load(TASK.data_dir / "train.npz") as train:
        assert train["x"].shape == (3500, 40) and train["y"].shape == (3500,)
    with np.load(TASK.data_dir / "test.npz") as test:
        assert sorted(test.files) == ["ids", "x"]  # no labels
    with pytest.raises(DataError, match="hash"):
        mnist1d("0" * 64, dev=499)


SHA256 = "8ac17e33e0deba4fb15d92660cb8750601a44d6c2cef25dd2d89e095290d4ffb"  # task.yaml's


@pytest.mark.parametrize("tamper", ["hidden labels", "visible array", "ids"])
def test_the_cached_data_are_checked_again_at_every_load(tmp_path, monkeypatch, tamper):
    cache = tmp_path / "cache"
    folder = cache / "data" / TASK.data_dir.parent.name
    shutil.copytree(TASK.data_dir.parent, folder)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    monkeypatch.setenv("INNOLAB_CACHE_DIR", str(cache))
    assert mnist1d(SHA256).hidden_params["test_labels"] == PARAMS["test_labels"]  # as made
    if tamper == "hidden labels":  # e.g. a label changed to suit a submission
        hidden = json.loads((folder / "hidden.json").read_text())
        hidden["test_labels"][0] = (hidden["test_labels"][0] + 1) % 10
        (folder / "hidden.json").write_text(json.dumps(hidden))
    elif tamper == "visible array":
        with np.load(folder / "visible" / "dev.npz") as dev:
            arrays = dict(dev)
        arrays["x"][0, 0] += 0.5
        np.savez(folder / "visible" / "dev.npz", **arrays)
    else:
        with np.load(folder / "visible" / "test.npz") as test:
            arrays = dict(test)
        arrays["ids"] = arrays["ids"][::-1].copy()
        np.savez(folder / "visible" / "test.npz", **arrays)
    with pytest.raises(DataError, match="changed since they were made"):
        mnist1d(SHA256)
    (folder / "visible" / "train.npz").unlink()
    with pytest.raises(DataError, match="cannot be read"):
        mnist1d(SHA256)


def test_the_hidden_test_labels_enter_no_sandbox_and_no_validator_config():
    assert "test_labels" not in TASK.validator_config()["params"]
    assert "test_labels" in TASK.problem_params
    assert scan(TASK) == []  # visible files and data files: no hidden number, no label run
    sandbox = open_sandbox(TASK, "local")
    try:
        listed = sandbox.exec("ls -R . ../data").stdout
        files = {name: sandbox.read_file(name) for name in
                 ("task.json", "description.md", "validate.py")}
    finally:
        sandbox.close()
    assert "train.npz" in listed and "test.npz" in listed and "hidden" not in listed
    assert scan(TASK, files) == []


@pytest.mark.parametrize("planted", ["labels.txt", "labels.npy", "rows.json", "shuffled-rows.json",
                                     "map.json", "labels.csv", "strings.npy", "digits.txt",
                                     "onehot.npy"])
def test_a_planted_copy_of_the_test_labels_in_a_visible_file_is_caught(tmp_path, planted):
    folder = shutil.copytree(TASK.root, tmp_path / "mnist1d")
    (folder / "visible").mkdir()
    labels = np.array(PARAMS["test_labels"])[100:164]  # 64 of them, in order
    ids = PARAMS["test_ids"][100:164]
    file = folder / "visible" / planted
    if planted == "labels.npy":
        np.save(file, labels.astype(np.float32))
    elif planted == "strings.npy":  # labels.astype(str)
        np.save(file, labels.astype(str))
    elif planted == "onehot.npy":
        np.save(file, np.eye(10, dtype=np.float32)[labels])
    elif planted.endswith("rows.json"):  # the submission's own form
        pairs = [[i, int(v)] for i, v in zip(ids, labels, strict=True)]
        if planted.startswith("shuffled"):
            pairs = [pairs[i] for i in np.random.default_rng(0).permutation(len(pairs))]
        file.write_text(json.dumps({"predictions": pairs}))
    elif planted == "map.json":
        file.write_text(json.dumps(dict(zip(ids, map(int, labels), strict=True)), indent=1))
    elif planted == "labels.csv":
        file.write_text("id,label\n" + "".join(f"{i},{v}\n" for i, v in zip(ids, labels,
                                                                            strict=True)))
    elif planted == "digits.txt":
        file.write_text("answer = " + "".join(map(str, labels)) + "\n")
    else:
        file.write_text("\n".join(map(str, labels)))
    leaks = scan(load_task(folder))
    assert [(leak.file, leak.source) for leak in leaks] == [(planted, "test labels")]


@pytest.mark.parametrize("case, message", [
    ("wrong ids", "unknown id"),
    ("a missing row", "exactly 1500 rows"),
    ("NaN", "NaN is not allowed"),
    ("a string", "must be an integer, got str"),
    ("10^6 rows", "the limit is 200000 bytes"),
])
def test_malformed_prediction_files_are_each_rejected_with_a_clear_error(tmp_path, case, message):
    good = rows(PARAMS["test_labels"])
    if case == "wrong ids":
        good[600][0] = "test-9999"
        text = json.dumps({"predictions": good})
    elif case == "a missing row":
        text = json.dumps({"predictions": good[:-1]})
    elif case == "NaN":
        text = json.dumps({"predictions": good}).replace('"test-0003", ' + str(good[503][1]),
                                                         '"test-0003", NaN', 1)
    elif case == "a string":
        good[700][1] = str(good[700][1])
        text = json.dumps({"predictions": good})
    else:
        text = json.dumps({"predictions": [[f"test-{i}", 0] for i in range(10**6)]})
    verdict = evaluate(TASK, write(tmp_path, text))
    assert not verdict.valid and verdict.score is None and verdict.ratio == -1
    assert message in verdict.errors[0], verdict.errors


def test_the_tie_margin_is_the_sampling_error_and_a_gain_inside_it_is_a_tie(tmp_path):
    se = np.sqrt(0.988 * 0.012 / 1000)
    assert TASK.sampling_margin(0.988) == pytest.approx(2.5758293 * se)  # 0.89 points
    assert TASK.tie_margin() == pytest.approx(2.5758293 * se + 0.0005 + 0.988e-9)
    near = evaluate(TASK, write(tmp_path, {"predictions": rows(with_errors(6))}))
    assert near.valid and near.score == 0.994 and near.gain > 0 and not near.beats_v_star
    perfect = evaluate(TASK, write(tmp_path, {"predictions": rows(PARAMS["test_labels"])}))
    assert perfect.score == 1.0 and perfect.beats_v_star


def test_the_sandbox_validator_scores_the_development_split(tmp_path):
    sandbox = open_sandbox(TASK, "local")
    try:
        dev = np.array(PARAMS["dev_labels"])
        dev[:50] = (dev[:50] + 1) % 10  # 90 % on the development split
        sandbox.write_file("s.json", json.dumps({"predictions": rows(with_errors(0), dev)})
                           .encode())
        verdict = json.loads(sandbox.exec("python3 validate.py s.json").stdout)
    finally:
        sandbox.close()
    assert verdict == {"valid": True, "score": 0.9, "errors": []}


def test_metrics_are_direction_aware_and_roc_auc_counts_ties_half():
    truth = np.array([0, 0, 1, 1.0])
    assert prediction.METRICS["roc_auc"][0](truth, np.array([0.1, 0.4, 0.35, 0.8])) == 0.75
    assert prediction.METRICS["roc_auc"][0](truth, np.array([0.5, 0.5, 0.5, 0.5])) == 0.5
    assert prediction.METRICS["macro_f1"][0](truth, truth) == 1.0
    assert prediction.METRICS["rmse"][0](truth, truth + 0.5) == 0.5
    assert [prediction.METRICS[m][1] for m in ("accuracy", "macro_f1", "roc_auc", "rmse")] == [
        "max", "max", "max", "min"]


@pytest.mark.parametrize("seed", range(6))
def test_the_metrics_agree_with_scikit_learn_on_random_data(seed):
    from sklearn import metrics

    rng = np.random.default_rng(seed)
    n, classes = int(rng.integers(5, 300)), int(rng.integers(2, 12))
    truth = rng.integers(0, classes, n)
    guess = np.where(rng.random(n) < 0.5, truth, rng.integers(0, classes + 2, n))  # some labels
    # predicted only, absent from the truth (and, with few items, some of the truth never guessed)
    assert prediction.METRICS["accuracy"][0](truth, guess) == pytest.approx(
        metrics.accuracy_score(truth, guess), abs=1e-12)
    assert prediction.METRICS["macro_f1"][0](truth, guess) == pytest.approx(
        metrics.f1_score(truth, guess, average="macro", zero_division=0), abs=1e-12)
    binary = rng.integers(0, 2, n)
    binary[:2] = [0, 1]
    score = np.round(rng.random(n), 1)  # many ties
    assert prediction.METRICS["roc_auc"][0](binary.astype(float), score) == pytest.approx(
        metrics.roc_auc_score(binary, score), abs=1e-12)
    value = rng.normal(size=n)
    assert prediction.METRICS["rmse"][0](truth.astype(float), value) == pytest.approx(
        math.sqrt(metrics.mean_squared_error(truth, value)), abs=1e-12)


def test_macro_f1_counts_a_class_predicted_but_absent_from_the_truth():
    truth, guess = np.array([0, 0, 1, 1]), np.array([0, 2, 1, 1])
    # F1: class 0 2/3, class 1 1, class 2 (never true, predicted once) 0
    assert prediction.METRICS["macro_f1"][0](truth, guess) == pytest.approx((2 / 3 + 1 + 0) / 3)


def test_every_hostile_prediction_file_is_rejected_and_no_mutation_crashes():
    results = fuzz(TASK, mutations=15)
    assert all(r.passed for r in results), [r.detail for r in results]


def test_a_gpu_task_asks_for_the_gpu_image_and_gpus_and_is_refused_clearly_without_them(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from innolab.runner import agent_config

    folder = shutil.copytree(TASK.root, tmp_path / "mnist1d")
    spec = (folder / "task.yaml").read_text().replace("compute: cpu", "compute: gpu")
    (folder / "task.yaml").write_text(spec)
    config = agent_config("baseline", str(folder), runtime="docker", budget_s=10)
    assert config.image == "innolab/gpu:latest"  # the GPU build of PyTorch: build-image --gpu
    try:
        import docker

        engine = docker.from_env()
        has_gpus = "nvidia" in engine.info().get("Runtimes", {})
    except Exception:  # no engine here: the refusal is the engine's, tested in the docker tests
        pytest.skip("no Docker engine")
    if has_gpus:
        pytest.skip("this engine has a GPU runtime")
    innolab = Path(sys.executable).parent / "innolab"
    done = subprocess.run([str(innolab), "run", "--agent", "baseline", "--task", str(folder),
                           "--runtime", "docker", "--budget", "10s"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "asks for a GPU but the Docker engine has no GPU runtime" in done.stderr


class _Refused(Exception):
    """What the fake engine raises once it has seen the container's settings."""


class _FakeEngine:
    """A Docker client that records containers.run's keyword arguments and then refuses."""

    def __init__(self, runtimes):
        from types import SimpleNamespace

        self.runtimes, self.run_kwargs, self.removed = runtimes, None, []
        self.images = SimpleNamespace(get=lambda image: SimpleNamespace(tags=[image]))
        volume = SimpleNamespace(name="innolab-ws-fake",
                                 remove=lambda force=False: self.removed.append(force))
        self.volumes = SimpleNamespace(create=lambda **kwargs: volume)
        self.containers = SimpleNamespace(run=self._run)

    def info(self):
        return {"Runtimes": self.runtimes}

    def _run(self, image, command, **kwargs):
        self.run_kwargs = {"image": image, **kwargs}
        raise _Refused


def test_a_gpu_task_on_an_engine_with_the_nvidia_runtime_asks_for_every_gpu(tmp_path, monkeypatch):
    import docker

    from innolab.gym import docker_sandbox

    folder = shutil.copytree(TASK.root, tmp_path / "mnist1d")
    spec = (folder / "task.yaml").read_text().replace("compute: cpu", "compute: gpu")
    (folder / "task.yaml").write_text(spec)
    engine = _FakeEngine({"runc": {}, "nvidia": {"path": "nvidia-container-runtime"}})
    monkeypatch.setattr(docker_sandbox, "docker_client", lambda: engine)
    with pytest.raises(_Refused):
        open_sandbox(load_task(folder), "docker")
    [request] = engine.run_kwargs["device_requests"]
    assert isinstance(request, docker.types.DeviceRequest)
    assert request.count == -1 and request.capabilities == [["gpu"]]  # all GPUs (`--gpus all`)
    assert request.driver == "" and request.device_ids == []
    assert engine.run_kwargs["image"] == docker_sandbox.GPU_IMAGE
    assert engine.removed == [True]  # the workspace volume goes when the container cannot start
    cpu = _FakeEngine({"runc": {}, "nvidia": {}})
    monkeypatch.setattr(docker_sandbox, "docker_client", lambda: cpu)
    with pytest.raises(_Refused):
        open_sandbox(TASK, "docker")  # a cpu task gets none, even where GPUs are
    assert cpu.run_kwargs["device_requests"] is None
    assert cpu.run_kwargs["image"] == docker_sandbox.DEFAULT_IMAGE


@pytest.mark.docker
def test_the_hidden_test_labels_enter_no_docker_sandbox_and_its_data_mount_is_read_only(
        docker_client, base_image):
    sandbox = open_sandbox(TASK, "docker", image=base_image)
    try:
        listed = sandbox.exec("ls -laR . ../data /data", timeout_s=30)
        mounts = sandbox.exec("cat /proc/mounts", timeout_s=30).stdout
        write = sandbox.exec("echo 0 > ../data/planted.txt", timeout_s=30)
        as_root = sandbox.container.exec_run(["/bin/sh", "-c", "touch /data/planted.txt"],
                                             user="0:0")
        # every file the sandbox holds, the data mount's copied into the workspace to be read
        copied = sandbox.exec("cp -r ../data data-copy && find . -type f -printf '%P\\n'",
                              timeout_s=60)
        assert copied.returncode == 0, copied.stderr
        files = {name: sandbox.read_file(name) for name in copied.stdout.split()}
    finally:
        sandbox.close()
    assert listed.returncode == 0, listed.stderr
    assert "train.npz" in listed.stdout and "dev.npz" in listed.stdout
    assert "hidden" not in listed.stdout.lower() and "label" not in listed.stdout.lower()
    assert {"task.json", "validate.py", "data-copy/train.npz", "data-copy/dev.npz",
            "data-copy/test.npz"} <= set(files)
    assert not any("hidden" in name for name in files)
    with np.load(io.BytesIO(files["data-copy/test.npz"])) as test:
        assert sorted(test.files) == ["ids", "x"]  # the test split's features, not its labels
    assert scan(TASK, files) == []  # no file holds the test labels (in any form scan reads)
    [data_mount] = [line.split() for line in mounts.splitlines() if line.split()[1] == "/data"]
    assert "ro" in data_mount[3].split(",")
    assert write.returncode != 0 and "Read-only file system" in write.stderr
    assert as_root.exit_code != 0 and b"Read-only file system" in as_root.output


def test_a_recording_names_the_versions_of_the_libraries_its_solution_and_task_import(
        tmp_path, monkeypatch):
    import subprocess
    from importlib.metadata import version

    from innolab.tasks.solutions import Solution, get_solution, libraries, record

    installed = {name: version(name) for name in ("scikit-learn", "mnist1d", "gcol", "numpy")}
    for name in ("logistic-regression", "mlp", "random-conv-ridge"):  # sklearn; the data's maker
        assert {"scikit-learn", "mnist1d", "numpy"} <= set(libraries(get_solution(TASK, name)))
    colouring = get_task("colouring-queen15-15")
    assert libraries(get_solution(colouring, "tabu-search"))["gcol"] == installed["gcol"]
    assert "gcol" not in libraries(get_solution(colouring, "first-fit"))  # imports none of it
    folder = shutil.copytree(TASK.root, tmp_path / "mnist1d")
    solution = get_solution(load_task(folder), "mlp")

    def rerun(self, out, quick=False, **kwargs):  # the committed output, not an hour's training
        if out != self.output:
            shutil.copyfile(self.output, out)
        return subprocess.CompletedProcess([], 0, "", "")

    monkeypatch.setattr(Solution, "run", rerun)
    record(solution)
    recording = json.loads((folder / "solutions" / "mlp" / "score.json").read_text())["recording"]
    assert {name: recording["libraries"][name] for name in ("scikit-learn", "mnist1d")} == {
        name: installed[name] for name in ("scikit-learn", "mnist1d")}
    assert recording["numpy"] == installed["numpy"] and "scipy" in recording
