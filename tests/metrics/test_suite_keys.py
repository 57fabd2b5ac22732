"""A suite's names: ``prefix``/``postfix`` as in torchmetrics' ``MetricCollection`` (compute, forward, keys,
items, per_query, from_config, Lightning's ``log_dict``), a readable ``repr``, and ``higher_is_better``."""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre

METRICS = ["ndcg@5", "recall@10", "mrr@10", "auc"]


def _batch(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(8, 30, generator=gen), (torch.rand(8, 30, generator=gen) < 0.2).long()


def test_prefix_and_postfix_name_every_output():
    plain = tre.RankingMetrics(METRICS)
    named = tre.RankingMetrics(METRICS, prefix="val/", postfix="_epoch")
    expected = [f"val/{key}_epoch" for key in METRICS]
    assert named.keys() == expected and named.keys(keep_base=True) == METRICS == plain.keys()
    assert [key for key, _ in named.items()] == expected

    batch_named, batch_plain = named(*_batch(0)), plain(*_batch(0))  # forward: the batch's values
    assert list(batch_named) == expected
    assert [float(v) for v in batch_named.values()] == [float(v) for v in batch_plain.values()]
    for (_, view), value in zip(named.items(), batch_named.values(), strict=True):
        assert view._forward_cache is value  # what Lightning logs with on_step=True
    named.update(*_batch(1))
    plain.update(*_batch(1))
    result = named.compute()
    assert list(result) == expected
    assert [float(v) for v in result.values()] == [float(v) for v in plain.compute().values()]
    assert [float(view.compute()) for _, view in named.items()] == [float(v) for v in result.values()]
    assert list(named.per_query(*_batch(2))) == expected


def test_prefix_from_config_dict_and_yaml(tmp_path):
    suite = tre.RankingMetrics.from_config({"metrics": ["ndcg@10", "mrr@10"], "prefix": "test/"})
    assert suite.keys() == ["test/ndcg@10", "test/mrr@10"]
    file = tmp_path / "suite.yaml"
    file.write_text("metrics: [ndcg, recall]\nk: [5]\npostfix: _val\n")
    assert tre.RankingMetrics.from_config(file).keys() == ["ndcg@5_val", "recall@5_val"]


@pytest.mark.parametrize("argument", ["prefix", "postfix"])
def test_prefix_must_be_a_string(argument):
    with pytest.raises(ValueError, match=f"`{argument}` must be a string.*got 3"):
        tre.RankingMetrics(["ndcg@10"], **{argument: 3})
    with pytest.raises(ValueError, match=f"`{argument}`.*must be a string, got 3"):
        tre.RankingMetrics.from_config({"metrics": ["ndcg@10"], argument: 3})


def test_lightning_logs_the_prefixed_names():
    pytest.importorskip("lightning")
    import lightning as L  # noqa: N812

    from tests.lightning_models import BATCH, TRAINER_KWARGS, TinyMF, interaction_datasets, plain_loop

    suite = {"metrics": ["ndcg@5", "recall@10", "mrr@10"], "prefix": "val/"}
    loader = torch.utils.data.DataLoader(interaction_datasets()[1], batch_size=BATCH)
    for log_objects in (True, False):  # log_dict(suite) and log_dict(suite.compute())
        model = TinyMF(suite=suite, log_objects=log_objects)
        logged = L.Trainer(**TRAINER_KWARGS).validate(model, dataloaders=loader, verbose=False)[0]
        expected = plain_loop(model, loader)  # unprefixed, the test module's own suite
        assert list(logged) == ["val/ndcg@5", "val/recall@10", "val/mrr@10"]
        for key in ("ndcg@5", "recall@10", "mrr@10"):
            assert logged[f"val/{key}"] == pytest.approx(expected[key], abs=1e-12)


def test_repr_shows_the_metrics_and_the_arguments_that_differ_from_the_defaults():
    assert repr(tre.RankingMetrics(["ndcg@10", "map@10", "auc"])) == "RankingMetrics(ndcg@10, map@10, auc)"
    assert repr(tre.RankingMetrics(["ndcg", "recall"], k=[5, 10])) == (
        "RankingMetrics(ndcg@5, ndcg@10, recall@5, recall@10)")
    suite = tre.RankingMetrics(["mpr", "ndcg@10"], convention="trec", ties="average", validate_args=False,
                               num_groups=2, options={"ndcg": {"gain": "exp"}}, prefix="val/")
    assert repr(suite) == ("RankingMetrics(mpr, ndcg@10, convention='trec', ties='average', num_groups=2, "
                           "validate_args=False, options={'ndcg': {'gain': 'exp'}}, prefix='val/')")
    popularity = torch.ones(1_000_000)  # a table is shown by dtype and shape, never by its values
    assert repr(tre.RankingMetrics(["novelty@10"], options={"novelty": {"item_popularity": popularity}})) == (
        "RankingMetrics(novelty@10, options={'novelty': {'item_popularity': <tensor float32 [1000000]>}})")
    assert repr(tre.RankingMetrics.from_config("recsys")).startswith(
        "RankingMetrics(ndcg@10, ndcg@20, recall@10, recall@20, precision@10, precision@20,")


def test_repr_of_the_metric_classes():
    assert repr(tre.NDCG(k=[5, 10], gain="exp")) == "NDCG(ndcg@5, ndcg@10, gain='exp')"
    assert repr(tre.Precision(k=3, empty_target_action="neg")) == "Precision(precision@3, empty_target_action='neg')"
    assert repr(tre.MPR(average="query")) == "MPR(mpr, average='query')"
    assert repr(tre.CTR(k=5, ignore_index=-1)) == "CTR(ctr@5, ignore_index=-1)"
    assert repr(tre.Coverage(k=10, num_items=50)) == "Coverage(coverage@10, num_items=50)"


def test_higher_is_better_of_a_suite_follows_its_metrics():
    assert tre.RankingMetrics(["ndcg@10", "auc"]).higher_is_better is True
    assert tre.RankingMetrics(["mpr"]).higher_is_better is False
    assert tre.RankingMetrics(["ndcg@10", "mpr"]).higher_is_better is None  # mixed: neither
    assert tre.MPR().higher_is_better is False  # the class constant is untouched
