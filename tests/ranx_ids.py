"""Document ids for the tests' ranx oracles: three characters each, ``d00`` to ``d98``.

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


def doc_id(i: int) -> str:
    """The id of document ``i`` (0 to 98)."""
    assert 0 <= i < 99, f"document {i}: the ranx oracles' ids have {WIDTH} characters"
    return f"d{i:02d}"
