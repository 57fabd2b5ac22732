"""The README's test command runs ``--dist loadgroup``: a test marked ``xdist_group`` carries its group in its node id
(which the scheduler reads), so that every test of a group runs on one worker (``tests/conftest.py``)."""

import pytest


@pytest.mark.xdist_group("typing")
def test_a_grouped_test_carries_its_group(request):
    if not request.config.getoption("loadgroup", default=False):
        pytest.skip("not under pytest-xdist's --dist loadgroup")
    assert request.node.nodeid.endswith("@typing"), request.node.nodeid
