"""The model's queue: fair between clients, left by waiters that are gone, bounded, and stopped."""

from __future__ import annotations

import threading
import time

import pytest

from codeasst.access.queue import Busy, Left, ModelQueue, Stopping


def wait_for(predicate, seconds: float = 5.0) -> None:
    deadline = time.time() + seconds
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.01)


def test_a_busy_client_does_not_starve_another():
    queue = ModelQueue(max_waiting=10, timeout_s=10)
    order: list[str] = []
    release = threading.Event()

    def take(client: str, hold: bool = False) -> None:
        with queue.turn(client):
            order.append(client)
            if hold:
                release.wait(5)

    first = threading.Thread(target=take, args=("busy", True))
    first.start()
    wait_for(lambda: order == ["busy"])
    threads = []
    for client in ("busy", "busy", "busy", "quiet"):  # the quiet client asks last
        threads.append(threading.Thread(target=take, args=(client,)))
        threads[-1].start()
        waiting = len(threads)
        wait_for(lambda: queue.depth()["waiting"] == waiting)  # noqa: B023 - read at once, in this turn
    release.set()
    for thread in [first, *threads]:
        thread.join(5)
    assert order == ["busy", "quiet", "busy", "busy", "busy"]


def test_a_waiter_that_is_gone_leaves_at_once_and_the_queue_is_bounded():
    queue = ModelQueue(max_waiting=1, timeout_s=0.3)
    gone = threading.Event()
    outcome: list[str] = []

    def wait() -> None:
        try:
            with queue.turn("b", cancelled=gone.is_set):
                outcome.append("ran")
        except Left:
            outcome.append("left")

    with queue.turn("a"):
        waiter = threading.Thread(target=wait)
        waiter.start()
        wait_for(lambda: queue.depth()["waiting"] == 1)
        with pytest.raises(Busy, match="1 requests are waiting"), queue.turn("c"):
            pass
        gone.set()
        waiter.join(5)
        assert outcome == ["left"] and queue.depth() == {"waiting": 0, "running": True}
        with pytest.raises(Busy, match="waited 0.3 s"), queue.turn("d"):
            pass
    assert queue.depth() == {"waiting": 0, "running": False}


def test_stop_wakes_every_waiter():
    queue = ModelQueue(max_waiting=10, timeout_s=60)
    raised: list[type] = []

    def wait() -> None:
        try:
            with queue.turn("w"):
                pass
        except Stopping:
            raised.append(Stopping)

    with queue.turn("holder"):
        threads = [threading.Thread(target=wait) for _ in range(4)]
        for thread in threads:
            thread.start()
        wait_for(lambda: queue.depth()["waiting"] == 4)
        started = time.perf_counter()
        queue.stop()
        for thread in threads:
            thread.join(5)
    assert raised == [Stopping] * 4 and time.perf_counter() - started < 1
    with pytest.raises(Stopping), queue.turn("late"):
        pass
