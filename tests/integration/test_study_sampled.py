"""The sampled-evaluation study runs (quick sizes) and its finding holds: the default estimate
(``bias_variance``) is closer to the exact metric than the naive sampled one in at least 90% of the
(model, metric, m) cells, and orders the models at least as well as naive does."""

import re

import pytest

from tests.benchmark_runs import run_benchmark

pytestmark = pytest.mark.slow  # a benchmark smoke run


def test_study_sampled_quick(capsys):
    assert run_benchmark("study_sampled", "--quick") == 0
    out = capsys.readouterr().out
    closer, cells = map(int, re.search(r"bias_variance\s+closer to exact than naive in (\d+)/(\d+)", out).groups())
    assert cells == 4 * 3 * 2 and closer >= 0.9 * cells  # 4 models, 3 metrics, m in (50, 100)
    for line in re.findall(r"Kendall tau vs exact.*", out):
        taus = dict(re.findall(r"(\w+) ([+-]\d\.\d\d)", line.split("m=")[1]))
        assert float(taus["bias_variance"]) >= float(taus["naive"]), line
