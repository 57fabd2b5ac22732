"""OffPolicyCTR / ``functional.off_policy_ctr`` (issue 55): Jurity's IPS and doubly robust CTR@k and self-normalised
IPS, against Jurity's own test cases, Jurity itself on seeded logs, the brute force of ``tests/reference/off_policy.py``
in the dense, ids and ranked forms through the harness (2 processes too), bad input refused with every state unchanged,
and Monte-Carlo bias tables for the claim of the docs: which estimator is unbiased under which assumption."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch._dynamo

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import off_policy as ref
from torchrec_eval import functional as F

ROWS, ITEMS, K = 9, 12, 3
DTYPE = torch.float64


# Jurity's tests/test_reco_binary.py: users 1..4 (rows), items 0..3 (columns); one recommendation and one logged
# response per user
def _jurity_case(form: str, with_propensity: bool) -> dict:
    logged_item, clicks, propensities = [1, 2, 0, 3], [0.0, 1.0, 0.0, 0.0], [0.1, 0.6, 0.2, 0.1]
    recommended, scores = [1, 2, 2, 3], [0.8, 0.7, 0.8, 0.7]
    preds = torch.zeros(4, 4, dtype=DTYPE)
    mask = torch.zeros(4, 4, dtype=torch.bool)
    target = torch.full((4, 4), -1.0, dtype=DTYPE)
    propensity = torch.ones(4, 4, dtype=DTYPE)
    for user in range(4):
        preds[user, recommended[user]], mask[user, recommended[user]] = scores[user], True
        target[user, logged_item[user]], propensity[user, logged_item[user]] = clicks[user], propensities[user]
    ids = torch.tensor(logged_item).unsqueeze(1)
    if form == "dense":
        inputs = {"preds": preds, "target": target, "mask": mask, "propensity": propensity}
    else:
        inputs = {"target_ids": ids, "target_gains": torch.tensor(clicks, dtype=DTYPE).unsqueeze(1),
                  "propensity": torch.tensor(propensities, dtype=DTYPE).unsqueeze(1)}
        if form == "ids":
            inputs.update(preds=preds, mask=mask)
        else:
            inputs.update(ranked_ids=torch.tensor(recommended).unsqueeze(1),
                          reward_estimate=torch.tensor(scores, dtype=DTYPE).unsqueeze(1))
    if not with_propensity:
        del inputs["propensity"]
    return inputs


@pytest.mark.parametrize("form", ["dense", "ids", "ranked"])
@pytest.mark.parametrize(("estimator", "with_propensity", "expected"), [
    ("ips", False, 1.0), ("ips", True, 0.4166666666666667), ("dr", False, -0.44999999999999996), ("dr", True, -2.875)])
def test_jurity_own_cases(form, estimator, with_propensity, expected):
    """Jurity's ``test_ips_ctr``, ``test_ips_ctr_propensity``, ``test_dr_ctr`` and ``test_dr_ctr_propensity``: its
    numbers, k = all (Jurity's k=None), its default propensity 1 / (items logged), its default reward estimate."""
    inputs = _jurity_case(form, with_propensity)
    metric = tre.OffPolicyCTR(k=4, estimator=estimator, ignore_index=-1 if form == "dense" else None)
    metric.update(**inputs)
    assert metric.compute().item() == pytest.approx(expected, abs=1e-12)
    got = F.off_policy_ctr(k=4, estimator=estimator, ignore_index=-1 if form == "dense" else None, **inputs)
    assert got.item() == pytest.approx(expected, abs=1e-12)


def _log(seed: int, rows: int = ROWS) -> tuple[dict, list]:
    """A seeded log in the dense form (distinct scores; some items not candidates; a row with no logged item; a row
    with one candidate) and its queries for the reference."""
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randperm(rows * ITEMS, generator=gen).reshape(rows, ITEMS).to(DTYPE) / (rows * ITEMS)
    mask = torch.rand(rows, ITEMS, generator=gen) < 0.8
    logged = torch.rand(rows, ITEMS, generator=gen) < 0.4
    reward = torch.where(torch.rand(rows, ITEMS, generator=gen) < 0.5, 1.0, 0.0).to(DTYPE)
    if rows >= 3:
        mask[0] = False
        mask[0, 3] = True  # one candidate
        logged[1] = False  # no logged response
        reward[2, :4] = torch.tensor([0.5, 2.0, 0.0, 3.0], dtype=DTYPE)  # rewards beyond clicks
    target = torch.where(logged, reward, -1.0)
    propensity = (0.05 + 0.95 * torch.rand(rows, ITEMS, generator=gen)).to(DTYPE)
    estimate = torch.rand(rows, ITEMS, generator=gen, dtype=DTYPE)
    queries = [({i: float(preds[b, i]) for i in range(ITEMS) if mask[b, i]},
                {i: (float(reward[b, i]), float(propensity[b, i])) for i in range(ITEMS) if logged[b, i]})
               for b in range(rows)]
    estimates = [{i: float(estimate[b, i]) for i in range(ITEMS)} for b in range(rows)]
    dense = {"preds": preds, "target": target, "mask": mask, "propensity": propensity, "reward_estimate": estimate}
    return dense, [queries, estimates]


def _ids_form(dense: dict) -> dict:
    """The same log with the logged items as ``target_ids`` (their rewards and propensities beside them)."""
    logged = dense["target"] >= 0
    order = logged.to(torch.int8).argsort(dim=1, descending=True, stable=True)  # T = ITEMS, -1 padded
    present = logged.gather(1, order)
    return {"preds": dense["preds"], "mask": dense["mask"], "reward_estimate": dense["reward_estimate"],
            "target_ids": torch.where(present, order, -1),
            "target_gains": torch.where(present, dense["target"].gather(1, order), 0.0),
            "propensity": torch.where(present, dense["propensity"].gather(1, order), 1.0)}


def _ranked_form(dense: dict) -> dict:
    """The same log as ranked lists (each row's candidates by score, -1 padded) with the reward estimates beside
    them."""
    ids = _ids_form(dense)
    scores = dense["preds"].masked_fill(~dense["mask"], -math.inf)
    order = scores.argsort(dim=1, descending=True)
    listed = dense["mask"].gather(1, order)
    return {"ranked_ids": torch.where(listed, order, -1), "target_ids": ids["target_ids"],
            "target_gains": ids["target_gains"], "propensity": ids["propensity"],
            "reward_estimate": dense["reward_estimate"].gather(1, order)}


FORMS = {"dense": lambda dense: dense, "ids": _ids_form, "ranked": _ranked_form}


def build(name: str) -> MetricCase:
    """The case ``<estimator>-<form>`` (module level: spawned processes rebuild it by name)."""
    estimator, form = name.split("-")
    batches, queries, estimates = [], [], []
    for seed, rows in ((1, ROWS), (2, 1), (3, 5)):
        dense, (q, e) = _log(seed, rows)
        batches.append(FORMS[form](dense))
        queries += q
        estimates += e
    ignore = {"ignore_index": -1} if form == "dense" else {}
    expected = {f"{estimator}_ctr@{k}": ref.pooled(queries, k, estimator, estimates) for k in (1, K)}

    def functional(**inputs):
        return F.off_policy_ctr(**inputs, k=[1, K], estimator=estimator, **ignore)

    return MetricCase(name=name, make=lambda: tre.OffPolicyCTR(k=[1, K], estimator=estimator, **ignore),
                      batches=batches, expected=expected, functional=functional, atol=1e-12)


CASES = [f"{estimator}-{form}" for estimator in ("ips", "snips", "dr") for form in FORMS]


@pytest.mark.parametrize("name", CASES)
def test_metric(name):
    check_metric(build(name))


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, CASES, str(tmp_path))


