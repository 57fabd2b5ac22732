"""Document ids for the tests' ranx oracles: three characters at most (``d00`` to ``d98`` in the dicts
the tests build, base 36 in the TREC files ranx reads).

``ranx.Qrels`` and ``ranx.Run`` hold each query's document ids in a numpy array of dtype
``<U{longest id}``, and numba compiles ranx's typed containers once per such dtype (about 12 s for a
Qrels and a Run in a fresh environment, where numba's cache is empty). Every ranx oracle of the suite
names its documents with three characters, as the string tables of ``tests/data/test_frames.py``
(``i0`` to ``i29``) and ``benchmarks/bench_peers.py --quick`` (``d0`` to ``d99``) do, so that a fresh
run compiles them once. The ids change nothing else: ranx matches documents by id only.

Each process compiles (or loads from numba's cache) what it runs, so under pytest-xdist every test that
runs ranx, or the command line's ranx tie order, is marked ``@pytest.mark.xdist_group("ranx")``: one
worker compiles, in collection order (``tests/data/test_frames.py`` first), and no two workers compile
the same functions side by side.
"""

WIDTH = 3
PLACEHOLDER = "d99"  # the one judged document of a query without a relevant one: in no run


def file_doc_id(n: int) -> str:
    """A document id for the TREC files ranx reads in the tests: ``n`` (0 to 36**3 - 1) in base 36, at
    most three characters (so a file with an id of 1296 or more holds them as ``<U3``, as the others)."""
    assert 0 <= n < 36**WIDTH, f"document {n}: the ranx oracles' ids have {WIDTH} characters"
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    name = ""
    while True:
        n, digit = divmod(n, 36)
        name = digits[digit] + name
        if n == 0:
            return name


def doc_id(i: int) -> str:
    """The id of document ``i`` (0 to 98)."""
    assert 0 <= i < 99, f"document {i}: the ranx oracles' ids have {WIDTH} characters"
    return f"d{i:02d}"
