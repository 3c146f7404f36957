"""MNIST-1D classifiers: logistic regression, an MLP (scikit-learn) and random convolutional features."""

from __future__ import annotations

import numpy as np

from innolab.tasks.registry import get_task
from innolab.tasks.solvers.cli import parse_args, write


def load(task_id: str) -> dict[str, np.ndarray]:
    """The task's visible data: train, dev and test series (test without labels)."""
    folder = get_task(task_id).data_dir
    out = {}
    for split in ("train", "dev", "test"):
        with np.load(folder / f"{split}.npz") as data:
            out.update({f"{split}_{key}": data[key] for key in data.files})
    return out


def submission(data: dict[str, np.ndarray], dev_pred: np.ndarray, test_pred: np.ndarray) -> dict:
    """Rows [id, label] for every dev and test id."""
    rows = [[str(i), int(p)] for i, p in zip(data["dev_ids"], dev_pred, strict=True)]
    rows += [[str(i), int(p)] for i, p in zip(data["test_ids"], test_pred, strict=True)]
    return {"predictions": rows}


def fit_and_write(task_id: str, args, model, features=lambda x: x) -> None:
    """Train on train + dev, predict dev and test, write the submission."""
    data = load(task_id)
    x = np.concatenate([data["train_x"], data["dev_x"]])
    y = np.concatenate([data["train_y"], data["dev_y"]])
    model.fit(features(x), y)
    write(args.out, submission(data, model.predict(features(data["dev_x"])),
                               model.predict(features(data["test_x"]))), task_id)


def run_logistic(task_id: str) -> None:
    from sklearn.linear_model import LogisticRegression

    args = parse_args("multinomial logistic regression on the raw series")
    fit_and_write(task_id, args, LogisticRegression(max_iter=200 if args.quick else 1000))


def run_mlp(task_id: str) -> None:
    from sklearn.neural_network import MLPClassifier

    args = parse_args("a two-layer MLP (100 ReLU units each), Adam, early stopping")
    model = MLPClassifier(hidden_layer_sizes=(100, 100), max_iter=30 if args.quick else 300,
                          early_stopping=True, random_state=args.seed)
    fit_and_write(task_id, args, model)


def random_kernels(count: int, rng: np.random.Generator) -> list[tuple[np.ndarray, float, int]]:
    """ROCKET's random kernels: length 7, 9 or 11, normal weights centred, a bias, a dilation."""
    kernels = []
    for _ in range(count):
        length = int(rng.choice([7, 9, 11]))
        weights = rng.normal(size=length)
        dilation = int(2 ** rng.uniform(0, np.log2(39 / (length - 1))))
        kernels.append((weights - weights.mean(), float(rng.uniform(-1, 1)), dilation))
    return kernels


def rocket_features(x: np.ndarray, kernels) -> np.ndarray:
    """Per kernel, the maximum and the proportion of positive values of its dilated convolution."""
    out = np.empty((len(x), 2 * len(kernels)))
    for k, (weights, bias, dilation) in enumerate(kernels):
        span = (len(weights) - 1) * dilation
        padded = np.pad(x, ((0, 0), (span // 2, span - span // 2)))
        conv = sum(w * padded[:, i * dilation:i * dilation + x.shape[1]]
                   for i, w in enumerate(weights)) + bias
        out[:, 2 * k], out[:, 2 * k + 1] = conv.max(axis=1), (conv > 0).mean(axis=1)
    return out


def run_rocket(task_id: str) -> None:
    from sklearn.linear_model import RidgeClassifierCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    args = parse_args("random convolutional kernels (ROCKET) and a ridge classifier")
    kernels = random_kernels(200 if args.quick else 2000, np.random.default_rng(args.seed))
    model = make_pipeline(StandardScaler(), RidgeClassifierCV(alphas=np.logspace(-3, 3, 10)))
    fit_and_write(task_id, args, model, lambda x: rocket_features(x, kernels))