@pytest.mark.parametrize("estimator", ["ips", "snips", "dr"])
def test_each_querys_own_estimate(estimator):
    dense, (queries, estimates) = _log(4)
    got = F.off_policy_ctr(k=K, estimator=estimator, ignore_index=-1, reduction="none", **dense)
    want = torch.tensor(ref.per_query(queries, K, estimator, estimates), dtype=DTYPE)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12, equal_nan=True)
    metric = tre.OffPolicyCTR(k=K, estimator=estimator, ignore_index=-1)
    torch.testing.assert_close(metric.per_query(**dense), want, rtol=0, atol=1e-12, equal_nan=True)


def test_against_jurity_on_seeded_logs():
    """Jurity 2.1.0's own CTR(estimation=...) on a log of 40 users, several logged items each, with and without
    propensities, k = 3 (distinct scores: pandas' sort is not stable)."""
    pd = pytest.importorskip("pandas")
    jurity = pytest.importorskip("jurity.recommenders")
    if int(pd.__version__.split(".")[0]) >= 3:  # its fillna(0, inplace=True) on a column writes nothing there
        pytest.skip(f"Jurity 2.1.0's IPS and DR are NaN under pandas {pd.__version__} (copy-on-write leaves the "
                    "non-matches NaN); its own test cases are test_jurity_own_cases")
    dense, _ = _log(5, rows=40)
    logged = dense["target"] >= 0
    actual = pd.DataFrame([{"user_id": b, "item_id": i, "click": float(dense["target"][b, i]),
                            "propensity": float(dense["propensity"][b, i])}
                           for b in range(40) for i in range(ITEMS) if logged[b, i]])
    predicted = pd.DataFrame([{"user_id": b, "item_id": i, "click": float(dense["preds"][b, i])}
                              for b in range(40) for i in range(ITEMS) if dense["mask"][b, i]])
    for estimation in ("ips", "dr"):
        for with_propensity in (True, False):
            peer = jurity.BinaryRecoMetrics.CTR(click_column="click", k=K, estimation=estimation)
            want = peer.get_score(actual if with_propensity else actual.drop(columns="propensity"), predicted)
            inputs = {name: value for name, value in dense.items() if name != "reward_estimate"}
            if not with_propensity:
                del inputs["propensity"]
            got = F.off_policy_ctr(k=K, estimator=estimation, ignore_index=-1, **inputs)
            assert got.item() == pytest.approx(want, abs=1e-12), (estimation, with_propensity)


