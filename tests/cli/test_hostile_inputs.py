"""``torchrec-eval`` on hostile inputs and outputs, driven for real in a subprocess (in the spirit of
trec_eval's own tests and of ``tests/scripts/fuzz_trec_eval.py``).

Every failure must take the command's one error path: exit status 2, ONE line on stderr that names the
file (and the line where one applies) and the problem, no traceback, and nothing written: no output
file, or an old one untouched. Ids are bytes in and bytes out, whatever they are and whatever the locale.

Most cases use ``--convention trec`` on TREC files: that path does not import torch, so each run is quick.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
STRICT_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "ascii:strict", "PYTHONUTF8": "0",
                 "PYTHONCOERCECLOCALE": "0"}
RUN = b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\nq2 Q0 d1 1 0.3 t\n"
QRELS = b"q1 0 d1 1\nq2 0 d2 1\n"


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["MPLBACKEND"] = "Agg"
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def run_cli(*args: object, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The command in a subprocess; stdout and stderr as bytes (an id need not be text)."""
    return subprocess.run([sys.executable, "-m", "torchrec_eval", *map(str, args)], cwd=ROOT,
                          env=env or _env(), capture_output=True, timeout=timeout)


def assert_refused(proc: subprocess.CompletedProcess, tmp_path: Path, *words: object) -> str:
    """Exit status 2, nothing on stdout, and one line on stderr holding each of ``words``: a path as it is,
    other words in what is left once the test's folder is taken out (its name holds the test's words)."""
    err = proc.stderr.decode("utf-8", "backslashreplace")
    assert proc.returncode == 2, f"rc={proc.returncode}\nstderr:\n{err}"
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("torchrec-eval") and err.endswith("\n"), err
    problem = err.replace(str(tmp_path), "TMP")
    for word in words:
        assert (str(word) in err) if isinstance(word, Path) else (word in problem), (word, err)
    assert proc.stdout == b"", proc.stdout[:300]
    return problem


@pytest.fixture
def trec(tmp_path: Path) -> tuple[Path, Path]:
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_bytes(RUN)
    qrels.write_bytes(QRELS)
    return run, qrels


# ---------------------------------------------------------------------------------------------
# tensor files: wrong dtypes, NaN, empty, binary
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tensors", "name", "shown"),
    [
        ({"ranked_ids": [[1.7, 2.0]], "target_ids": [[1]]}, "ranked_ids", "1.7"),  # was item 1
        ({"ranked_ids": [[1, 2]], "target_ids": [[np.nan]]}, "target_ids", "nan"),  # was -9223372036854775808
        ({"ranked_ids": [[1, 2]], "target_ids": [[1e30]]}, "target_ids", "1e+30"),  # beyond int64
        ({"preds": [[0.5, 0.2]], "target": [[1, 0]], "mask": [[0.5, 1.0]]}, "mask", "0.5"),
        ({"preds": [[0.5, 0.2]], "target": [[1, 0]], "mask": [[np.nan, 1.0]]}, "mask", "nan"),
        ({"preds": [[0.5, 0.2]], "target": [[1, 0]], "mask": [[2, 1]]}, "mask", "2"),
    ],
)
def test_tensor_file_with_non_integer_ids_or_mask_is_refused(tmp_path, tensors, name, shown):
    path = tmp_path / "inputs.npz"
    np.savez(path, **{key: np.array(value) for key, value in tensors.items()})
    problem = assert_refused(run_cli("evaluate", path, "-m", "mrr@2"), tmp_path, path, repr(name), shown)
    assert "must hold" in problem


def test_tensor_file_with_no_row_is_refused(tmp_path):
    path = tmp_path / "empty.npz"
    np.savez(path, preds=np.zeros((0, 3)), target=np.zeros((0, 3)))
    proc = run_cli("evaluate", path, "-m", "ndcg@2")
    assert_refused(proc, tmp_path, path, "0 rows")  # was: exit 0, "nan" and torchmetrics' warning


@pytest.mark.parametrize("suffix", [".pt", ".npz"])
def test_empty_tensor_file_says_it_is_empty(tmp_path, suffix):
    path = tmp_path / f"zero{suffix}"
    path.write_bytes(b"")
    assert_refused(run_cli("evaluate", path), tmp_path, path, "is empty")  # was: "(EOFError: )"


def test_binary_tensor_file_is_one_line(tmp_path):
    path = tmp_path / "noise.pt"
    path.write_bytes(bytes(range(256)) * 8)
    assert_refused(run_cli("evaluate", path), tmp_path, path, "cannot read tensors")  # was: torch's paragraph


