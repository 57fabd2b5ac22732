"""Metric suites from configuration: a YAML file or a dict -> :class:`~torchrec_eval.RankingMetrics` kwargs.

A suite config is a mapping with these keys (only ``metrics`` is required)::

    metrics: [ndcg, recall, precision, hitrate, map, mrr]   # "name@k" strings, or bare names with `k`
    k: [10, 20]                                             # cut-offs for the bare names
    options:                                                # per-family options
      ndcg: {gain: exp}
      map: {normalizer: r}
    convention: recbole                                     # a preset of another library's options
    empty_target_action: skip                               # skip | neg | pos | error
    relevance_threshold: 1                                  # target >= 1 is relevant (default: > 0)
    ties: index                                             # how equal scores are ordered
    validate_args: true
    prefix: val/                                            # result keys val/ndcg@10, ... (also postfix)

Load one with ``RankingMetrics.from_config("my_suite.yaml")``, a ready-made suite shipped in the
package by its name (``"recsys"``, ``"trec"``, ``"beyond"``: :data:`SUITES`, the files of
``torchrec_eval/suites/``), or ``RankingMetrics.from_config({"metrics": ["ndcg@10"]})``. An unknown key raises a ``ValueError``
that names it and lists the allowed keys; a value of the wrong type raises one that names its key.
The metric names, cut-offs, option values and preset names themselves are checked by
``RankingMetrics``; options and arguments given explicitly override the preset's.

A *sampled* suite (:class:`~torchrec_eval.SampledMetrics`: items ranked against m sampled negatives)
says ``kind: sampled`` and has the keys of :data:`SAMPLED_KEYS`; load it with
``SampledMetrics.from_config("uni100", num_items=...)`` (:func:`sampled_suite_kwargs`).

A *pointwise* suite (:class:`~torchrec_eval.PointwiseMetrics`: NE, calibration, AUC, ... per task, with
lifetime and window values) says ``kind: pointwise`` and has the keys of :data:`POINTWISE_KEYS`; load it
with ``PointwiseMetrics.from_config("ctr")`` (:func:`pointwise_suite_kwargs`). ``RankingMetrics.from_config``
refuses it with a message that says so.

YAML needs PyYAML, imported only when a file is read (``pip install pyyaml``, or
``pip install torchrec_eval[lightning]``); a dict config needs nothing beyond the core dependencies.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchrec_eval.pipeline.arguments import is_int

__all__ = ["ALLOWED_KEYS", "POINTWISE_KEYS", "SAMPLED_KEYS", "load_yaml", "pointwise_suite_kwargs", "sampled_suite_kwargs",
           "suite_kwargs"]

#: The keys of a suite config, in the order of :class:`~torchrec_eval.RankingMetrics`' signature.
ALLOWED_KEYS = (
    "metrics",
    "k",
    "options",
    "convention",
    "empty_target_action",
    "relevance_threshold",
    "ties",
    "validate_args",
    "prefix",
    "postfix",
)


#: The ready-made suites shipped in the package: name -> file (``from_config("recsys")``).
SUITES: dict[str, Path] = {file.stem: file for file in sorted(Path(__file__).parent.glob("*.yaml"))}


def _where(source: str | None) -> str:
    return f" in {source}" if source else ""


def load_yaml(path: str | os.PathLike[str]) -> Any:
    """Read a YAML file with ``yaml.safe_load``; a key repeated within one mapping is an error.

    Raises:
        ImportError: if PyYAML is not installed (the message says how to install it).
        FileNotFoundError: if ``path`` is not a file.
        ValueError: on a YAML syntax error or a repeated key (the message names the file and key).
    """
    try:
        import yaml
    except ImportError:
        raise ImportError(
            "Reading a metric suite from a YAML file needs PyYAML, which is not installed: "
            "`pip install pyyaml` (or `pip install torchrec_eval[lightning]`), or pass the config as a dict"
        ) from None

    class _UniqueKeyLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML has no type stubs here: Any
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise ValueError(
                        f"Key {key!r} appears twice in one mapping{_where(str(path))} "
                        f"(line {key_node.start_mark.line + 1})"
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    file = Path(path).expanduser()
    if not file.is_file() and str(path) in SUITES:
        file = SUITES[str(path)]
    if not file.is_file():
        raise FileNotFoundError(
            f"Metric suite config {str(path)!r} is not a file (resolved to {str(file.resolve())!r}) nor "
            f"a ready-made suite of the package: {sorted(SUITES)}"
        )
    with open(file, encoding="utf-8") as stream:
        try:
            return yaml.load(stream, Loader=_UniqueKeyLoader)  # noqa: S506 -- a SafeLoader subclass
        except yaml.YAMLError as error:
            raise ValueError(f"Metric suite config {str(path)!r} is not valid YAML: {error}") from None


def _read(config: str | os.PathLike[str] | dict[str, Any], allowed: tuple[str, ...],
          example: str) -> tuple[dict[str, Any], str]:
    """Load a config, check that it is a mapping of known keys with a list of ``metrics``; return the keys
    that are set and where the config came from (for messages)."""
    source = None
    if isinstance(config, (str, os.PathLike)):
        source = repr(os.fspath(config))
        config = load_yaml(config)
    if not isinstance(config, dict):
        raise ValueError(
            f"A metric suite config must be a mapping with the keys {', '.join(allowed)}"
            f"{_where(source)}, "
            f"got {type(config).__name__} {config!r}"
        )
    if "kind" in config and "kind" not in allowed:
        loader = {"sampled": "SampledMetrics"}.get(config["kind"], "PointwiseMetrics")
        raise ValueError(
            f"The metric suite config{_where(source)} is a {config['kind']!r} suite: load it with "
            f"torchrec_eval.{loader}.from_config"
        )
    for key in config:
        if key not in allowed:
            raise ValueError(
                f"Unknown key {key!r} in the metric suite config{_where(source)}; "
                f"allowed keys: {', '.join(allowed)}"
            )
    kwargs = {key: config[key] for key in allowed if config.get(key) is not None}
    where = _where(source)

    metrics = kwargs.get("metrics")
    if metrics is None:
        raise ValueError(
            f"The metric suite config{where} has no `metrics` key: give a list such as "
            f"['{example}', ...]"
        )
    if isinstance(metrics, str) or not isinstance(metrics, (list, tuple)) or not metrics:
        raise ValueError(
            f"`metrics`{where} must be a non-empty list of names such as ['{example}'], got {metrics!r}"
        )
    for name in metrics:
        if not isinstance(name, str):
            raise ValueError(
                f"`metrics`{where} must hold names such as '{example}', got {name!r} in {metrics!r}"
            )
    kwargs["metrics"] = list(metrics)
    return kwargs, where


def _check_kinds(kwargs: dict[str, Any], where: str, *, ints: tuple[str, ...] = (), strings: tuple[str, ...] = (),
                 numbers: tuple[str, ...] = (), flags: tuple[str, ...] = ()) -> None:
    """Each of these keys that the config sets holds its kind: an int, a string, a number (or null; not a
    bool), true or false; else a ValueError naming the key."""
    kinds: list[tuple[tuple[str, ...], Callable[[Any], bool], str]] = [
        (ints, is_int, "an int"),
        (strings, lambda value: isinstance(value, str), "a string"),
        (numbers, lambda value: value is None or (not isinstance(value, bool) and isinstance(value, (int, float))),
         "a number"),
        (flags, lambda value: isinstance(value, bool), "true or false"),
    ]
    for keys, fits, kind in kinds:
        for key in keys:
            if key in kwargs and not fits(kwargs[key]):
                raise ValueError(f"`{key}`{where} must be {kind}, got {kwargs[key]!r}")


def _check_options(kwargs: dict[str, Any], where: str) -> None:
    if "options" in kwargs:
        options = kwargs["options"]
        if not isinstance(options, dict):
            raise ValueError(
                f"`options`{where} must map a metric family to its options, as in "
                f"{{'ndcg': {{'gain': 'exp'}}}}, got {options!r}"
            )
        for family, family_options in options.items():
            if not isinstance(family_options, dict):
                raise ValueError(
                    f"`options.{family}`{where} must be a mapping of option names to values, "
                    f"got {family_options!r}"
                )
        kwargs["options"] = {family: dict(values) for family, values in options.items()}


def suite_kwargs(config: str | os.PathLike[str] | dict[str, Any]) -> dict[str, Any]:
    """Check a metric-suite config and return the keyword arguments of :class:`~torchrec_eval.RankingMetrics`.

    Args:
        config: the path of a YAML file (``str`` or path-like) holding a mapping, or the mapping itself.
            Keys: ``metrics`` (required: a list of names such as ``"ndcg@10"``, or bare names combined
            with ``k``), ``k`` (an int or a list of ints), ``options`` (``{family: {option: value}}``),
            ``convention`` (a preset name such as ``"trec"``), ``empty_target_action``,
            ``relevance_threshold``, ``ties``, ``validate_args``, ``prefix`` and ``postfix``, with the meaning they have in
            :class:`~torchrec_eval.RankingMetrics` (explicit options and arguments override the
            preset). A key set to ``null`` (``None``) is left to the constructor's default.

    Returns:
        A new dict of the keys that are set, ready for ``RankingMetrics(**kwargs)``.

    Raises:
        ValueError: if the config is not a mapping, has a key not in :data:`ALLOWED_KEYS` (the message
            names the key and lists the allowed ones), lacks ``metrics``, or a value has the wrong type
            (the message names the key); also on a YAML syntax error or a repeated YAML key.
        FileNotFoundError: if a path is given and is not a file.
        ImportError: if a path is given and PyYAML is not installed.

    Example:
        >>> from torchrec_eval.suites.config import suite_kwargs
        >>> suite_kwargs({"metrics": ["ndcg", "recall"], "k": [5, 10], "options": {"ndcg": {"gain": "exp"}}})
        {'metrics': ['ndcg', 'recall'], 'k': [5, 10], 'options': {'ndcg': {'gain': 'exp'}}}
        >>> import torchrec_eval as tre
        >>> suite = tre.RankingMetrics.from_config({"metrics": ["ndcg@10", "mrr@10"], "ties": "pessimistic"})
        >>> suite.order
        ['ndcg@10', 'mrr@10']
        >>> suite_kwargs({"metrics": ["ndcg@10"], "cutoffs": [5]})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: Unknown key 'cutoffs' in the metric suite config; allowed keys: metrics, k, options, ...
    """
    kwargs, where = _read(config, ALLOWED_KEYS, "ndcg@10")
    if "k" in kwargs:
        k = kwargs["k"]
        if isinstance(k, (list, tuple)):
            if not k or not all(is_int(one) for one in k):
                raise ValueError(f"`k`{where} must be an int or a non-empty list of ints, got {k!r}")
            kwargs["k"] = list(k)
        elif not is_int(k):
            raise ValueError(f"`k`{where} must be an int or a non-empty list of ints, got {k!r}")

    _check_options(kwargs, where)

    _check_kinds(kwargs, where, strings=("convention", "empty_target_action", "ties", "prefix", "postfix"),
                 numbers=("relevance_threshold",), flags=("validate_args",))
    return kwargs


#: The keys of a pointwise suite config (:class:`~torchrec_eval.PointwiseMetrics`, optionally windowed).
POINTWISE_KEYS = (
    "kind",
    "metrics",
    "tasks",
    "options",
    "num_groups",
    "validate_args",
    "window",
    "window_unit",
    "max_updates",
)


def pointwise_suite_kwargs(config: str | os.PathLike[str] | dict[str, Any]) -> dict[str, Any]:
    """Check a pointwise suite config (e.g. ``suites/ctr.yaml``) and return its keyword arguments.

    Args:
        config: a YAML file, the name of a ready-made suite (``"ctr"``) or a mapping with the keys
            ``kind`` (``pointwise``; a ranking suite has none), ``metrics`` (required: names such as
            ``"ne"``, ``"auc"``), ``tasks`` (task names, for [B, T] inputs), ``options``, ``num_groups``,
            ``validate_args`` (as in :class:`~torchrec_eval.PointwiseMetrics`), and ``window`` (an int),
            ``window_unit`` (``updates`` or ``samples``), ``max_updates`` (as in
            :class:`~torchrec_eval.Windowed`).

    Returns:
        A new dict of the keys that are set, without ``kind``.

    Raises:
        ValueError: if the config is not a mapping, has an unknown key, lacks ``metrics``, or a value has
            the wrong type (the message names the key).

    Example:
        >>> from torchrec_eval.suites.config import pointwise_suite_kwargs
        >>> pointwise_suite_kwargs({"kind": "pointwise", "metrics": ["ne", "auc"], "tasks": ["click"], "window": 100})
        {'metrics': ['ne', 'auc'], 'tasks': ['click'], 'window': 100}
    """
    kwargs, where = _read(config, POINTWISE_KEYS, "ne")
    kind = kwargs.pop("kind", "pointwise")
    if kind != "pointwise":
        raise ValueError(f"`kind`{where} must be 'pointwise' (or absent), got {kind!r}")
    _check_options(kwargs, where)
    tasks = kwargs.get("tasks")
    if tasks is not None and (not isinstance(tasks, (list, tuple)) or not all(isinstance(t, str) for t in tasks)):
        raise ValueError(f"`tasks`{where} must be a list of task names, got {tasks!r}")
    _check_kinds(kwargs, where, ints=("num_groups", "window", "max_updates"), strings=("window_unit",),
                 flags=("validate_args",))
    return kwargs


#: The keys of a sampled suite config (:class:`~torchrec_eval.SampledMetrics`).
SAMPLED_KEYS = (
    "kind",
    "metrics",
    "num_items",
    "num_negatives",
    "estimator",
    "gamma",
    "replacement",
    "audit",
    "ties",
    "validate_args",
    "num_groups",
)


def sampled_suite_kwargs(config: str | os.PathLike[str] | dict[str, Any]) -> dict[str, Any]:
    """Check a sampled suite config (e.g. ``suites/uni100.yaml``) and return its keyword arguments.

    Args:
        config: a YAML file, the name of a ready-made suite (``"uni100"``) or a mapping with the keys
            ``kind`` (``sampled``), ``metrics`` (required: names such as ``"ndcg@10"``), ``num_items``,
            ``num_negatives``, ``estimator``, ``gamma``, ``replacement``, ``audit``, ``ties``,
            ``validate_args`` and ``num_groups``, as in
            :class:`~torchrec_eval.SampledMetrics` (the catalogue size usually comes from the data:
            ``from_config("uni100", num_items=...)``).

    Returns:
        A new dict of the keys that are set, without ``kind``.

    Raises:
        ValueError: if the config is not a mapping, is not ``kind: sampled``, has an unknown key, lacks
            ``metrics``, or a value has the wrong type (the message names the key).

    Example:
        >>> from torchrec_eval.suites.config import sampled_suite_kwargs
        >>> sampled_suite_kwargs({"kind": "sampled", "metrics": ["ndcg@10"], "num_negatives": 100})
        {'metrics': ['ndcg@10'], 'num_negatives': 100}
    """
    kwargs, where = _read(config, SAMPLED_KEYS, "ndcg@10")
    kind = kwargs.pop("kind", None)
    if kind != "sampled":
        raise ValueError(f"`kind`{where} must be 'sampled' for a sampled suite, got {kind!r}")
    _check_kinds(kwargs, where, ints=("num_items", "num_negatives", "num_groups"), strings=("estimator", "ties"),
                 numbers=("gamma",), flags=("replacement", "audit", "validate_args"))
    return kwargs
