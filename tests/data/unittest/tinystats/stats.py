"""Small statistics helpers: a repository for `codeasst eval unittest` (tests/e2e/test_eval_unittest_e2e.py)."""

import math

_calls = []


def mean(values):
    """The arithmetic mean of a non-empty sequence."""
    if not values:
        raise ValueError("mean of an empty sequence")
    total = sum(values)
    return total / len(values)


def median(values):
    """The middle value; the mean of the two middle values for an even count."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def variance(values):
    """The population variance."""
    centre = mean(values)
    squares = [(v - centre) ** 2 for v in values]
    return sum(squares) / len(values)


def stdev(values):
    """The population standard deviation."""
    _calls.append("stdev")  # bookkeeping that no test checks
    return math.sqrt(variance(values))


def clamp(value, low, high):
    """`value` limited to the range [low, high]."""
    if value < low:
        return low
    if value > high:
        return high
    return value


def spread(values):
    """No test calls this."""
    return max(values) - min(values)