# ---------------------------------------------------------------------------------------------
# arguments: cut-offs, huge numbers, a directory as an input
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("convention", [[], ["--convention", "trec"]])
def test_zero_cutoff_names_the_cutoff(trec, tmp_path, convention):
    proc = run_cli("evaluate", *trec, "-m", "ndcg@0", *convention)
    problem = assert_refused(proc, tmp_path, "ndcg@0", "positive integer", "'0'")
    assert "Unknown metric" not in problem


@pytest.mark.parametrize("value", ["99999999999999999999", "x"])
def test_huge_or_bad_max_docs_is_one_line(trec, tmp_path, value):
    proc = run_cli("evaluate", *trec, "--convention", "trec", "-M", value)
    assert_refused(proc, tmp_path, "-M", repr(value))


def test_directory_as_the_run_says_so(trec, tmp_path):
    folder = tmp_path / "a_folder"
    folder.mkdir()
    for files in ((folder, trec[1]), (trec[0], folder)):  # was: "no such run file"
        assert_refused(run_cli("evaluate", *files, "--convention", "trec"), tmp_path, folder, "directory")


# ---------------------------------------------------------------------------------------------
# outputs that cannot be written: refused before the evaluation, nothing left behind
# ---------------------------------------------------------------------------------------------
def test_directory_as_per_query_is_refused(trec, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    proc = run_cli("evaluate", *trec, "--convention", "trec", "--per-query", folder)
    assert_refused(proc, tmp_path, folder, "directory")  # was: a traceback after the evaluation
    assert list(folder.iterdir()) == []


def test_per_query_in_a_missing_directory_is_refused(trec, tmp_path):
    path = tmp_path / "missing" / "per_query.tsv"
    proc = run_cli("evaluate", *trec, "-m", "ndcg@10", "--per-query", path)
    assert_refused(proc, tmp_path, path, "no such directory")
    assert not path.parent.exists()


def test_per_query_onto_an_input_is_refused(trec, tmp_path):
    run, qrels = trec
    proc = run_cli("evaluate", run, qrels, "--convention", "trec", "--per-query", qrels)
    assert_refused(proc, tmp_path, qrels, "input")
    assert qrels.read_bytes() == QRELS


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only directory")
def test_per_query_in_a_read_only_directory_is_refused(trec, tmp_path):
    folder = tmp_path / "read_only"
    folder.mkdir()
    old = folder / "per_query.tsv"
    old.write_text("old content\n")
    folder.chmod(0o500)
    try:
        proc = run_cli("evaluate", *trec, "--convention", "trec", "--per-query", old)
        assert sorted(p.name for p in folder.iterdir()) == ["per_query.tsv"]
    finally:
        folder.chmod(0o700)
    assert_refused(proc, tmp_path, old, "cannot create")
    assert old.read_text() == "old content\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a read-only file")
def test_read_only_per_query_file_is_refused(trec, tmp_path):
    old = tmp_path / "per_query.tsv"
    old.write_text("old content\n")
    old.chmod(0o400)
    proc = run_cli("evaluate", *trec, "--convention", "trec", "--per-query", old)
    assert_refused(proc, tmp_path, old, "read-only")
    assert old.read_text() == "old content\n"


def test_demo_plot_into_a_directory_is_refused_before_training(tmp_path):
    folder = tmp_path / "plots"
    folder.mkdir()
    proc = run_cli("demo", "--epochs", "1", "--users", "30", "--items", "40", "--dim", "4", "--plot", folder)
    assert_refused(proc, tmp_path, folder, "directory")  # was: a traceback after the training
    assert list(folder.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# ids that are not UTF-8, 100 KB ids, strict locales: bytes in, the same bytes out
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def byte_ids(tmp_path: Path) -> tuple[Path, Path, bytes, bytes]:
    """A run and qrels whose query ids are not UTF-8, one of them 100 KB long, and a 100 KB document id."""
    long_qid, short_qid = b"q\xff" + b"x" * 100_000, b"\xe9t\xe9"  # Latin-1 "ete": not UTF-8
    long_doc = b"d\x80" * 50_000
    run, qrels = tmp_path / "run.bin", tmp_path / "qrels.bin"
    run.write_bytes(b"".join([long_qid + b" Q0 " + long_doc + b" 1 0.9 t\n", long_qid + b" Q0 d2 2 0.5 t\n",
                              short_qid + b" Q0 d2 1 0.7 t\n"]))
    qrels.write_bytes(b"".join([long_qid + b" 0 " + long_doc + b" 1\n", short_qid + b" 0 d2 1\n"]))
    return run, qrels, long_qid, short_qid


@pytest.mark.parametrize("convention", [[], ["--convention", "trec"]])
def test_non_utf8_ids_are_written_as_their_bytes(byte_ids, tmp_path, convention):
    run, qrels, long_qid, short_qid = byte_ids
    per_query = tmp_path / "per_query.tsv"
    per_query.write_text("old content\n")
    proc = run_cli("evaluate", run, qrels, "-m", "ndcg@10", "--per-query", per_query, "--quiet", *convention)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "backslashreplace")[-2000:]
    rows = {line.split(b"\t")[0] for line in per_query.read_bytes().splitlines()[1:]}
    assert rows == {long_qid, short_qid}  # was: exit 2, a message naming no file, and a 0-byte file
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


