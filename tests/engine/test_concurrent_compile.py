"""Compiles in worker threads (the TUI compiles in workers): the caches a compile keeps while
it judges and lowers a fusion are the thread's own, so two fusions compiled at once get the
kernels each gets alone. Each context the compiler opens (frozen maps, kept legal positions
and transforms, verification put off) holds in the thread that opened it only; the
collector's hold, which is the process's, ends with the last thread's release."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest

from benchmarks.fusions import benchmark_fusions
from engine import DataType, FusionDefinition, ScheduleError, fusion_cache, gc_pause
from engine.compile import compile_fusion
from engine.ir import iterdomain, logical_map, loop_map, transactions, verify

NAMES = ("rope_bwd", "layer_norm", "softmax", "rms_norm")


def _sources(name: str) -> list[str | None]:
    bf = next(b for b in benchmark_fusions("small") if b.name == name)
    return [s.cuda_source for s in compile_fusion(bf.build(), bf.make_inputs("cpu", 0)).segments]


def test_fusions_compiled_in_threads_get_the_kernels_they_get_alone():
    alone = {}
    for name in NAMES:
        fusion_cache.clear()
        alone[name] = _sources(name)
    fusion_cache.clear()
    got: dict[str, list[list[str | None]]] = {name: [] for name in NAMES}
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            for _ in range(3):
                got[name].append(_sources(name))
        except BaseException as e:  # reported below, with the thread's fusion
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in NAMES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for name in NAMES:
        assert got[name] == [alone[name]] * 3, name


def test_a_freeze_holds_in_its_own_thread_only():
    # One thread freezes a fusion's maps; another, meanwhile, sees no freeze (its own compile
    # would otherwise read and fill the first one's caches), and the first keeps its own
    # after the other has frozen and released one of its own.
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.relu(fd.define_tensor(shape=[4], dtype=DataType.Float)))
    frozen, go_on, seen = threading.Event(), threading.Event(), {}

    def holder() -> None:
        with logical_map.pairwise_maps_frozen(fd.fusion), loop_map.loop_maps_frozen():
            frozen.set()
            go_on.wait(10)
            seen["holder"] = (logical_map._current() is not None, getattr(loop_map._state, "frozen", None) is not None)

    t = threading.Thread(target=holder)
    t.start()
    frozen.wait(10)
    seen["other"] = (logical_map._current() is not None, getattr(loop_map._state, "frozen", None) is not None)
    with logical_map.pairwise_maps_frozen(fd.fusion), loop_map.loop_maps_frozen():
        pass
    go_on.set()
    t.join()
    assert seen == {"other": (False, False), "holder": (True, True)}


@contextlib.contextmanager
def _open_in_another_thread(context: Callable[[], AbstractContextManager[object]]) -> Iterator[list[BaseException]]:
    """context() entered in a new thread and held open while the body runs in this one; what
    the other thread raised (entering, holding or leaving it) is in the list yielded."""
    entered, leave = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def holder() -> None:
        try:
            with context():
                entered.set()
                leave.wait(10)
        except BaseException as e:  # reported by the caller
            errors.append(e)
        finally:
            entered.set()

    t = threading.Thread(target=holder)
    t.start()
    entered.wait(10)
    try:
        yield errors
    finally:
        leave.set()
        t.join()


def test_legal_positions_kept_in_one_thread_are_not_used_by_another():
    # While one thread inlines (only_positions_change keeps each tensor's largest legal
    # position), another splits a consumer, which lowers the position, and is told so.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t1 = fd.ops.exp(t0)
        fd.add_output(fd.ops.neg(t1))
    (t2,) = fd.fusion.outputs
    with _open_in_another_thread(verify.only_positions_change) as errors:
        assert verify.max_inline_position(t1) == 2
        fd.sched.split(t2, 1, 4)
        assert verify.max_inline_position(t1) == 1
        with pytest.raises(ScheduleError, match="largest legal position is 1"):
            t1.inline_at(2)
    assert not errors


def _loop(tv) -> list[str]:
    return [str(i) for i in tv.domain.loop]


def _sum_over_split_broadcast():
    # Merging T1's second loop axis (bS{2}, a piece of the split broadcast) with the reduction
    # axis is refused by the verifier, not by merge's own checks (see
    # test_merge_of_reduction_and_split_broadcast_piece_is_refused).
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        t1 = fd.ops.sum(t0, dims=[1])
        fd.add_output(t1)
    fd.sched.split(t1, 0, 2)
    return fd, t1


@pytest.mark.parametrize("context", [transactions.verification_deferred, transactions.loop_edits_trusted])
def test_verification_put_off_in_one_thread_is_not_put_off_in_another(context):
    # One thread defers or batches its verification; another's refused edit is refused at once
    # and rolled back, and the first thread's check at the end never sees it.
    fd, t1 = _sum_over_split_broadcast()
    before = _loop(t1)
    with _open_in_another_thread(context) as errors:
        assert transactions.transactions_roll_back()
        with pytest.raises(ScheduleError, match="mixes a reduction axis with a broadcast axis"):
            fd.sched.merge(t1, 1)
        assert _loop(t1) == before
    assert not errors


def test_transforms_kept_in_one_thread_do_not_answer_another(monkeypatch):
    # One thread keeps transforms_between's answers; another's questions are walked each
    # time, and its answers are not kept for the first (walks counts the real walks).
    walks = []
    walk = iterdomain._transforms_between
    monkeypatch.setattr(iterdomain, "_transforms_between", lambda start, end: walks.append(1) or walk(start, end))
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(t0))
    (t1,) = fd.fusion.outputs
    fd.sched.split(t1, 1, 4)
    dom = t1.domain
    walks.clear()
    with _open_in_another_thread(iterdomain.transforms_kept) as errors:
        found = [iterdomain.transforms_between(dom.logical, dom.loop) for _ in range(2)]
    assert len(walks) == 2 and found[0] == found[1] and len(found[0]) == 1
    assert not errors
    with iterdomain.transforms_kept():  # in its own thread, the second answer is the kept one
        for _ in range(2):
            iterdomain.transforms_between(dom.logical, dom.loop)
    assert len(walks) == 3


def test_holds_from_two_threads_keep_the_collector_off_until_both_are_released(monkeypatch):
    # Thread a stops in its first hold just after turning the collector off, before counting
    # itself; thread b holds meanwhile. Unlocked, b would find no hold, take the collector as
    # turned off by the caller and leave it off after both releases. Then a releases before b.
    assert gc.isenabled()
    a_disabled, a_go_on = threading.Event(), threading.Event()

    class StopsInADisable:
        isenabled, enable = staticmethod(gc.isenabled), staticmethod(gc.enable)

        @staticmethod
        def disable() -> None:
            gc.disable()
            if threading.current_thread().name == "holder-a":
                a_disabled.set()
                a_go_on.wait(10)

    monkeypatch.setattr(gc_pause, "gc", StopsInADisable)
    held = {n: threading.Event() for n in "ab"}
    release, released = {n: threading.Event() for n in "ab"}, {n: threading.Event() for n in "ab"}

    def holder(name: str) -> None:
        gc_pause.hold()
        held[name].set()
        release[name].wait(10)
        gc_pause.release()
        released[name].set()

    threads = {n: threading.Thread(target=holder, args=(n,), name=f"holder-{n}") for n in "ab"}
    seen = []
    try:
        threads["a"].start()
        a_disabled.wait(10)
        threads["b"].start()
        held["b"].wait(1)  # unlocked, b holds at once; locked, it waits for a's hold to end
        a_go_on.set()
        assert held["a"].wait(10) and held["b"].wait(10)
        seen.append(gc.isenabled())
        for n in "ab":
            release[n].set()
            released[n].wait(10)
            seen.append(gc.isenabled())
    finally:
        a_go_on.set()
        for n in "ab":
            release[n].set()
            if threads[n].ident is not None:  # started
                threads[n].join()
        gc.enable()
    assert seen == [False, False, True]
