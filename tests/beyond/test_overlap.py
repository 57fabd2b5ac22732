"""The overlap of two models' lists (Intersection, Jaccard, RBO) through the one harness (``tests/harness.py``),
against the brute-force references of ``tests/reference/overlap.py`` written from RecTools' and LensKit's
source and Webber et al.'s eq. 32: tied scores, masks, ``-inf``, excluded ids, padding anywhere, short and
empty lists, cut-offs beyond the lists; and the peers' own test cases."""

from __future__ import annotations

import math

import pytest
import torch

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import overlap as ref
from tests.reference.host_reads import NoHostReads
from torchrec_eval.comparison.uncertainty import confidence_interval
from torchrec_eval.syncs import simulate_accelerator

NUM_ITEMS = 9
FORMS = ("scores", "ids", "mixed")  # both sides as scores, both as ranked ids, scores against ranked ids

# name -> (class, functional, its arguments, the reference of one query (own, reference) -> value or None)
FAMILIES = {
    "intersection": (tre.Intersection, tre.functional.intersection, {"k": [2, 12]},
                     lambda k: lambda a, b: ref.rectools_intersection(a, b, k)),
    "intersection_ref_k": (tre.Intersection, tre.functional.intersection, {"k": 3, "ref_k": 5},
                           lambda k: lambda a, b: ref.rectools_intersection(a, b, k, 5)),
    "jaccard": (tre.Jaccard, tre.functional.jaccard, {"k": [3, 12]}, lambda k: lambda a, b: ref.jaccard(a, b, k)),
    "rbo": (tre.RBO, tre.functional.rbo, {"k": [4, 12]}, lambda k: lambda a, b: ref.rbo(a, b, k)),
    "rbo_ext": (tre.RBO, tre.functional.rbo, {"k": [4, 12], "patience": 0.7, "variant": "ext"},
                lambda k: lambda a, b: ref.rbo(a, b, k, 0.7, "ext")),
}
KEYS = {"intersection_ref_k": "intersection", "rbo_ext": "rbo"}  # cases that share a family's keys


def _ids(rows: int, width: int, gen: torch.Generator, like: torch.Tensor | None = None) -> torch.Tensor:
    """Ranked lists of distinct ids with padding anywhere; the first row is empty. ``like``: orders [rows, N] to
    perturb (two swaps), for lists that agree in part."""
    orders = torch.stack([torch.randperm(NUM_ITEMS, generator=gen) for _ in range(rows)]) if like is None \
        else like.clone()
    if like is not None:
        for row in range(rows):
            for i, j in torch.randint(0, NUM_ITEMS, (2, 2), generator=gen).tolist():
                orders[row, [i, j]] = orders[row, [j, i]]
    ids = orders[:, :width].clone()
    ids[torch.rand(rows, width, generator=gen) < 0.15] = -1
    return ids


def _scores(rows: int, gen: torch.Generator, empty_row: int) -> torch.Tensor:
    """Scores with ties (four levels), some ``-inf``, and no candidate at all in one row."""
    scores = torch.randint(0, 4, (rows, NUM_ITEMS), generator=gen).float()
    scores[torch.rand(rows, NUM_ITEMS, generator=gen) < 0.15] = -math.inf
    scores[empty_row] = -math.inf
    return scores


