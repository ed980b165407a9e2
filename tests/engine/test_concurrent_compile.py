"""Compiles in worker threads (the TUI compiles in workers): the caches a compile keeps while
it judges and lowers a fusion are the thread's own, so two fusions compiled at once get the
kernels each gets alone."""

from __future__ import annotations

import threading

from benchmarks.fusions import benchmark_fusions
from engine import DataType, FusionDefinition, fusion_cache
from engine.compile import compile_fusion
from engine.ir import logical_map, loop_map

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