def _bandit(rows: int, seed: int, logging: torch.Tensor) -> dict:
    """One context, 6 items with click rates THETA; the logging policy shows one item a row, drawn from ``logging``;
    the new ranking's top 2 are items 4 and 5 (its scores are the same each row)."""
    gen = torch.Generator().manual_seed(seed)
    shown = torch.multinomial(logging, rows, replacement=True, generator=gen)
    clicks = (torch.rand(rows, generator=gen) < THETA[shown]).to(DTYPE)
    target = torch.full((rows, 6), -1.0, dtype=DTYPE).scatter_(1, shown.unsqueeze(1), clicks.unsqueeze(1))
    return {"preds": torch.arange(6, dtype=DTYPE).expand(rows, 6), "target": target}


THETA = torch.tensor([0.9, 0.8, 0.5, 0.3, 0.2, 0.1], dtype=DTYPE)
LOGGING = torch.tensor([0.3, 0.3, 0.2, 0.1, 0.05, 0.05], dtype=DTYPE)


@pytest.mark.parametrize(("estimator", "propensity", "estimate", "unbiased"), [
    ("ips", "true", None, True),
    ("ips", "uniform", None, False),  # wrong propensities: IPS is biased
    ("snips", "true", None, True),  # consistent: its O(1/n) bias is far below the spread at n = 2 x 40,000
    ("dr", "uniform", "true", True),  # wrong propensities, right reward model: doubly robust
    ("dr", "true", "zero", True),  # right propensities, wrong model
    ("dr", "uniform", "zero", False),  # both wrong
])
def test_bias_table(estimator, propensity, estimate, unbiased):
    """The mean of 30 independent logs of 40,000 rows each against the new ranking's true CTR@2, (0.2 + 0.1) / 2:
    within 4 standard errors of the mean where the estimator is unbiased under the case's assumptions, beyond 10 of
    them where it is not."""
    rows, truth = 40_000, float(THETA[4:].mean())
    values = []
    for seed in range(30):
        log = _bandit(rows, seed, LOGGING)
        p = LOGGING if propensity == "true" else torch.full((6,), 1 / 6, dtype=DTYPE)
        extra = {"propensity": p.expand(rows, 6)}
        if estimate is not None:
            extra["reward_estimate"] = (THETA if estimate == "true" else torch.zeros(6, dtype=DTYPE)).expand(rows, 6)
        values.append(F.off_policy_ctr(k=2, estimator=estimator, ignore_index=-1, **log, **extra).item())
    mean = sum(values) / len(values)
    error = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))
    if unbiased:
        assert abs(mean - truth) < 4 * error, (mean, truth, error)
    else:
        assert abs(mean - truth) > 10 * error, (mean, truth, error)