def batches(form: str, seed: int) -> list[dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for rows in (4, 1, 5):
        batch: dict[str, torch.Tensor] = {}
        if form == "ids":
            orders = torch.stack([torch.randperm(NUM_ITEMS, generator=gen) for _ in range(rows)])
            batch["ranked_ids"], batch["reference_ids"] = _ids(rows, 6, gen, orders), _ids(rows, 7, gen, orders)
            batch["ranked_ids"][0] = -1  # an empty list: Intersection has no value, RBO scores 0
            if rows > 2:  # an empty reference, then two empty lists (Jaccard has no value)
                batch["reference_ids"][1] = -1
                batch["ranked_ids"][-1] = batch["reference_ids"][-1] = -1
        else:
            batch["preds"] = _scores(rows, gen, empty_row=0)
            if form == "scores":
                batch["reference_preds"] = _scores(rows, gen, empty_row=rows - 1)
                batch["mask"] = torch.rand(rows, NUM_ITEMS, generator=gen) > 0.1
            else:
                batch["reference_ids"] = _ids(rows, 7, gen)
                batch["reference_ids"][0] = -1
        excluded = torch.randint(0, NUM_ITEMS, (rows, 2), generator=gen)
        excluded[torch.rand(rows, 2, generator=gen) < 0.4] = -1
        batch["exclude_ids"] = excluded
        out.append(batch)
    return out


def _lists(batch: dict[str, torch.Tensor], scores: str, ids: str) -> list[list[int]]:
    """One side's lists, in plain Python: ranked scores (ties: lower index first) or the ids as given."""
    rows = next(iter(batch.values())).shape[0]
    lists = []
    for row in range(rows):
        excluded = {i for i in batch["exclude_ids"][row].tolist() if i >= 0}
        if scores in batch:
            mask = batch["mask"][row].tolist() if "mask" in batch else None
            items = ref.ranked(batch[scores][row].tolist(), mask)
        else:
            items = [i for i in batch[ids][row].tolist() if i >= 0]
        lists.append([i for i in items if i not in excluded])
    return lists


def reference_values(name: str, batch: dict[str, torch.Tensor]) -> dict[str, list[float | None]]:
    """Each key's value of each query of ``batch`` by the reference."""
    _, _, arguments, per_query = FAMILIES[name]
    own, other = _lists(batch, "preds", "ranked_ids"), _lists(batch, "reference_preds", "reference_ids")
    ks = arguments["k"] if isinstance(arguments["k"], list) else [arguments["k"]]
    family = KEYS.get(name, name)
    return {f"{family}@{k}": [per_query(k)(a, b) for a, b in zip(own, other, strict=True)] for k in ks}


def build(case: str) -> MetricCase:
    """The harness case ``"<family>/<form>"`` (module level: spawned processes rebuild it by name)."""
    name, form = case.split("/")
    cls, function, arguments, _ = FAMILIES[name]
    parts = batches(form, seed=len(case))
    whole = {key: torch.cat([part[key] for part in parts]) for key in parts[0]}
    expected = {key: ref.mean(values) for key, values in reference_values(name, whole).items()}
    return MetricCase(name=case, make=lambda: cls(**arguments), batches=parts, expected=expected,
                      functional=lambda **batch: function(**batch, **arguments))


# one form per family through the whole harness (every family meets every form in the per-query test below)
CASES = ["intersection/scores", "intersection_ref_k/ids", "jaccard/mixed", "rbo/ids", "rbo_ext/scores"]


@pytest.mark.parametrize("case", CASES)
def test_family_through_the_harness(case):
    check_metric(build(case))


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, CASES, str(tmp_path))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_per_query_values_equal_the_reference(name, form):
    """Every query's value, NaN where the reference has none (an empty list for Intersection, two for Jaccard)."""
    cls, function, arguments, _ = FAMILIES[name]
    batch = batches(form, seed=7)[2]
    want = {key: torch.tensor([math.nan if v is None else v for v in values], dtype=torch.float64)
            for key, values in reference_values(name, batch).items()}
    got = cls(**arguments).per_query(**batch)
    got = got if isinstance(got, dict) else {next(iter(want)): got}
    functional = function(**batch, **arguments, reduction="none")
    functional = functional if isinstance(functional, dict) else {next(iter(want)): functional}
    for key, values in want.items():
        torch.testing.assert_close(got[key], values, rtol=0, atol=1e-12, equal_nan=True, msg=key)
        torch.testing.assert_close(functional[key], values, rtol=0, atol=1e-12, equal_nan=True, msg=key)
        assert bool(((values >= 0) & (values <= 1)).all() | values.isnan().any())


def test_groups_weights_and_intervals_follow_the_per_query_values():
    batch = batches("scores", seed=3)[2]
    values = reference_values("rbo", batch)["rbo@4"]
    groups, weights = torch.tensor([0, 1, 0, 1, 1]), torch.tensor([1.0, 2.0, 0.5, 1.0, 3.0])
    metric = tre.RBO(k=4, num_groups=2, weighted=True)
    metric.update(**batch, groups=groups, sample_weight=weights)
    for group in (0, 1):
        rows = [i for i in range(5) if groups[i] == group]
        want = sum(weights[i].item() * values[i] for i in rows) / sum(weights[i].item() for i in rows)
        assert metric.compute()[group].item() == pytest.approx(want, abs=1e-12)
    plain = tre.Jaccard(k=3)
    plain.update(**batch)
    mean, low, high = confidence_interval(plain)["jaccard@3"]
    assert mean.item() == pytest.approx(ref.mean(reference_values("jaccard", batch)["jaccard@3"]), abs=1e-12)
    assert low.item() <= mean.item() <= high.item()


def test_reverse_index_ties_rank_equal_scores_by_the_higher_index():
    preds = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    reference_ids = torch.tensor([[2, 1]])
    assert tre.functional.jaccard(preds, reference_ids=reference_ids, k=2, ties="reverse_index").item() == 1.0
    assert tre.functional.jaccard(preds, reference_ids=reference_ids, k=2).item() == pytest.approx(1 / 3)


