"""``discount_sum`` is a constant to ``torch.compile`` without importing torch._dynamo at import time."""

import torch

from torchrec_eval.ranking.discount_sum import CONSTANT_MARK, discount_sum


def test_the_mark_is_what_torchs_public_decorator_sets():
    """The module sets the attribute by hand (the public decorator imports dynamo, a second of every user's
    import): this fails the day `torch.compiler.assume_constant_result` marks a function another way."""

    def fresh(k: int, log_base: float) -> float:
        return float(k) / log_base

    marked = torch.compiler.assume_constant_result(fresh)
    assert marked is fresh
    assert vars(fresh) == {CONSTANT_MARK: True}
    assert getattr(discount_sum, CONSTANT_MARK) is True


def test_a_compiled_call_takes_the_eager_number():
    def ideal(x: torch.Tensor) -> torch.Tensor:
        return x * discount_sum(7, 2.0)

    compiled = torch.compile(ideal, fullgraph=True, backend="eager")
    x = torch.ones(3, dtype=torch.float64)
    want = sum(1 / torch.log2(torch.tensor(i + 1.0, dtype=torch.float64)).item() for i in range(1, 8))
    torch.testing.assert_close(compiled(x), torch.full((3,), want, dtype=torch.float64), rtol=1e-14, atol=0)
