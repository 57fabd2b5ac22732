"""The TREC file reader of ``torchrec-eval`` (torchrec_eval.trec.parse, torchrec_eval.trec) against a
line-by-line reference (Python's ``str.split`` and ``float``, trec_eval's comment rules), on files
written in every layout trec_eval accepts, read in chunks small enough to cut lines and tokens;
and the tie orders: trec_eval's (document id descending, as bytes) and ranx's (against ranx).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from tests.ranx_ids import file_doc_id
from torchrec_eval import cli
from torchrec_eval.trec import keys, order, ranking_order, read_qrels, read_run, to_ranked
from torchrec_eval.trec import parse as trec_parse
from torchrec_eval.trec.formats import only_query

SCORES = ["1.5", "-0.25", "+3", "1e-5", "2E3", ".5", "5.", "007", "0.12345678901234567", "12345678901234567890",
          "-0", "3.000000", "99999999999999.9", "1234567.1234567", "-.75"]
IDS = ["d1", "d10", "d9", "doc#1", "é-doc", "z", "clueweb09-en0000-00-00001", "clueweb09-en0000-00-00001x",
       "x" * 40, "ab", "abc", "日本"]


def reference_run(text: str) -> list[tuple[int, str, str, float, str]]:
    """(line, qid, docid, score, tag) of each data line, as trec_eval 10 reads a run."""
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        tokens = line.split()
        if not tokens or tokens[0].startswith("#"):
            continue
        rows.append((number, tokens[0], tokens[2], float(tokens[4]), tokens[5]))
    return rows


def write_run(path: Path, rng: random.Random, lines: int = 400) -> str:
    separators = [" ", "\t", "  ", " \t "]
    out = []
    for i in range(lines):
        kind = rng.random()
        if kind < 0.04:
            out.append(rng.choice(["", "   ", "# a comment", "  # indented comment with 6 tokens a b"]))
            continue
        cells = [f"q{rng.randrange(12)}", "Q0", rng.choice(IDS) + str(i), str(i), rng.choice(SCORES), "tag"]
        if rng.random() < 0.1:
            cells += ["extra", "columns"]
        sep = rng.choice(separators) if rng.random() < 0.3 else " "
        line = sep.join(cells)
        if rng.random() < 0.1:
            line = "  " + line + " "
        out.append(line + ("\r" if rng.random() < 0.05 else ""))
    text = "\n".join(out) + ("\n" if rng.random() < 0.5 else "")
    path.write_bytes(text.encode())
    return text


@pytest.mark.parametrize("chunk", [64, 200, 1 << 18])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_run_reader_equals_line_by_line_reference(tmp_path, monkeypatch, chunk, seed):
    monkeypatch.setattr(trec_parse, "CHUNK_BYTES", chunk)
    rng = random.Random(seed)
    path = tmp_path / "run"
    text = write_run(path, rng)
    expected = reference_run(text)
    run = read_run(path)
    assert run.line.tolist() == [row[0] for row in expected]
    assert run.qid.tolist() == [row[1] for row in expected]
    assert run.docid.tolist() == [row[2] for row in expected]
    assert run.score.tolist() == [row[3] for row in expected]  # exactly: correctly rounded, as strtod
    assert run.tag == expected[-1][4].rstrip("\r")
    assert run.queries.tolist() == sorted(set(run.qid.tolist()))


def test_columns_are_filled_across_chunks_and_widened_late(tmp_path, monkeypatch):
    """The reader fills columns allocated once for the file: a file of entries only holds no line
    numbers (entry i is line i + 1); a blank or comment line after many chunks numbers every entry,
    the earlier ones too; a document id longer than all before it widens its column, keeping the
    earlier ids; a last line without '\\n' is read."""
    monkeypatch.setattr(trec_parse, "CHUNK_BYTES", 64)
    lines = [f"q{i // 10} Q0 d{i} {i} {SCORES[i % len(SCORES)]} t" for i in range(60)]
    lines[45] = lines[45].replace("d45 ", "a-document-id-longer-than-eight-bytes ")
    regular, skipping = tmp_path / "regular", tmp_path / "skipping"
    regular.write_text("\n".join(lines))
    skipping.write_text("\n".join(lines[:50] + ["# a comment", ""] + lines[50:]) + "\n")
    for path in (regular, skipping):
        expected = reference_run(path.read_text())
        run = read_run(path)
        assert run.line.tolist() == [row[0] for row in expected]
        assert run.docid.tolist() == [row[2] for row in expected]
        assert run.score.tolist() == [row[3] for row in expected]
    assert read_run(regular).lines is None
    assert read_run(skipping).lines.tolist() == list(range(1, 51)) + list(range(53, 63))
    one = only_query(read_run(regular), "q5")
    assert one.line.tolist() == list(range(51, 61)) and one.docid.tolist() == [f"d{i}" for i in range(50, 60)]


def test_plain_layout_equals_general_layout(tmp_path, monkeypatch):
    """A file in the plain layout (one space or tab between columns, '\\n' line ends) takes the fast
    path; the same lines with two spaces somewhere take the general tokenizer: both read the same."""
    lines = [f"q{i % 7} Q0 {IDS[i % len(IDS)]}{i} {i} {SCORES[i % len(SCORES)]} run" for i in range(300)]
    plain, mixed = tmp_path / "plain", tmp_path / "mixed"
    plain.write_text("\n".join(lines) + "\n")
    mixed.write_text("\n".join(lines[:-1] + [lines[-1].replace(" ", "  ", 1)]) + "\n")
    calls = []
    original = trec_parse._general_layout
    monkeypatch.setattr(trec_parse, "_general_layout", lambda *a, **k: calls.append(1) or original(*a, **k))
    a = read_run(plain)
    assert not calls
    b = read_run(mixed)
    assert calls
    for field in ("qid", "docid", "score", "line"):
        assert getattr(a, field).tolist() == getattr(b, field).tolist()


def test_qrels_reader(tmp_path, monkeypatch):
    monkeypatch.setattr(trec_parse, "CHUNK_BYTES", 50)
    text = "#qid iter docid rel\nq1 0 doc#1 2\n\nq1\t0\tz 0\r\n  q2 0 d1 -1\nq2 0 d2 1.9\nq10 0 d2 3"  # no final \n
    path = tmp_path / "qrels"
    path.write_text(text)
    qrels = read_qrels(path)
    assert qrels.qid.tolist() == ["q1", "q1", "q2", "q2", "q10"]
    assert qrels.docid.tolist() == ["doc#1", "z", "d1", "d2", "d2"]
    assert qrels.rel.tolist() == [2.0, 0.0, -1.0, 1.9, 3.0]
    assert qrels.line.tolist() == [2, 4, 5, 6, 7]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("q1 Q0 d1 1 0.5 t\n" * 3 + "q1 Q0 d2 2 0.x t\n", 4, "score column"),
        ("q1 Q0 d1 1 0.5 t\n\n# c\nq1 Q0 d2 2\n", 4, "6 columns"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 1 inf t\n", 2, "finite"),
        ("q1 0 d1 1\n", 1, "got 4: 'q1 0 d1 1' \\(a qrels line\\? torchrec-eval takes the run first"),
        ("".join(f"q{i % 2} Q0 d{i} 1 0.5 t\n" for i in range(40)) + "q0 Q0 d8 1 0.4 t\n", 41,
         "document 'd8' is listed twice for query 'q0' in this run \\(first at line 9\\)"),
    ],
)
def test_errors_name_the_line_across_chunks(tmp_path, monkeypatch, text, line, words):
    monkeypatch.setattr(trec_parse, "CHUNK_BYTES", 40)
    path = tmp_path / "run"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"^{path}:{line}: .*{words}"):
        read_run(path)


def test_trec_ties_follow_byte_order(tmp_path):
    """Equal scores: document id descending, compared as bytes (strcmp): "d9" > "d10" > "d1",
    "abc" > "ab", UTF-8 after ASCII; ids longer than one 8-byte word compare on every word."""
    docs = ["d1", "d10", "d9", "ab", "abc", "é", "z", "clueweb09-en0000-00-00001", "clueweb09-en0000-00-00002",
            "clueweb09-en0000-00-00001x", "日本"]
    path = tmp_path / "run"
    path.write_text("".join(f"q Q0 {d} 1 1.0 t\n" for d in docs) + "q Q0 top 1 2.0 t\n")
    run = read_run(path)
    ranked = run.docid[ranking_order(run, "trec")].tolist()
    assert ranked == ["top"] + sorted(docs, key=str.encode, reverse=True)
    assert run.docid[ranking_order(run, "file")].tolist() == ["top"] + docs


def test_relevance_level_and_max_docs_in_ranked_form(tmp_path):
    (tmp_path / "run").write_text("".join(f"q Q0 d{i} {i} {10 - i} t\n" for i in range(6)))
    (tmp_path / "qrels").write_text("q 0 d1 1\nq 0 d3 2.7\nq 0 d9 3\nq 0 d4 0\n")
    run, qrels = read_run(tmp_path / "run"), read_qrels(tmp_path / "qrels")
    data = to_ranked(run, qrels, relevance_level=2, max_docs=4, integer_relevance=True)
    assert data.docids[data.ranked_ids[0].numpy()].tolist() == ["d0", "d1", "d2", "d3"]
    assert data.docids[data.target_ids[0].numpy()].tolist() == ["d3", "d9"]
    assert data.target_gains[0].tolist() == [2.0, 3.0]  # 2.7 read as trec_eval reads it: 2


def tied_files(folder: Path, lengths: list[int], seed: int = 0) -> tuple[Path, Path]:
    rng = random.Random(seed)
    run_lines, qrels_lines = [], []
    for q, n in enumerate(lengths):
        docs = list(dict.fromkeys(file_doc_id(rng.randrange(5000)) for _ in range(n)))  # ranx: tests/ranx_ids.py
        for i, d in enumerate(docs):
            run_lines.append(f"q{q} Q0 {d} {i + 1} {rng.choice([1.0, 2.0, 3.0])} r")
        for d in rng.sample(docs, max(1, len(docs) // 4)):
            qrels_lines.append(f"q{q} 0 {d} {rng.choice([1, 2])}")
    rng.shuffle(run_lines)
    run_path, qrels_path = folder / "run.trec", folder / "qrels.trec"
    run_path.write_text("\n".join(run_lines) + "\n")
    qrels_path.write_text("\n".join(qrels_lines) + "\n")
    return run_path, qrels_path


RANX_METRICS = {"ndcg@10": "ndcg@10", "map@10": "map@10", "precision@5": "precision@5", "recall@10": "recall@10",
                "mrr@10": "mrr@10", "hitrate@5": "hit_rate@5"}


def ranx_values(run_path: Path, qrels_path: Path) -> dict[str, float]:
    ranx = pytest.importorskip("ranx")
    values = ranx.evaluate(ranx.Qrels.from_file(str(qrels_path), kind="trec"),
                           ranx.Run.from_file(str(run_path), kind="trec"), list(RANX_METRICS.values()))
    return {ours: float(values[theirs]) for ours, theirs in RANX_METRICS.items()}


@pytest.mark.slow
@pytest.mark.xdist_group("ranx")  # every test that runs ranx on one xdist worker: tests/ranx_ids.py
def test_ranx_convention_breaks_ties_as_ranx(tmp_path, capsys):
    """--convention ranx ranks a tied run as ranx.Run does (numba's quicksort of the negated scores,
    in the file's order): ranx's numbers, where trec_eval's tie order gives others."""
    pytest.importorskip("numba")
    run_path, qrels_path = tied_files(tmp_path, [5, 12, 15, 16, 40, 100, 300] * 5)
    expected = ranx_values(run_path, qrels_path)
    names = list(RANX_METRICS)
    assert cli.main(["evaluate", str(run_path), str(qrels_path), "--convention", "ranx", "--json", "--quiet",
                     "-m", *names]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == pytest.approx(expected, abs=1e-12)
    assert cli.main(["evaluate", str(run_path), str(qrels_path), "--convention", "trec", "--json", "--quiet",
                     "-m", "ndcg@10"]) == 0
    assert json.loads(capsys.readouterr().out)["ndcg@10"] != pytest.approx(expected["ndcg@10"], abs=1e-6)


@pytest.mark.xdist_group("ranx")  # every test that runs ranx on one xdist worker: tests/ranx_ids.py
def test_ranx_order_without_numba(tmp_path, capsys, monkeypatch):
    """Without numba, equal scores keep the file's order: ranx's own order for lists of up to 15
    documents (numba's quicksort sorts those by insertion, stably); longer tied lists get a warning."""
    pytest.importorskip("ranx")

    def no_numba():
        raise ImportError("No module named 'numba'")

    monkeypatch.setattr(order, "_segment_argsort", no_numba)
    short_run, short_qrels = tied_files(tmp_path, [3, 8, 15, 15, 11] * 6, seed=1)
    assert cli.main(["evaluate", str(short_run), str(short_qrels), "--convention", "ranx", "--json", "-m",
                     *RANX_METRICS]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == pytest.approx(ranx_values(short_run, short_qrels), abs=1e-12)
    assert "numba" not in captured.err
    folder = tmp_path / "long"
    folder.mkdir()
    long_run, long_qrels = tied_files(folder, [40, 60], seed=2)
    assert cli.main(["evaluate", str(long_run), str(long_qrels), "--convention", "ranx", "-m", "ndcg@10"]) == 0
    assert "needs numba" in capsys.readouterr().err


def test_other_conventions_keep_the_file_order_of_ties(tmp_path, capsys):
    """The "index" tie order of the other presets is the run file's order among equal scores."""
    (tmp_path / "run").write_text("q Q0 b 1 1.0 t\nq Q0 a 2 1.0 t\nq Q0 c 3 1.0 t\n")
    (tmp_path / "qrels").write_text("q 0 b 1\n")
    for convention, expected in (("recbole", 1.0), ("trec", 1 / 2)):  # trec: c, b, a
        assert cli.main(["evaluate", str(tmp_path / "run"), str(tmp_path / "qrels"), "--convention", convention,
                         "--json", "--quiet", "-m", "mrr"]) == 0
        assert json.loads(capsys.readouterr().out) == {"mrr": expected}


def test_keys_round_trip():
    keys = trec_parse._span_keys(np.frombuffer(b"abc clueweb09-en0000 x", np.uint8), np.array([0, 4, 21]),
                                 np.array([3, 20, 22]))
    assert keys.shape == (3, 2)
    assert trec_parse.decode_keys(keys).tolist() == ["abc", "clueweb09-en0000", "x"]


def test_hash_collisions_fall_back_to_exact_comparisons(tmp_path, monkeypatch, capsys):
    """Every (query, document) and query id with one hash: the exact fallbacks (rows sorted, candidates
    tried in turn) give the same ranking and values, and still find a repeated document."""
    from tests.trec_files import make_trec

    run_path, qrels_path, _, _ = make_trec(tmp_path, seed=3, num_queries=12, deep=True)
    args = ["evaluate", str(run_path), str(qrels_path), "--convention", "trec", "--quiet", "-q", "-m", "official",
            "ndcg_cut.5", "set_recall"]
    assert cli.main(args) == 0
    expected = capsys.readouterr().out
    monkeypatch.setattr(keys, "_hash_words", lambda keys, seed=None: np.zeros(len(keys), dtype=np.uint64))
    assert cli.main(args) == 0
    assert capsys.readouterr().out == expected
    lines = run_path.read_text().splitlines()
    run_path.write_text("\n".join(lines + [lines[5].replace(" 1 ", " 9 ")]) + "\n")
    with pytest.raises(ValueError, match=rf":{len(lines) + 1}: .* listed twice"):
        read_run(run_path)


@pytest.mark.parametrize("order", ["ours", "trec_eval's"])
@pytest.mark.parametrize("empty", ["run", "qrels"])
def test_an_empty_file_is_named_in_either_argument_order(tmp_path, capsys, order, empty):
    """trec_eval quits on an empty file; so does torchrec-eval, naming it (it used to blame the other
    file's columns, or list no query at all)."""
    paths = {"run": tmp_path / "run", "qrels": tmp_path / "qrels"}
    paths["run"].write_text("q1 Q0 d1 1 1.0 t\n" if empty != "run" else "# only a comment\n")
    paths["qrels"].write_text("q1 0 d1 1\n" if empty != "qrels" else "")
    files = [paths["run"], paths["qrels"]] if order == "ours" else [paths["qrels"], paths["run"]]
    assert cli.main(["evaluate", *map(str, files), "--convention", "trec"]) == 2
    assert f"{paths[empty]}: the {empty} file has no {empty} line" in capsys.readouterr().err
