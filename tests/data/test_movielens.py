"""MovieLens and RecBole files (``torchrec_eval.data.movielens``) on small files the tests write.

Each loaded data set is checked against a plain reading of the same rows (the ``csv`` module, one line
at a time): the original ids, ratings and timestamps of every interaction, in the documented order (by
user, then time, then file order). Then: the four formats of one data set load to the same tensors,
detection and ``format=``, RecBole headers with other columns or without rating/timestamp, string
tokens, splits that carry the ratings, and a malformed line named by file and line.
"""

import csv
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("pandas")
from torchrec_eval.data import (  # noqa: E402
    RatedInteractions,
    leave_last_out,  # noqa: E402
    load_movielens,  # noqa: E402
    padded_item_lists,
)

# (user, item, rating, timestamp): ids that sort differently as strings, a user's ties in time, half stars
ROWS = [
    (196, 242, 3.0, 881250949), (186, 302, 3.0, 891717742), (22, 377, 1.0, 878887116),
    (196, 51, 2.0, 881250949), (1000, 346, 4.5, 886397596), (22, 9, 5.0, 878887000),
    (196, 1000, 0.5, 881250000), (186, 51, 4.0, 891717742), (7, 242, 3.5, 875000000),
]
WRITERS = {
    "u.data": lambda rows: "".join(f"{u}\t{i}\t{r:g}\t{t}\n" for u, i, r, t in rows),
    "ratings.dat": lambda rows: "".join(f"{u}::{i}::{r:g}::{t}\n" for u, i, r, t in rows),
    "ratings.csv": lambda rows: "userId,movieId,rating,timestamp\n" + "".join(f"{u},{i},{r:g},{t}\n" for u, i, r, t in rows),
    "ml.inter": lambda rows: "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
    + "".join(f"{u}\t{i}\t{r:g}\t{t}\n" for u, i, r, t in rows),
}


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _reference(path, delimiter, header):
    """The file's rows, read one line at a time, in the documented order."""
    with open(path, newline="") as handle:
        lines = [row for row in csv.reader(handle, delimiter=delimiter) if row]
    rows = [(int(u), int(i), float(r), int(float(t))) for u, i, r, t in (line[::2] if delimiter == ":" else line
                                                                          for line in lines[header:])]
    order = sorted(range(len(rows)), key=lambda j: (rows[j][0], rows[j][3], j))
    return [rows[j] for j in order]


def _decoded(data):
    return list(zip(data.user_ids[data.user.numpy()].tolist(), data.item_ids[data.item.numpy()].tolist(),
                    data.rating.tolist(), data.timestamp.tolist(), strict=True))


@pytest.mark.parametrize(("name", "delimiter", "header"),
                         [("u.data", "\t", 0), ("ratings.dat", ":", 0), ("ratings.csv", ",", 1), ("ml.inter", "\t", 1)])
def test_each_format_loads_every_row_as_a_plain_reading_does(tmp_path, name, delimiter, header):
    path = _write(tmp_path, name, WRITERS[name](ROWS))
    data = load_movielens(path)
    assert isinstance(data, RatedInteractions)
    assert _decoded(data) == _reference(path, delimiter, header)
    assert data.num_users == len({r[0] for r in ROWS}) and data.num_items == len({r[1] for r in ROWS})
    assert data.user_ids.tolist() == sorted({r[0] for r in ROWS})  # indices in sorted id order
    assert data.item_ids.tolist() == sorted({r[1] for r in ROWS})
    assert data.rating.dtype == torch.float32 and data.timestamp.dtype == torch.long


def test_the_four_formats_of_one_data_set_load_to_the_same_tensors(tmp_path):
    loaded = [load_movielens(_write(tmp_path, name, write(ROWS))) for name, write in WRITERS.items()]
    for other in loaded[1:]:
        for field in ("user", "item", "timestamp", "rating"):
            assert torch.equal(getattr(other, field), getattr(loaded[0], field)), field
        assert np.array_equal(other.item_ids, loaded[0].item_ids)


def test_format_is_detected_from_the_first_line_whatever_the_file_name(tmp_path):
    for name, write in WRITERS.items():
        data = load_movielens(_write(tmp_path, "renamed.txt", write(ROWS)))
        assert len(data) == len(ROWS), name
    path = _write(tmp_path, "u.data", WRITERS["u.data"](ROWS))
    with pytest.raises(ValueError, match=r"u\.data:1: expected the header 'userId,movieId,rating,timestamp'"):
        load_movielens(path, format="csv")  # the override is obeyed
    with pytest.raises(ValueError, match=r"x\.txt:1: cannot tell the format .* pass format="):
        load_movielens(_write(tmp_path, "x.txt", "1 2 3 4\n"))
    with pytest.raises(ValueError, match="`format` must be one of"):
        load_movielens(path, format="parquet")


