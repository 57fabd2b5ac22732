"""bench_core.py runs (quick sizes) and its shared helpers do what the other benchmarks rely on: timing that
includes the device's synchronisation, and a ``--device`` option every script takes and checks."""

from __future__ import annotations

import re
import time

import pytest
import torch

from tests.benchmark_runs import load_benchmark

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

SCRIPTS = ["bench_core", "bench_inputs", "bench_pairwise", "bench_training_loop"]
CUDA = torch.cuda.is_available()


@pytest.fixture
def keep_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_bench_core_quick(keep_threads):
    report = load_benchmark("bench_core").main(["--quick"])
    assert report.splitlines()[0].startswith(f"torch {torch.__version__}, cpu, 1 thread(s)")
    assert "one update, on cpu" in report and "update + compute, on cpu" in report
    rows = ("torch.topk(scores, 100) (floor)", "suite, binary target (bool)", "suite, ids form (target_ids)",
            "torchmetrics.retrieval (6 metrics)", "torchrec_eval RankingMetrics")
    for row in rows:
        assert row in report
    assert len(re.findall(r"\d+\.\d\dx", report)) == 5  # a ratio to topk on every row of table (a)
    # table (b) computes the same values as torchmetrics.retrieval, the independent oracle
    gap = float(re.search(r"max \|difference\| of the values: (\S+)\)", report).group(1))
    assert gap < 1e-6


def test_interleaved_times_include_the_device_sync(monkeypatch):
    """A CUDA case returns once its kernels are queued: the timer must wait for them. Stand-in for the
    GPU: a synchronize that takes 20 ms; the cases themselves take no time."""
    core = load_benchmark("bench_core")
    calls = []

    def slow_sync(device):
        calls.append(device)
        time.sleep(0.02)

    monkeypatch.setattr(torch.cuda, "synchronize", slow_sync)
    device = torch.device("cuda:0")
    times = core._interleaved({"a": lambda: None, "b": lambda: None}, repeats=3, device=device)
    assert calls == [device] * (2 * (1 + 3))  # after the warm-up and after every timed run of each case
    assert all(ms >= 19 for ms in times.values()), times
    calls.clear()
    cpu = core._interleaved({"a": lambda: None}, repeats=3, device=torch.device("cpu"))
    assert calls == [] and cpu["a"] < 19


@pytest.mark.parametrize("script", SCRIPTS)
def test_device_option_is_parsed(script):
    parser = load_benchmark(script).build_parser()
    assert parser.parse_args([]).device == "cpu"
    assert parser.parse_args(["--device", "cuda"]).device == "cuda"


@pytest.mark.skipif(CUDA, reason="checks the message given where CUDA is absent")
@pytest.mark.parametrize("script", SCRIPTS)
def test_device_cuda_without_cuda_exits_with_a_message(script, capsys, keep_threads):
    with pytest.raises(SystemExit) as exit_info:
        load_benchmark(script).main(["--device", "cuda", "--quick"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--device 'cuda': CUDA is not available here" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("name", "message"),
    [("tpu", "is not a device torch knows"), ("mps", "run on cpu or cuda only")]
    + ([] if CUDA else [("cuda:1", "CUDA is not available")]),
)
def test_unusable_devices_are_refused_by_name(name, message, capsys):
    core = load_benchmark("bench_core")
    with pytest.raises(SystemExit):
        core.resolve_device(core.build_parser(), name)
    err = capsys.readouterr().err
    assert f"--device {name!r}" in err and message in err


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("script", SCRIPTS)
def test_quick_run_on_cuda_names_the_gpu(script, capsys, keep_threads):
    load_benchmark(script).main(["--device", "cuda", "--quick"])
    out = capsys.readouterr().out
    assert f"{torch.cuda.get_device_name(0)} (cuda, synchronised timing)" in out
    if script == "bench_inputs":
        launches = re.search(r"CUDA kernel launches per update .*: (\d+) kernels, (\d+) memory", out)
        assert launches is not None and int(launches.group(1)) > 0, out


def test_core_items_option_sets_table_a_width():
    parser = load_benchmark("bench_core").build_parser()
    assert parser.parse_args([]).items == 20_000
    assert parser.parse_args(["--items", "1000000"]).items == 1_000_000
