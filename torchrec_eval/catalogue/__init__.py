"""Exact metrics over catalogues scored in item chunks or item shards, without a [B, N] score matrix."""

from torchrec_eval.catalogue.stream import CatalogueBatch

__all__ = ["CatalogueBatch"]