def test_recbole_header_in_any_order_with_other_columns_or_without_rating_and_time(tmp_path):
    text = "timestamp:float\tlabel:float\titem_id:token\tuser_id:token\n10\t1\tb\tzed\n5\t0\ta\tamy\n7\t1\ta\tzed\n"
    data = load_movielens(_write(tmp_path, "x.inter", text))
    assert data.user_ids.tolist() == ["amy", "zed"] and data.item_ids.tolist() == ["a", "b"]
    assert _decoded(data) == [("amy", "a", 1.0, 5), ("zed", "a", 1.0, 7), ("zed", "b", 1.0, 10)]
    bare = load_movielens(_write(tmp_path, "y.inter", "user_id:token\titem_id:token\nu2\ti1\nu1\ti2\nu2\ti3\n"))
    assert _decoded(bare) == [("u1", "i2", 1.0, 1), ("u2", "i1", 1.0, 0), ("u2", "i3", 1.0, 2)]  # time = row
    with pytest.raises(ValueError, match=r"z\.inter:1: a RecBole \.inter header needs the fields \['item_id'\]"):
        load_movielens(_write(tmp_path, "z.inter", "user_id:token\tmovie:token\n1\t2\n"))


def test_splits_and_padded_lists_take_the_loaded_data_and_keep_its_ratings(tmp_path):
    data = load_movielens(_write(tmp_path, "u.data", WRITERS["u.data"](ROWS)))
    train, test = leave_last_out(data)
    assert isinstance(test, RatedInteractions)
    by_pair = {(u, i): (r, t) for u, i, r, t in ROWS}
    for part in (train, test):
        for u, i, r, t in _decoded(part):
            assert by_pair[(u, i)] == (r, t)
    assert len(train) + len(test) == len(ROWS)
    liked = data.select(data.rating >= 4)
    assert sorted(_decoded(liked)) == sorted((u, i, r, t) for u, i, r, t in ROWS if r >= 4)
    assert padded_item_lists(test).shape == (data.num_users, 1)


BAD = [
    ("u.data", "1\t2\t3\t4\n1\t2\t3\n", r"u\.data:2: expected 4 fields separated by '\\t', got 3: '1\\t2\\t3'"),
    ("u.data", "1\t2\t3\t4\n\n5\t6\t3\t4\t9\n", r"u\.data:3: expected 4 fields .*got 5"),
    ("u.data", "1\t2\t3\t4\n\n5\tx\t3\t4\n", r"u\.data:3: expected an integer for the item id, got 'x'"),
    ("u.data", "1\t2\t3\t4\n5\t2.5\t3\t4\n", r"u\.data:2: expected an integer for the item id, got '2.5'"),
    ("ratings.csv", "userId,movieId,rating,timestamp\n1,2,3,4\n1,3,nan,4\n",
     r"ratings\.csv:3: expected a number for the rating, got 'nan'"),
    ("ratings.csv", "userId,movieId,rating,timestamp\n1,2,3,4\n1,3,4,\n",
     r"ratings\.csv:3: expected an integer for the timestamp, got ''"),
    ("ratings.dat", "1::2::3::4\n1:2::3::4\n", r"ratings\.dat:2: expected 7 fields separated by ':'"),
    ("ratings.dat", "1::2::3::4\n1::2::3:a:4\n", r"ratings\.dat:2: expected fields separated by '::'"),
    ("ml.inter", "user_id:token\titem_id:token\ttimestamp:float\na\tb\t1.5\n",
     r"ml\.inter:2: expected an integer for the timestamp, got '1.5'"),
    ("ratings.csv", "userId,movieId,rating,timestamp\n", r"ratings\.csv: no interaction in the file"),
    ("u.data", "", r"u\.data: the file is empty"),
]


@pytest.mark.parametrize(("name", "text", "match"), BAD)
def test_a_malformed_line_is_named_by_file_and_line(tmp_path, name, text, match):
    with pytest.raises(ValueError, match=match):
        load_movielens(_write(tmp_path, name, text))


def test_missing_pandas_raises_an_import_error_naming_it(tmp_path, monkeypatch):
    path = _write(tmp_path, "u.data", WRITERS["u.data"](ROWS))
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        load_movielens(path)


def test_the_demo_trains_and_evaluates_on_a_ratings_file(tmp_path):
    from torchrec_eval.data import generate_interactions
    from torchrec_eval.demo import run_demo

    synthetic = generate_interactions(num_users=60, num_items=80, interactions_per_user=(5, 15), seed=1)
    rows = zip(synthetic.user.tolist(), synthetic.item.tolist(), synthetic.timestamp.tolist(), strict=True)
    path = _write(tmp_path, "u.data", "".join(f"{u + 1}\t{i + 1}\t4\t{t}\n" for u, i, t in rows))
    lines = []
    result = run_demo(data=path, epochs=1, dim=8, plot=None, echo=lines.append)
    items = len(set(synthetic.item.tolist()))
    assert lines[0].startswith(f"data: 60 users, {items} items, ") and str(path) in lines[0]
    assert len(result["history"]) == 1
    assert all(0 <= value <= 1 for name, value in result["history"][0].items() if "@" in name)


def test_the_demo_command_takes_a_ratings_file(tmp_path, capsys):
    from torchrec_eval.cli import main
    from torchrec_eval.data import generate_interactions

    synthetic = generate_interactions(num_users=40, num_items=50, interactions_per_user=(5, 12), seed=2)
    rows = zip(synthetic.user.tolist(), synthetic.item.tolist(), synthetic.timestamp.tolist(), strict=True)
    path = _write(tmp_path, "u.data", "".join(f"{u + 1}\t{i + 1}\t5\t{t}\n" for u, i, t in rows))
    assert main(["demo", "--data", str(path), "--epochs", "1", "--dim", "8", "--no-plot", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("data: 40 users, ") and str(path) in out.splitlines()[0]
