"""Compiles in worker threads (the TUI compiles in workers): the caches a compile keeps while
it judges and lowers a fusion are the thread's own, so two fusions compiled at once get the
kernels each gets alone."""

from __future__ import annotations

import threading

from benchmarks.fusions import benchmark_fusions
from engine import fusion_cache
from engine.compile import compile_fusion

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
