"""The rows to evaluate with the library's metrics: saved tensors (``.pt`` / ``.npz``), or a TREC run
ranked against its qrels."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from torchrec_eval.cli.errors import CliError
from torchrec_eval.cli.paths import check_input_file
from torchrec_eval.cli.trec_files import coverage_note

if TYPE_CHECKING:
    from torch import Tensor

    from torchrec_eval.trec import Qrels, Run

# the order of equal scores in a TREC run, per convention (torchrec_eval.trec.ranking_order); the
# other presets' "index" ties are the order of their inputs: the file's
TIES = {None: "trec", "trec": "trec", "ranx": "ranx"}

TENSOR_SUFFIXES = (".pt", ".pth", ".npz")
TENSOR_KEYS = {
    "preds": ("preds", "scores"),
    "target": ("target", "relevance"),
    "ranked_ids": ("ranked_ids",),
    "target_ids": ("target_ids",),
    "target_gains": ("target_gains",),
    "mask": ("mask",),
    "exclude_ids": ("exclude_ids",),
}


def is_tensor_file(path: str) -> bool:
    return path.lower().endswith(TENSOR_SUFFIXES)


def load_tensors(path: str) -> dict[str, Tensor]:
    """Read a ``.pt`` / ``.pth`` (a dict of tensors, saved with ``torch.save``) or ``.npz`` file."""
    import torch

    check_input_file(path, "tensor")
    if os.path.getsize(path) == 0:  # the readers' own word for it is a bare EOFError
        raise CliError(f"{path}: the file is empty (expected tensors saved by torch.save or numpy.savez)")
    try:
        if path.lower().endswith(".npz"):
            import numpy as np

            with np.load(path, allow_pickle=False) as archive:
                raw = {key: torch.from_numpy(archive[key]) for key in archive.files}
        else:
            raw = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - any reader failure is a bad input file
        problem = f"{type(error).__name__}: {_reader_problem(error)}"
        raise CliError(f"{path}: cannot read tensors ({problem})") from None
    if not isinstance(raw, dict) or not all(isinstance(v, torch.Tensor) for v in raw.values()):
        raise CliError(f"{path}: expected a dict of named tensors, got {type(raw).__name__}")
    known = {alias: key for key, aliases in TENSOR_KEYS.items() for alias in aliases}
    out: dict[str, Tensor] = {}
    for name, value in raw.items():
        if name not in known:
            raise CliError(f"{path}: unknown tensor {name!r}; expected some of {sorted(known)}")
        key = known[name]
        if key in out:
            raise CliError(f"{path}: {key!r} is given twice (as {name!r} and another alias)")
        if key.endswith("_ids"):
            value = _integer_ids(path, name, value)
        elif key == "mask":
            value = _boolean_mask(path, name, value)
        elif key == "preds" and not value.is_floating_point():
            value = value.double()
        out[key] = value
    return out


def _reader_problem(error: Exception) -> str:
    """The useful line of a reader's message: torch.load's for a file that is no torch.save output is a
    paragraph about ``weights_only`` whose cause comes last."""
    text = str(error)
    detail = text.partition("WeightsUnpickler error:")[2]
    lines = [line.strip() for line in (detail or text).splitlines() if line.strip()]
    return lines[0][:200] if lines else "no details"


def _integer_ids(path: str, name: str, value: Tensor) -> Tensor:
    """Item ids as int64. Floats are taken only when each is a whole number: a silent cast made 1.7 item 1
    and NaN item -2**63 (the library refuses float ids; files written by numpy/pandas often hold them)."""
    import torch

    if value.dtype == torch.bool or value.is_complex():
        raise CliError(f"{path}: tensor {name!r} must hold integer item ids, got dtype {value.dtype}")
    if not value.is_floating_point():
        return value.long()
    wrong = ~torch.isfinite(value) | (value != value.round()) | (value.abs() >= 2.0**63)
    if wrong.any():
        raise CliError(f"{path}: tensor {name!r} must hold integer item ids, got {_first(value, wrong)} "
                       f"(dtype {value.dtype})")
    return value.long()


def _boolean_mask(path: str, name: str, value: Tensor) -> Tensor:
    """A mask as bool: booleans, or 0 and 1 of any dtype (0.5 or 2 are no answer to "is it a candidate?")."""
    import torch

    if value.dtype == torch.bool:
        return value
    wrong = (value != 0) & (value != 1)  # NaN too
    if wrong.any():
        raise CliError(f"{path}: tensor {name!r} must hold booleans or 0/1, got {_first(value, wrong)} "
                       f"(dtype {value.dtype})")
    return value != 0


def _first(value: Tensor, wrong: Tensor) -> str:
    """The first wrong value and where it is, as ``1.7 at [0, 3]``."""
    where = wrong.nonzero()[0].tolist()
    return f"{value[tuple(where)].item():g} at {where}"  # :g: float32's 1.7, not 1.7000000476837158


class Inputs:
    """The rows to evaluate: query labels, keyword tensors for ``update`` and the full list depth."""

    def __init__(self, qids: list[str], tensors: dict[str, Tensor], full_depth: int, note: str = "") -> None:
        self.qids, self.tensors, self.full_depth, self.note = qids, tensors, full_depth, note

    def __len__(self) -> int:
        return len(self.qids)

    def batches(self, rows: int, width: int | None = None) -> Iterator[tuple[int, dict[str, Tensor]]]:
        import torch

        for start in range(0, len(self), rows):
            batch = {key: value[start : start + rows] for key, value in self.tensors.items()}
            if width is not None and "ranked_ids" in batch and batch["ranked_ids"].shape[1] < width:
                ranked = batch["ranked_ids"]
                batch["ranked_ids"] = torch.nn.functional.pad(ranked, (0, width - ranked.shape[1]), value=-1)
            yield start, batch


def load_trec(run: Run, qrels: Qrels, args: argparse.Namespace, judged: bool = False) -> Inputs:
    """The run ranked into the library's input form (``ranked_ids``, ``target_ids``, ``target_gains``); with
    ``judged`` (a metric reads the judgments: bpref, Judged@k, infAP) the judged non-relevant documents are targets
    too (gain 0), and the pooled but unjudged ones (gain -1)."""
    from torchrec_eval.trec import to_ranked

    data = to_ranked(run, qrels, complete=args.complete, relevance_level=args.relevance_level,
                     max_docs=args.max_docs, ties=TIES.get(args.convention, "file"),
                     integer_relevance=args.convention == "trec", judged=judged)
    note = coverage_note(run, qrels, len(data), args.complete)
    relevant = data.target_ids >= 0
    if judged:  # the judged non-relevant targets have gain 0 (a relevant one may too, under -l 0)
        level = args.relevance_level
        relevant &= data.target_gains >= level if level is not None else data.target_gains > 0
    num_relevant = int(relevant.sum(1).max())
    tensors = {"ranked_ids": data.ranked_ids, "target_ids": data.target_ids,
               "target_gains": data.target_gains}
    return Inputs(data.qids, tensors, max(data.depth, num_relevant), note)


def load_tensor_inputs(run_path: str, qrels_path: str | None) -> Inputs:
    tensors = load_tensors(run_path)
    source = dict.fromkeys(tensors, run_path)  # which file each tensor came from, for the messages
    if qrels_path is not None:
        extra = load_tensors(qrels_path)
        for key in set(tensors) & set(extra):
            raise CliError(f"{key!r} is in both {run_path} and {qrels_path}")
        tensors.update(extra)
        source.update(dict.fromkeys(extra, qrels_path))
    main_key = "ranked_ids" if "ranked_ids" in tensors else "preds"
    if main_key not in tensors:
        raise CliError(f"{run_path}: expected 'preds' (or 'scores') [B, N], or 'ranked_ids' [B, L]; "
                       f"got {sorted(tensors)}")
    rows = tensors[main_key].shape[0] if tensors[main_key].ndim else 0
    for key, value in tensors.items():
        if value.ndim < 1 or value.shape[0] != rows:
            raise CliError(f"{source[key]}: {key!r} must have one row per query ({rows} rows, like "
                           f"{main_key!r}), got shape {tuple(value.shape)}")
    if not rows:  # else the metrics' compute() warns and prints nan, where an empty TREC run is an error
        raise CliError(f"{source[main_key]}: no query to evaluate ({main_key!r} has 0 rows)")
    if main_key == "ranked_ids":
        width = tensors["ranked_ids"].shape[1] if tensors["ranked_ids"].ndim == 2 else 1
        targets = tensors.get("target_ids")
        if targets is not None and targets.ndim == 2:
            width = max(width, int((targets >= 0).sum(1).max()) if targets.numel() else 0)
    else:
        width = tensors["preds"].shape[1] if tensors["preds"].ndim == 2 else 1
    return Inputs([str(i) for i in range(rows)], tensors, max(width, 1), f"{rows} queries evaluated")
