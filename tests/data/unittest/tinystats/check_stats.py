# The tests of stats.py. Named check_*.py so that codeasst's own test run does not collect them;
# `codeasst eval unittest tests/data/unittest/tinystats --tests check_stats.py` runs them.
import pytest
from stats import clamp, mean, median, stdev, variance


def test_mean():
    assert mean([1, 2, 3, 6]) == 3
    with pytest.raises(ValueError):
        mean([])


@pytest.mark.parametrize("values, expected", [([3, 1, 2], 2), ([4, 1, 3, 2], 2.5)])
def test_median(values, expected):
    assert median(values) == expected


def test_variance_and_stdev():
    assert variance([2, 4, 4, 4, 5, 5, 7, 9]) == 4
    assert stdev([2, 4, 4, 4, 5, 5, 7, 9]) == 2


def test_clamp():
    assert clamp(5, 0, 3) == 3
    assert clamp(-1, 0, 3) == 0
    assert clamp(2, 0, 3) == 2