def test_the_recTools_test_case():
    """RecTools' own ``test_calc`` (tests/metrics/test_intersection.py, 0.17): its tables cut at k and ref_k by
    ``Rank`` as RecTools' steps 1 and 2 do (ranks with gaps and ties), then fed as ranked ids."""
    reco = {1: [(1, 3), (2, 1)], 2: [(1, 1)], 3: [(1, 7), (2, 5)], 4: [(1, 2), (2, 1), (3, 8)],
            5: [(1, 1), (2, 2), (3, 2), (4, 9)]}  # user -> (item, rank)
    ref_reco = {1: [(1, 3), (3, 2)], 2: [(1, 1)], 3: [(1, 1), (2, 4)], 4: [(1, 5), (2, 1), (3, 2)],
                5: [(1, 3), (2, 4), (3, 1), (4, 7)]}

    def cut(table, k):
        rows = [[item for item, rank in sorted(table[user], key=lambda pair: pair[1]) if rank <= k] for user in table]
        return torch.tensor([row + [-1] * (4 - len(row)) for row in rows])

    for k, ref_k, expected in [(2, 2, [0.0, 1.0, None, 1 / 2, 1 / 3]), (3, None, [1 / 2, 1.0, None, 1 / 2, 2 / 3]),
                               (3, 6, [1 / 2, 1.0, None, 1.0, 1.0])]:
        metric = tre.Intersection(k=4, ref_k=4)  # the lists are cut already
        got = metric.per_query(ranked_ids=cut(reco, k), reference_ids=cut(ref_reco, ref_k or k))
        want = torch.tensor([math.nan if v is None else v for v in expected], dtype=torch.float64)
        torch.testing.assert_close(got, want, equal_nan=True)


def test_lenskits_test_cases():
    """LensKit's ``tests/eval/test_rbo.py``: empty lists score 0, a perfect match 1, no overlap 0."""

    def rbo(own, reference, **options):
        padded = [torch.tensor([row or [-1]]) for row in (own, reference)]
        return tre.functional.rbo(ranked_ids=padded[0], reference_ids=padded[1], **options).item()

    assert rbo([1, 2, 3], []) == 0.0 and rbo([], [1, 2, 3]) == 0.0
    assert rbo([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], k=5, patience=0.9) == pytest.approx(1.0, abs=1e-15)
    assert rbo([4, 5, 6], [1, 2, 3], k=3, patience=0.9) == 0.0
    assert 0 < rbo([3, 2, 6, 7, 1], [1, 2, 3, 4, 5], k=5, patience=0.9) < 1
    assert rbo([5, 4, 3, 2, 1], [1, 2, 3, 4, 5], k=3, patience=0.9) == pytest.approx(
        ref.lenskit_rbo([1, 2, 3, 4, 5], [5, 4, 3, 2, 1], n=3, p=0.9), abs=1e-15)
    # RBO_ext: identical lists, and a list that is a prefix of the other, score 1 at any length
    assert rbo([1, 2, 3], [1, 2, 3], k=10, variant="ext") == pytest.approx(1.0, abs=1e-15)
    assert rbo([1, 2], [1, 2, 3, 4], k=10, variant="ext") == pytest.approx(1.0, abs=1e-15)


def _states(metric) -> dict[str, torch.Tensor]:
    return {name: getattr(metric, name).clone() for name in metric._defaults}


P, R = torch.rand(3, 6, generator=torch.Generator().manual_seed(1)), torch.rand(3, 6)
IDS = torch.tensor([[0, 1, 2], [3, 4, -1], [5, -1, -1]])
BAD_INPUTS = [
    ({"preds": P}, r"Pass exactly one of `reference_preds` .* and `reference_ids` .*got neither"),
    ({"preds": P, "ranked_ids": IDS, "reference_preds": R}, r"exactly one of `preds`.*got both"),
    ({"preds": P, "reference_preds": R[:2]},
     r"`reference_preds` must have one row per query, as `preds` \(3\), got shape \(2, 6\)"),
    ({"preds": P, "reference_preds": R.long()}, r"`reference_preds` must be a floating point tensor .* torch.int64"),
    ({"preds": P, "reference_preds": R * math.nan}, r"`reference_preds` must be real scores, not NaN"),
    ({"preds": P * math.inf, "reference_preds": R}, r"`preds` must be real scores, not NaN or \+inf"),
    ({"ranked_ids": IDS, "reference_ids": torch.tensor([[1, 1, -1]] * 3)}, r"`reference_ids` has an item id repeated"),
    ({"ranked_ids": IDS - 2, "reference_ids": IDS}, r"`ranked_ids` must be item ids >= 0 or -1 for padding, got -3"),
    ({"ranked_ids": IDS.float(), "reference_ids": IDS}, r"`ranked_ids` must be an integer tensor of item ids"),
    ({"ranked_ids": IDS, "reference_ids": IDS, "mask": P > 0}, r"`mask` marks the candidates among scored items"),
    ({"preds": P, "reference_preds": R, "mask": (P > 0)[:, :2]}, r"`mask`"),
    ({"preds": P, "reference_preds": [0.1, 0.2]}, r"`reference_preds` must be a torch.Tensor, got list"),
    ({"preds": P, "reference_preds": R, "target": R}, r"update\(\) got an unexpected keyword argument 'target'"),
]


