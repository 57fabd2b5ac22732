"""Every test starts from the same global random state, so a test never depends on the ones before it."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _seed_global_rng():
    torch.manual_seed(0)
