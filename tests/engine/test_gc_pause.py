"""engine.gc_pause: the collector is held back while a definition or compile runs, nests,
and is left as the caller had it."""

import gc

import torch

from engine import DataType, FusionDefinition, compile_fusion, gc_pause


def test_holds_nest_and_restore_the_callers_setting():
    assert gc.isenabled()
    with gc_pause.held():
        assert not gc.isenabled()
        with gc_pause.held():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_pause.held():
            pass
        assert not gc.isenabled()  # a caller's own disable is kept
    finally:
        gc.enable()


def test_definitions_and_compiles_hold_the_collector_while_they_run():
    seen = []
    with FusionDefinition() as fd:
        seen.append(gc.isenabled())
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(t))
    assert seen == [False] and gc.isenabled()
    compile_fusion(fd, [torch.randn(8)])
    assert gc.isenabled()


def test_entering_an_open_definition_again_keeps_one_hold():
    fd = FusionDefinition()
    with fd:
        with fd:
            fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        assert not gc.isenabled()
    assert gc.isenabled()
