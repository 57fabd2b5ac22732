"""The TREC reader's memory with long ids (issue 33, "nothing unbounded"): a 12 KB, 64 KB or 1 MB document
id is read with working memory that grows with the file's bytes, not with the square of the longest id
(the reader's mask tables were width x width: 327 MB at its peak for a 12 KB id, 8.7 GB for 64 KB, a
MemoryError for 1 MB), and gives the same keys and the same evaluation as the file with the id renamed.

Peak memory is measured in a fresh process, by ``tracemalloc`` (numpy reports its allocations to it),
under an address-space cap so that a reader that needs gigabytes fails at once rather than swapping.
What the reader returns is at most 8 uint64 words a line and key column (an id of more than 56 bytes is
its first 56 bytes and a rank, its bytes kept once: ``parse.LongKeys``); the key columns held as
``[lines, longest id's words]`` took 1 GB for one 1 MB id among 1,000 lines. ``evaluate`` end to end
is measured the same way.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from torchrec_eval import cli
from torchrec_eval.trec import parse as trec_parse
from torchrec_eval.trec import read_run
from torchrec_eval.trec.tables import QRELS_COLUMNS, RUN_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
CAP = 512 << 20  # address space the child may add after its imports: the old reader's tables need more

CHILD = r"""
import json, os, resource, sys, tracemalloc
from torchrec_eval.trec.parse import read_columns
path, cap = sys.argv[1], int(sys.argv[2])
if os.path.exists("/proc/self/status"):  # the cap: what the child has mapped so far, plus `cap`
    mapped = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mapped + cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
tracemalloc.start()
table = read_columns(path, ("qid", "Q0", "docid", "rank", "score", "tag"), "run", keys=(0, 2), numbers=(4,),
                     extra_columns=True)
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"peak": peak, "keys": sum(int(k.nbytes) for k in table.keys.values()), "lines": len(table),
                  "width": int(table.keys[2].shape[1])}))
"""


def reader_peak(path: Path) -> dict:
    """{peak: traced bytes at the reader's peak, keys: bytes of the key columns it returns, lines, width}."""
    # one BLAS thread: OpenBLAS reserves a buffer per core at import, which a 16-core machine's cap refused
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), str(CAP)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def long_id(length: int, stem: bytes = b"dL") -> bytes:
    """A document id of ``length`` bytes that is not UTF-8 (0xff) and holds UTF-8 ('é'), after ``stem``."""
    return (stem + b"\xff\xc3\xa9-" * length)[:length]


def write_pair(folder: Path, doc: bytes, tie: bool = True) -> tuple[Path, Path]:
    """A run of 3 queries x 8 documents and its qrels; query q1's document 'dL' is ``doc``, relevant,
    retrieved at rank 3, with the score of the document below it if ``tie`` (trec_eval orders the two by
    document id)."""
    run, qrels = [], []
    for q in range(3):
        for r in range(8):
            name = doc if (q, r) == (1, 2) else b"d%d" % r
            score = b"%.2f" % (1 - 0.1 * (r + (tie and r == 2)))
            run.append(b"q%d Q0 %s %d %s tag" % (q, name, r + 1, score))
            if r % 2 == 0:
                qrels.append(b"q%d 0 %s %d" % (q, name, r % 3))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run").write_bytes(b"\n".join(run) + b"\n")
    (folder / "qrels").write_bytes(b"\n".join(qrels) + b"\n")
    return folder / "run", folder / "qrels"


