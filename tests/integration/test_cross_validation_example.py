"""examples/cross_validation.py runs end to end (small sizes, in-process) and reports consistent numbers."""

import importlib.util
import math
import re
from pathlib import Path

import pytest
import torch

from torchrec_eval.comparison.statistics import mean_confidence_interval
from torchrec_eval.data import cross_validate, generate_interactions

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cross_validation.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("cross_validation_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_defaults_are_five_fold(example):
    args = example.parse_args([])
    assert (args.folds, args.users, args.items) == (5, 500, 1000)
    with pytest.raises(SystemExit):
        example.parse_args(["--folds", "1"])


def test_example_runs_and_compares_on_the_same_folds(example, capsys):
    argv = ["--users", "90", "--items", "120", "--epochs", "2", "--folds", "3", "--dim", "8"]
    results = example.main(argv)
    out = capsys.readouterr().out
    assert set(results) == {"pop", "mf"}
    pop, mf = results["pop"], results["mf"]
    assert pop.n_folds == mf.n_folds == 3
    assert torch.equal(pop.num_users, mf.num_users) and int(pop.num_users.sum()) == 90  # same user folds
    for result in (pop, mf):
        assert list(result.values) == example.METRICS
        for name, values in result.values.items():
            assert values.shape == (3,)
            assert bool(((values >= 0) & (values <= 1)).all()), (name, values)
            assert float(result.low[name]) <= float(result.mean[name]) <= float(result.high[name])

    # the popularity row is exactly what cross_validate gives for the same data and seed
    data = generate_interactions(90, 120, (10, 40), seed=0)
    direct = cross_validate(3, example.popularity, data, example.METRICS, seed=0)
    for name in example.METRICS:
        assert torch.equal(direct.values[name], pop.values[name])

    # the printed paired differences are mf - pop over the same folds
    section = out.split("paired difference")[1]
    for name in example.METRICS:
        line = next(line for line in section.splitlines() if line.split()[:1] == [name])
        mean, low, high = (float(v) for v in re.findall(r"[-+]\d+\.\d+", line)[:3])
        expected = mean_confidence_interval(mf.values[name] - pop.values[name])
        assert mean == pytest.approx(float(expected[0]), abs=1e-4)
        assert (low, high) == pytest.approx((float(expected[2]), float(expected[3])), abs=1e-4)
        assert re.search(r"\b\d/3\s*$", line)
    assert "pop (" in out and "mf (" in out and "total time:" in out
    assert all(math.isfinite(float(v)) for v in re.findall(r"\d+\.\d{4}", out))