def test_bad_input_is_refused_and_leaves_every_state():
    dense, _ = _log(6)
    metric = tre.OffPolicyCTR(k=K, estimator="dr", ignore_index=-1)
    metric.update(**dense)
    before = metric.off_policy_sums.clone()
    zero = dense["propensity"].clone()
    zero[dense["target"] >= 0] = 0.0
    cases = [
        ({**dense, "propensity": zero}, r"`propensity` must be a probability in \(0, 1\] where an item is logged"),
        ({**dense, "propensity": dense["propensity"][:, :3]}, r"`propensity` must be a real tensor of the shape of "
                                                               r"`target` \(9, 12\)"),
        ({**dense, "reward_estimate": dense["reward_estimate"].T}, "`reward_estimate` must be a real tensor"),
        ({**dense, "target": dense["target"][:2]}, "`target`: the rewards of the dense form"),
        ({"preds": dense["preds"].flatten(), "target": dense["target"].flatten(),
          "indexes": torch.arange(ROWS).repeat_interleave(ITEMS)}, "`indexes`: the flat form is not taken"),
        ({k: v for k, v in _ranked_form(dense).items() if k != "reward_estimate"},
         "`reward_estimate`: the doubly robust estimate of a ranked list"),
    ]
    for inputs, message in cases:
        with pytest.raises(ValueError, match=message):
            metric.update(**inputs)
        assert torch.equal(metric.off_policy_sums, before)
    with pytest.raises(ValueError, match="`estimator` must be one of"):
        tre.OffPolicyCTR(estimator="switch")
    with pytest.raises(ValueError, match="`ties`: an off-policy estimate"):
        tre.OffPolicyCTR(ties="average")
    with pytest.raises(ValueError, match="`relevance_threshold` is about relevance"):
        tre.OffPolicyCTR(relevance_threshold=1.0)


@pytest.mark.parametrize("form", ["dense", "ids", "ranked"])
def test_no_host_read_and_a_compiled_update_equal_eager(form):
    """With ``validate_args=False`` on the accelerator path an update reads nothing on the host (Jurity's default
    propensity included: the distinct logged items are counted on the device), and ``compile_update`` gives one
    graph (no eager fallback) with the eager values."""
    from tests.reference.host_reads import NoHostReads
    from torchrec_eval.syncs import simulate_accelerator

    batches = [FORMS[form](_log(seed)[0]) for seed in (7, 8)]
    ignore = {"ignore_index": -1} if form == "dense" else {}
    eager, compiled = (tre.OffPolicyCTR(k=[1, K], estimator="dr", validate_args=False, **ignore) for _ in range(2))
    torch._dynamo.reset()  # a fresh cache: earlier graphs of this process count towards dynamo's recompile limit
    compiled.compile_update(backend="aot_eager")
    with simulate_accelerator():
        eager.update(**batches[0])  # first-call constants (the cut-off columns) are built from the host once
        with NoHostReads():
            eager.update(**{name: value for name, value in batches[1].items() if name != "propensity"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a graph, never the eager fallback
        compiled.update(**batches[0])
        compiled.update(**{name: value for name, value in batches[1].items() if name != "propensity"})
    for key, value in eager.compute().items():
        torch.testing.assert_close(compiled.compute()[key], value, rtol=1e-12, atol=1e-12, msg=key)


def build_suite(form: str) -> MetricCase:
    """IPS, SNIPS and DR in a suite beside NDCG (one top-k): every candidate logged (the suite's one target, items
    without a logged response masked out), the ids form's logged items as target ids."""
    batches, queries, estimates = [], [], []
    for seed, rows in ((9, ROWS), (10, 4)):
        dense, (q, e) = _log(seed, rows)
        dense["mask"] &= dense["target"] >= 0  # the suite ranks the logged items only
        dense["target"] = dense["target"].clamp(min=0)
        batches.append(FORMS[form](dense) if form == "ids" else dense)
        queries += [({i: s for i, s in scores.items() if i in logged}, logged) for scores, logged in q]
        estimates += e
    names = ["ips_ctr@3", "snips_ctr@1", "dr_ctr@3"]
    expected = {name: ref.pooled(queries, int(name[-1]), name.partition("_")[0], estimates) for name in names}
    return MetricCase(name=f"suite-{form}", make=lambda: tre.RankingMetrics(["ndcg@3", *names]), batches=batches,
                      expected=expected, flatten=lambda result: {key: float(result[key]) for key in names},
                      atol=1e-12)


@pytest.mark.parametrize("form", ["dense", "ids"])
def test_in_a_suite_beside_ndcg(form):
    check_metric(build_suite(form))


def test_a_suite_refuses_an_input_none_of_its_families_reads():
    dense, _ = _log(11)
    suite = tre.RankingMetrics(["ndcg@3"])
    with pytest.raises(ValueError, match="`propensity` is read by ips_ctr@k, snips_ctr@k or dr_ctr@k"):
        suite.update(dense["preds"], dense["target"].clamp(min=0), propensity=dense["propensity"])
    assert not suite.stats.any()