def evaluate(capsys, run: Path, qrels: Path) -> str:
    assert cli.main(["evaluate", str(run), str(qrels), "--convention", "trec", "-q"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("length", [1 << 16, 1 << 20])
def test_one_long_id_among_short_ones(tmp_path, capsys, length):
    """One id of 64 KB or 1 MB among short ones: read in memory of a few times the file plus the key
    columns returned, as bytes (non-UTF-8 kept), and evaluated as the same files with it renamed."""
    doc = long_id(length)
    tie = True  # trec_eval orders the long id and the next by id (a lexsort key a word: 8 words, not 131,072)
    run_path, qrels_path = write_pair(tmp_path / "long", doc, tie)
    measured = reader_peak(run_path)
    size = run_path.stat().st_size
    assert measured["lines"] == 24 and measured["width"] == 8
    assert measured["peak"] <= measured["keys"] + 4 * size + (1 << 20), measured
    for path, columns, what, row in ((run_path, RUN_COLUMNS, "run", 10), (qrels_path, QRELS_COLUMNS, "qrels", 5)):
        table = trec_parse.read_columns(path, columns, what, keys=(0, 2), extra_columns=what == "run")
        assert trec_parse.decode_keys(table.keys[2][[row]])[0].encode("utf-8", "surrogateescape") == doc
    short_run, short_qrels = write_pair(tmp_path / "short", b"dL", tie)
    assert evaluate(capsys, run_path, qrels_path) == evaluate(capsys, short_run, short_qrels)


@pytest.mark.parametrize("length", [12 << 10, 1 << 16])
def test_a_file_of_long_ids_is_read_in_memory_linear_in_its_size(tmp_path, length):
    """Every id 12 KB or 64 KB long (one a line): the reader's peak is a small multiple of the file's
    size (it was 327 MB for 12 KB ids and a width x width table of 4 GB for 64 KB ones)."""
    path = tmp_path / "run"
    lines = [b"q%d Q0 %s %d 0.5 tag" % (i // 10, long_id(length - i, b"%d-" % i), i) for i in range(40)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    measured = reader_peak(path)
    size = path.stat().st_size
    assert measured["lines"] == 40 and measured["width"] == 8
    assert measured["peak"] <= 4 * size + (1 << 20), measured
    assert read_run(path).docid[7].encode("utf-8", "surrogateescape") == long_id(length - 7, b"7-")


def test_lines_longer_than_many_reads(tmp_path, monkeypatch):
    """A 64 KB id read 64 bytes at a time: its line is joined once, the lines around it read as usual."""
    monkeypatch.setattr(trec_parse, "CHUNK_BYTES", 64)
    doc = long_id(1 << 16)
    lines = [b"q1 Q0 d%d %d %d tag" % (i, i, 10 - i) for i in range(6)]
    lines[3] = b"q1 Q0 %s 3 7 tag" % doc
    path = tmp_path / "run"
    path.write_bytes(b"\n".join(lines))  # no final '\n'
    run = read_run(path)
    assert [d.encode("utf-8", "surrogateescape") for d in run.docid.tolist()] == [
        line.split()[2] for line in lines]
    assert run.score.tolist() == [10, 9, 8, 7, 6, 5]


def test_long_numbers(tmp_path):
    """Number tokens of hundreds of thousands of characters are parsed as before (numpy's parser, as
    Python's float), each at its own length; the first line whose token is not a number is named."""
    numbers = [b"0." + b"0" * 200_000 + b"1", b"1" + b"0" * 300, b"1e5", b"12345678901234567890", b"-" + b"9" * 500,
               b"0.5"]
    path = tmp_path / "run"
    path.write_bytes(b"".join(b"q1 Q0 d%d %d %s tag\n" % (i, i, n) for i, n in enumerate(numbers)))
    table = trec_parse.read_columns(path, RUN_COLUMNS, "run", keys=(0, 2), numbers=(4,), extra_columns=True)
    assert table.numbers[4].tolist() == [float(n) for n in numbers]
    path.write_bytes(b"".join(b"q1 Q0 d%d %d %s tag\n" % (i, i, n) for i, n in enumerate(
        [b"1e5", b"x" * 70_000, b"y", b"0.5"])))
    with pytest.raises(ValueError, match=rf"^{path}:2: the score column \(5 of qid Q0 docid rank score tag\) must "
                                         r"be a number, got 'xxxx"):
        read_run(path)


def test_a_long_id_does_not_widen_its_column(tmp_path):
    """A 64 KB id among 100 lines: its column is 8 words a line (the first 56 bytes and a rank), not the
    id's 8,192 (it was refused past the machine's memory: lines x the longest id), and decodes whole."""
    lines = [b"q1 Q0 d%d %d 0.5 tag" % (i, i) for i in range(100)]
    lines[49] = b"q1 Q0 %s 49 0.5 tag" % long_id(1 << 16)
    path = tmp_path / "run"
    path.write_bytes(b"\n".join(lines) + b"\n")
    run = read_run(path)
    assert run.doc_key.shape == (100, 8) and run.doc_key.long == (long_id(1 << 16),)
    assert pickle.loads(pickle.dumps(run.doc_key[40:60])).long == run.doc_key.long
    assert [d.encode("utf-8", "surrogateescape") for d in run.docid.tolist()] == [line.split()[2] for line in lines]


def test_keys_of_every_length_group(tmp_path):
    """Tokens of lengths on both sides of each length group's bounds (64, 128, ... bytes) in one chunk give
    the keys they gave before: big-endian words of their bytes, zero padded, in strcmp order."""
    rng = np.random.default_rng(0)
    lengths = [1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 4096, 4097]
    tokens = [bytes(rng.integers(1, 256, size=n, dtype=np.uint8).tolist()).replace(b" ", b"_").replace(b"\n", b"_")
              for n in lengths]
    tokens = [t.translate(bytes(range(256)).replace(b"\t", b"_").replace(b"\r", b"_").replace(b"\x0b", b"_")
                          .replace(b"\x0c", b"_")) for t in tokens]
    buffer = np.frombuffer(b" ".join(tokens), dtype=np.uint8)
    start = np.cumsum([0] + [len(t) + 1 for t in tokens[:-1]])
    end = start + np.array(lengths)
    keys = trec_parse._span_keys(buffer, start, end)
    width = 8 * keys.shape[1]
    expected = np.frombuffer(b"".join(t.ljust(width, b"\0") for t in tokens), dtype=">u8").reshape(len(tokens), -1)
    assert keys.shape == (len(tokens), (4097 + 7) // 8)
    assert (keys == expected).all()


EVALUATE_CHILD = r"""
import json, os, resource, sys, tracemalloc
from torchrec_eval import cli
run, qrels, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
if os.path.exists("/proc/self/status"):  # the cap: what the child has mapped so far, plus `cap`
    mapped = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mapped + cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
tracemalloc.start()
code = cli.main(["evaluate", run, qrels, "--convention", "trec", "-q"])
sys.stdout.flush()
peak = tracemalloc.get_traced_memory()[1]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
print(json.dumps({"code": code, "peak": peak, "rss": rss}), file=sys.stderr)
"""


def evaluate_peak(run: Path, qrels: Path) -> tuple[dict, str]:
    """({code, peak: traced bytes, rss: growth of the peak resident set}, stdout) of ``torchrec-eval evaluate
    --convention trec -q RUN QRELS`` in a fresh process under the address-space cap."""
    # one BLAS thread: OpenBLAS reserves a buffer per core at import, which a 16-core machine's cap refused
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    proc = subprocess.run([sys.executable, "-c", EVALUATE_CHILD, str(run), str(qrels), str(CAP)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    measured = json.loads(proc.stderr.strip().splitlines()[-1])
    assert measured["code"] == 0, proc.stderr[-2000:]
    return measured, proc.stdout


# ids that share their first 56 bytes (what a long id's key holds) and differ after, in an order that is
# not their lengths' order; one of exactly 56 bytes and one of 55 (held as bytes, not ranked), one that
# differs within the first 56 bytes, and one megabyte
_PREFIX = (b"m-" + b"\xff\xc3\xa9-" * 20)[:56]
SPECIAL = [_PREFIX + long_id(1 << 20), _PREFIX + b"b", _PREFIX + long_id(1000), _PREFIX + b"dL", _PREFIX,
           _PREFIX[:-1], _PREFIX[:40] + b"z" * 30, _PREFIX[:40] + b"+" * 30, _PREFIX + b"\xff" * 8]


def write_special(folder: Path, names: dict[bytes, bytes] | None = None) -> tuple[Path, Path]:
    """A run of 10 queries x 100 documents 'd..' (1,000 lines) in which query q3 retrieves the ``SPECIAL``
    ids but the last at one score (trec_eval orders them by id) and q7 the 1 MB one; a qrels judging
    them with grades that make their order count, and the last, not retrieved. ``names`` renames ids."""
    names = names or {}
    run, qrels = [], []
    for q in range(10):
        for r in range(100):
            doc = b"d%d" % r
            score = b"%.3f" % (1 - 0.001 * r)
            if q == 3 and r < len(SPECIAL) - 1:
                doc, score = SPECIAL[r], b"0.5"
            if q == 7 and r == 5:
                doc = SPECIAL[0]
            run.append(b"q%d Q0 %s %d %s tag" % (q, names.get(doc, doc), r + 1, score))
            if r % 3 == 0 or (q == 3 and r < len(SPECIAL)):
                qrels.append(b"q%d 0 %s %d" % (q, names.get(doc, doc), (r * 7 + q) % 4))
    qrels.append(b"q3 0 %s 3" % names.get(SPECIAL[-1], SPECIAL[-1]))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run").write_bytes(b"\n".join(run) + b"\n")
    (folder / "qrels").write_bytes(b"\n".join(qrels) + b"\n")
    return folder / "run", folder / "qrels"


def test_evaluate_one_megabyte_id_among_1000_lines_in_memory_linear_in_the_files(tmp_path):
    """``evaluate --convention trec -q`` end to end on a 1,000-line run holding a 1 MB id (and ids that
    share their first 56 bytes, tied): its peak (numpy's allocations and the resident set) is a small
    multiple of the files' bytes (the key columns alone were lines x 1 MB, 1 GB), and its output is that
    of the same files with the ids renamed to short ones in the same byte order."""
    run_path, qrels_path = write_special(tmp_path / "long")
    size = run_path.stat().st_size + qrels_path.stat().st_size
    measured, out = evaluate_peak(run_path, qrels_path)
    assert measured["peak"] <= 4 * size + (16 << 20), measured  # the modules evaluate imports: ~8 MB
    assert measured["rss"] <= 8 * size + (16 << 20), measured
    renamed = {doc: b"m%02d" % rank for rank, doc in enumerate(sorted(SPECIAL))}  # 'm..' > 'd..' as before
    short_run, short_qrels = write_special(tmp_path / "short", renamed)
    assert out == evaluate_peak(short_run, short_qrels)[1]
    assert "\tq3\t" in out


@pytest.mark.skipif(not os.environ.get("TREC_EVAL"), reason="TREC_EVAL: trec_eval's binary")
def test_long_ids_evaluate_as_trec_eval(tmp_path, capsys):
    """The files of shared 56-byte prefixes (the 1 MB id among them) give trec_eval's own output."""
    run_path, qrels_path = write_special(tmp_path)
    expected = subprocess.run([os.environ["TREC_EVAL"], "-q", str(qrels_path), str(run_path)], capture_output=True,
                              check=True).stdout.decode()
    assert evaluate(capsys, run_path, qrels_path) == expected


def test_long_ids_of_two_files_match_by_bytes(tmp_path):
    """Long ids are ranked per file (the run's and the qrels' ranks differ here): each run entry's
    judgement is found by the bytes of its id, and the long id the run lacks judges none."""
    from torchrec_eval.trec import read_qrels
    from torchrec_eval.trec.matching import judging_entries

    run_path, qrels_path = write_special(tmp_path)
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    assert run.doc_key.long != qrels.doc_key.long
    entry = judging_entries(run, qrels)  # [run entries]: the qrels entry judging each, -1 where none
    judged = {(q, d.encode("utf-8", "surrogateescape")): i
              for i, (q, d) in enumerate(zip(qrels.qid.tolist(), qrels.docid.tolist(), strict=True))}
    retrieved = [(q, d.encode("utf-8", "surrogateescape")) for q, d in zip(run.qid.tolist(), run.docid.tolist(),
                                                                           strict=True)]
    assert entry.tolist() == [judged.get(pair, -1) for pair in retrieved]
    assert (entry >= 0).sum() == len(qrels) - 1 and ("q3", SPECIAL[-1]) in judged


def test_long_query_ids(tmp_path):
    """Query ids of more than 56 bytes (sharing their first 56): evaluated as the same files with them
    renamed in the same byte order (their query column is decoded to an object array, not 4 bytes x
    queries x the longest), and as trec_eval evaluates them where its binary is given."""
    queries = [b"q1", _PREFIX + b"b", _PREFIX + long_id(1 << 16), _PREFIX, _PREFIX + b"\xff" * 8]

    def write(folder: Path, names: dict[bytes, bytes]) -> tuple[Path, Path]:
        run = [b"%s Q0 %s %d %.1f t" % (names.get(q, q), names.get(d, d), r, 1 - 0.1 * (r // 2))
               for q in queries for r, d in enumerate([b"d%d" % i for i in range(12)] + SPECIAL[1:4])]
        qrels = [b"%s 0 %s %d" % (names.get(q, q), names.get(d, d), r % 3)
                 for q in queries for r, d in enumerate([b"d%d" % i for i in range(0, 12, 3)] + SPECIAL[1:5])]
        folder.mkdir()
        (folder / "run").write_bytes(b"\n".join(run) + b"\n")
        (folder / "qrels").write_bytes(b"\n".join(qrels) + b"\n")
        return folder / "run", folder / "qrels"

    out = evaluate_bytes(*write(tmp_path / "long", {}))
    renamed = {name: b"m%02d" % rank for rank, name in enumerate(sorted({*queries[1:], *SPECIAL[1:5]}))}  # < "q1"
    short = evaluate_bytes(*write(tmp_path / "short", renamed))
    for name, new in renamed.items():  # the same lines, the long query ids in place of the short ones
        short = short.replace(b"\t%s\t" % new, b"\t%s\t" % name)
    assert out == short and b"\t%s\t" % queries[2] in out
    if os.environ.get("TREC_EVAL"):
        run_path, qrels_path = tmp_path / "long" / "run", tmp_path / "long" / "qrels"
        assert out == subprocess.run([os.environ["TREC_EVAL"], "-q", str(qrels_path), str(run_path)],
                                     capture_output=True, check=True).stdout


def evaluate_bytes(run: Path, qrels: Path) -> bytes:
    """The bytes ``torchrec-eval evaluate --convention trec -q`` writes (query ids that are not UTF-8 kept)."""
    code = "import sys; from torchrec_eval import cli; sys.exit(cli.main(sys.argv[1:]))"
    # one BLAS thread: OpenBLAS reserves a buffer per core at import, which a 16-core machine's cap refused
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    return subprocess.run([sys.executable, "-c", code, "evaluate", str(run), str(qrels), "--convention", "trec", "-q"],
                          capture_output=True, check=True, env=env, timeout=120).stdout