@pytest.mark.parametrize(("inputs", "message"), BAD_INPUTS, ids=[message[:40] for _, message in BAD_INPUTS])
def test_bad_input_names_the_argument_and_leaves_the_state(inputs, message):
    metric = tre.RBO(k=[2, 3])
    metric.update(P, R)
    before, count = _states(metric), metric._update_count
    with pytest.raises(ValueError, match=message):
        metric.update(**inputs)
    assert metric._update_count == count
    for name, value in _states(metric).items():
        assert torch.equal(value, before[name]), name


@pytest.mark.parametrize(("make", "message"), [
    (lambda: tre.RBO(k=3, patience=1.0), r"`patience` of rbo must be a number in \(0, 1\), such as 0.95, got 1.0"),
    (lambda: tre.RBO(k=3, variant="min"), r"`variant` of rbo must be one of \('lenskit', 'ext'\), got 'min'"),
    (lambda: tre.Intersection(k=3, ref_k=0), r"`ref_k` of intersection must be an int >= 1 or None, got 0"),
    (lambda: tre.Jaccard(k=0), r"`k` must be an int >= 1, got 0"),
    (lambda: tre.Jaccard(k=[]), r"`k` must be an int or a non-empty sequence of ints, got \[\]"),
    (lambda: tre.Jaccard(k=[3, 3]), r"A metric is requested twice"),
    (lambda: tre.Jaccard(ties="average"), r"`ties` must be one of \('index', 'reverse_index'\), got 'average'"),
    (lambda: tre.Intersection(relevance_threshold=1.0), r"`relevance_threshold` is about targets"),
    (lambda: tre.functional.rbo(P, R, reduction="sum"), r"`reduction` must be 'mean' or 'none', got 'sum'"),
    (lambda: tre.functional.rbo(P, R, tie="index"), r"^rbo\(\) got an unexpected keyword argument 'tie'; it takes .*"
                                                    r"'preds', 'reference_preds'.*'reference_ids'"),
    (lambda: tre.RBO(k=3).catalogue(6, target_ids=IDS), r"RBO compares two rankings per query; `catalogue`"),
])
def test_bad_arguments_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_update_reads_nothing_on_the_accelerator_path():
    """``validate_args=False``: no host read in ``update`` (run on the CPU as on CUDA), the CPU path's values."""
    cases = [("scores", tre.RBO), ("mixed", tre.Intersection), ("ids", tre.Jaccard)]
    for form, cls in cases:
        batch = batches(form, seed=5)[0]

        def make(cls=cls):
            return cls(k=[2, 4], validate_args=False, num_groups=2)

        groups = torch.tensor([0, 1, 1, 0])
        with simulate_accelerator():
            make().update(**batch, groups=groups)  # first-call constants are built from the host once
            metric = make()
            with NoHostReads():
                metric.update(**batch, groups=groups)
        plain = make()
        plain.update(**batch, groups=groups)
        for key, value in plain.compute().items():
            torch.testing.assert_close(metric.compute()[key], value, rtol=0, atol=0, equal_nan=True)


def test_a_compiled_update_equals_the_eager_one():
    """``compile_update``: both sides ranked in one graph (``backend="eager"``: the trace, not a compiler)."""
    import warnings

    compiled = tre.RBO(k=[2, 4], validate_args=False).compile_update(backend="eager")
    eager = tre.RBO(k=[2, 4], validate_args=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a graph that fails warns and updates eagerly: not here
        for form in ("scores", "mixed"):
            batch = batches(form, seed=11)[0]
            compiled.update(**batch)
            eager.update(**batch)
    assert compiled._compile_options is not None
    for key, value in eager.compute().items():
        torch.testing.assert_close(compiled.compute()[key], value, rtol=0, atol=1e-12)