@pytest.mark.parametrize("convention", [[], ["--convention", "trec"]])
def test_strict_locale_writes_the_ids_bytes_on_stdout(byte_ids, convention):
    run, qrels, long_qid, short_qid = byte_ids
    proc = run_cli("evaluate", run, qrels, "-m", "ndcg@10", "-q", "--per-query", "-", "--quiet", *convention,
                   env=_env(**STRICT_LOCALE))
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "backslashreplace")[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == b"qid\tndcg@10"
    assert {line.split(b"\t")[0] for line in lines[1:3]} == {long_qid, short_qid}  # --per-query -
    per_query_lines = [line for line in lines[3:] if b"\tall\t" not in line]  # -q
    assert {line.split(b"\t")[1] for line in per_query_lines} == {long_qid, short_qid}


# ---------------------------------------------------------------------------------------------
# the writer itself: whole or not at all, links and pipes kept
# ---------------------------------------------------------------------------------------------
def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    from torchrec_eval.cli.paths import written_whole

    path = tmp_path / "per_query.tsv"
    path.write_text("old content\n")
    with pytest.raises(RuntimeError), written_whole(path, "--per-query") as staged:
        Path(staged).write_text("half of the new")
        raise RuntimeError("the evaluation failed half-way")
    assert path.read_text() == "old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["per_query.tsv"]


def test_a_link_keeps_pointing_at_the_new_content_and_a_pipe_is_written_in_place(tmp_path):
    from torchrec_eval.cli.paths import write_file

    target, link = tmp_path / "target.tsv", tmp_path / "link.tsv"
    target.write_text("old\n")
    target.chmod(0o640)
    link.symlink_to(target)
    write_file(str(link), b"new\n", "--per-query")
    assert link.is_symlink() and target.read_bytes() == b"new\n"
    assert target.stat().st_mode & 0o777 == 0o640  # its permissions kept
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_file(str(fifo), b"through the pipe\n", "--per-query")
    reader.join(timeout=30)
    assert received == [b"through the pipe\n"] and fifo.is_fifo()


def test_torch_float_ids_too(tmp_path):
    """A ``.pt`` file's float ids, as a ``.npz``'s: refused, naming the tensor (torch.save's path)."""
    path = tmp_path / "ids.pt"
    torch.save({"ranked_ids": torch.tensor([[3.0, 1.5]]), "target_ids": torch.tensor([[3]])}, path)
    assert_refused(run_cli("evaluate", path, "-m", "mrr@2"), tmp_path, path, "'ranked_ids'", "1.5")


# ---------------------------------------------------------------------------------------------
# huge relevance levels under trec_eval's integer reading
# ---------------------------------------------------------------------------------------------
def test_a_relevance_beyond_64_bits_is_refused_with_its_line(tmp_path: Path) -> None:
    """It was cast to an arbitrary int64 level with a numpy RuntimeWarning."""
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_bytes(b"1 Q0 d1 1 0.9 t\n1 Q0 d2 2 0.5 t\n")
    qrels.write_bytes(b"1 0 d2 0\n1 0 d1 99999999999999999999\n")
    proc = run_cli("evaluate", "--convention", "trec", "-m", "P.1", run, qrels)
    assert_refused(proc, tmp_path, qrels, ":2:", "does not fit in a 64-bit integer")


def test_a_relevance_level_whose_gain_table_cannot_be_allocated_is_refused(tmp_path: Path) -> None:
    """NDCG keeps a gain per level up to the largest (as trec_eval): 10**15 levels were a numpy
    MemoryError traceback."""
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_bytes(b"1 Q0 d1 1 0.9 t\n1 Q0 d2 2 0.5 t\n")
    qrels.write_bytes(b"1 0 d1 1000000000000000\n1 0 d2 0\n")
    proc = run_cli("evaluate", "--convention", "trec", "-m", "ndcg", run, qrels)
    assert_refused(proc, tmp_path, "measure 'ndcg'", "1,000,000,000,000,000", "more than this machine can allocate")
