"""The barrier tasks' rendezvous at the driver's control server (replaces Spark's allGather)."""

from __future__ import annotations

import threading

import pytest

from hydrofeed.spark.control import Control
from hydrofeed.spark.node import _gather

pytestmark = [pytest.mark.spark, pytest.mark.timeout(60)]


def _cm(ctl: Control, timeout: float = 10) -> dict:
    return {"driver_addr": ("127.0.0.1", ctl.port), "token": ctl.token, "reservation_timeout": timeout}


def test_gather_answers_every_meta_in_rank_order_to_every_task():
    ctl = Control("tok-1")
    try:
        got: dict[int, list] = {}
        errors: list[BaseException] = []

        def task(rank: int) -> None:
            try:
                got[rank] = _gather(_cm(ctl), 0, rank, 3, {"rank": rank, "host": f"h{rank}"})
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        ts = [threading.Thread(target=task, args=(r,)) for r in (2, 0, 1)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        assert not errors
        want = [{"rank": r, "host": f"h{r}"} for r in range(3)]
        assert got == {0: want, 1: want, 2: want}
        # Generations are separate rendezvous.
        assert _gather(_cm(ctl), 1, 0, 1, {"rank": 0, "gen": 1}) == [{"rank": 0, "gen": 1}]
    finally:
        ctl.close()


def test_gather_times_out_naming_how_many_arrived():
    ctl = Control("tok-2")
    try:
        with pytest.raises(RuntimeError, match=r"only 1 of 2 nodes arrived within 0.5s"):
            _gather(_cm(ctl, timeout=0.5), 0, 0, 2, {"rank": 0})
    finally:
        ctl.close()


def test_gather_with_a_wrong_token_is_refused():
    ctl = Control("tok-3")
    try:
        cm = dict(_cm(ctl), token="other")
        with pytest.raises(RuntimeError, match="rendezvous at the driver"):
            _gather(cm, 0, 0, 1, {"rank": 0})
    finally:
        ctl.close()
