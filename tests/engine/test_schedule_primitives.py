"""Scheduling primitives: seed-001 transform blocks, caches, rfactor, inlining, propagation,
the logical map's per-op rules, the verifier, and fd.sched's recording."""

import pytest
import torch

from engine import DataType, FusionDefinition, MemoryType, ParallelType, ScheduleError
from engine.frontend.sched import CacheOp
from engine.ir.logical_map import pairwise_logical_map, tensor_edges
from engine.ir.printer import transforms_block
from engine.ir.verify import verify, verify_fusion
from tests.emulation import require_gxx


def seed001():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 4096, 4096], contiguity=[True, None, True],
                              dtype=DataType.Float, stride_order=[1, 2, 0])
        t1 = fd.ops.squeeze(t0, [0])
        t2 = fd.ops.sum(t1, dims=[1])
        t3 = fd.ops.broadcast(t2, [True, False, True])
        t4 = fd.ops.add(t0, t3)
        t5 = fd.ops.squeeze(t4, [0])
        t6 = fd.ops.sum(t5, dims=[0])
        fd.add_output(t4)
        fd.add_output(t6)
    return fd, t0


def state(tv):
    """Everything a refused primitive must leave as it was."""
    d = tv.domain
    return (str(tv), transforms_block(tv), list(d.loop), d.allocation and list(d.allocation),
            list(d.contiguity), tv.compute_at_pos, tv.max_producer_pos,
            [i.parallel_type for i in d.loop])


# ---- seed 001 ----------------------------------------------------------------------------------

def test_seed001_input_block_exact():
    _, t0 = seed001()
    assert transforms_block(t0) == (
        "T0_g_float[bS0{1}, iS1{4096}, iS2{4096}]\n"
        " logical domain : (bS0{1}, iS1{4096}, iS2{4096})\n"
        " allocation domain : (iS1{4096}, bS0{1}, iS2{4096})\n"
        " contiguity: t n t\n"
        " loop domain : (bS0{1}, iS1{4096}, iS2{4096})\n"
    )


def schedule_t7_like():
    """The seed's T7: a shared-memory cache of T0, split by 2, 132 and 2, blockIdx.y
    outermost, bulk innermost, propagated to the fusion and computed at position 2."""
    fd, t0 = seed001()
    c = fd.sched.cache_after(t0)
    fd.sched.set_memory_type(c, MemoryType.shared)
    fd.sched.split(c, 1, 2)
    fd.sched.split(c, 1, 132)
    fd.sched.split(c, 1, 2)
    fd.sched.reorder(c, {3: 0, 1: 1, 2: 2, 4: 3, 0: 4})
    fd.sched.parallelize(c, 0, ParallelType.grid_y)
    fd.sched.parallelize(c, 5, ParallelType.bulk)
    fd.sched.transform_like(c)
    fd.sched.inline_at(c, 2, selected_tensors=[c])
    return fd, t0, c


def test_seed001_cache_block_follows_the_seed_format():
    fd, t0, c = schedule_t7_like()
    assert c.short_name == "T7"
    # Same shape as the seed's T7 block (our ids are numbered by this fusion), with the
    # allocation domain transformed along with the loop domain (the fix that landed)
    # instead of the stale (iS21{4096}, bS20{1}, iB22{4096}).
    assert transforms_block(c) == (
        "T7_s_float[iblockIdx.y23{132}, iS24{8}, iS25{2}, iS21{2}, bS17{1}, iB19{4096}] ca_pos( 2 )\n"
        " logical domain : (bS17{1}, iS18{4096}, iB19{4096})\n"
        " allocation domain : (iS24{8}, iS25{2}, iblockIdx.y23{132}, iS21{2}, bS17{1}, iB19{4096})\n"
        " contiguity: t t t t n t\n"
        "  Split: iS18{4096} by factor 2 -> iS20{2048}, iS21{2}\n"
        "  Split: iS20{2048} by factor 132 -> iS22{16}, iblockIdx.y23{132}\n"
        "  Split: iS22{16} by factor 2 -> iS24{8}, iS25{2}\n"
        " loop domain : (iblockIdx.y23{132}, iS24{8}, iS25{2}, iS21{2}, bS17{1}, iB19{4096})\n"
    )
    # The input keeps its own layout: the cache's allocation was derived, not shared.
    assert [i.name for i in t0.domain.allocation] == [1, 0, 2]
    assert list(t0.domain.contiguity) == [True, None, True]
    verify_fusion(fd.fusion)
    # Consumers of the cache were given the same loops, so ca_pos 2 maps into each.
    for cons in (fd.fusion.tensors()[2], fd.fusion.outputs[0]):
        assert cons.max_producer_pos == 2
        assert str(cons.domain.loop[0]).endswith("{132}")


def test_seed001_schedule_keeps_results():
    fd, _ = seed001()
    small = FusionDefinition()
    with small:
        t0 = small.define_tensor(shape=[1, 40, 24], contiguity=[True, None, True],
                                 dtype=DataType.Float, stride_order=[1, 2, 0])
        t1 = small.ops.squeeze(t0, [0])
        t2 = small.ops.sum(t1, dims=[1])
        t3 = small.ops.broadcast(t2, [True, False, True])
        t4 = small.ops.add(t0, t3)
        t6 = small.ops.sum(small.ops.squeeze(t4, [0]), dims=[0])
        small.add_output(t4)
        small.add_output(t6)
    x = torch.randn(40, 1, 24).permute(1, 0, 2)
    before = small.execute([x])
    c = small.sched.cache_after(t0)
    small.sched.split(c, 1, 2)
    small.sched.split(c, 1, 3)
    small.sched.reorder(c, {2: 0})
    small.sched.transform_like(c)
    small.sched.inline_most()
    verify_fusion(small.fusion)
    for a, b in zip(before, small.execute([x])):
        torch.testing.assert_close(a, b)


# ---- caches ------------------------------------------------------------------------------------

def test_cache_after_derives_dense_allocation_for_a_strided_input():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[False, True], stride_order=[0, 1])
        t1 = fd.ops.exp(t0)
        fd.add_output(t1)
    c = fd.sched.cache_after(t0, cache_op=CacheOp.Streaming)
    assert c.domain.allocation == [c.domain.logical[1], c.domain.logical[0]]
    # The input's `f` (its rows have gaps) says nothing about the dense local cache.
    assert c.domain.contiguity == [True, True]
    assert t1.definition.inputs == [c]
    assert "Set( T0_g_float[iS0{i0}, iS1{i2}], cache_op=Streaming )" in str(fd.fusion)
    # A loop merge of ids adjacent in the allocation carries the allocation along.
    fd.sched.reorder(c, {0: 1})
    fd.sched.merge(c, 0)
    assert c.domain.allocation == c.domain.loop
    assert c.domain.contiguity == [True]


def test_allocation_merge_of_non_adjacent_ids_keeps_the_allocation():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], stride_order=[1, 2, 0])
        fd.add_output(fd.ops.neg(t0))
    c = fd.sched.cache_after(t0)
    before = list(c.domain.allocation)  # (i1, i0, i2): logical 0 and 1 are not adjacent as (0, 1)
    c.merge(0)
    assert c.domain.allocation == before
    verify(c)


def test_cache_before_moves_the_reduction_to_the_cache():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.ops.sum(t0, dims=[1])
        fd.add_output(t1)
    x = torch.randn(5, 7)
    c = fd.sched.cache_before(t1)
    assert str(c) == "T2_l_float[iS2{i0}, rS3{i2}]"
    assert str(t1) == "T1_g_float[iS4{i0}]"
    assert t1.definition.inputs == [c] and c.definition.inputs == [t0]
    torch.testing.assert_close(fd.execute([x])[0], x.sum(1))
    with pytest.raises(ScheduleError, match="T0: cache_before needs a tensor produced by an op"):
        fd.sched.cache_before(t0)


def test_cache_fork_makes_a_copy_the_output():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1])
        t1 = fd.ops.exp(t0)
        t2 = fd.ops.neg(t1)
        fd.add_output(t1)
        fd.add_output(t2)
    x = torch.randn(6)
    f = fd.sched.cache_fork(t1)
    assert fd.fusion.outputs == [f, t2]
    assert t1.memory_type == MemoryType.Local and f.memory_type == MemoryType.Global
    out = fd.execute([x])
    torch.testing.assert_close(out[0], x.exp())
    torch.testing.assert_close(out[1], -x.exp())
    with pytest.raises(ScheduleError, match="T3: cache_fork needs an output that is also used"):
        fd.sched.cache_fork(f)


# ---- rfactor -------------------------------------------------------------------------------------

def test_rfactor_splits_a_reduction_in_two():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.ops.sum(t0, dims=[1])
        fd.add_output(t1)
    x = torch.randn(3, 37)  # 37 is not a multiple of 4: the rfactor view pads with 0
    fd.sched.split(t1, 1, 4)
    rf = fd.sched.rfactor(t1, [1])
    assert transforms_block(rf) == (
        "T2_l_float[iS6{i0}, rS8{( ceilDiv(i2, 4) )}rf, iS9{4}rf]\n"
        " root domain : (iS6{i0}, rS7{i2})\n"
        "  Split: rS7{i2} by factor 4 -> rS8{( ceilDiv(i2, 4) )}rf, iS9{4}rf\n"
        " logical domain : (iS6{i0}, rS8{( ceilDiv(i2, 4) )}rf, iS9{4}rf)\n"
        " contiguity: t n t\n"
        "  Split: rS7{i2} by factor 4 -> rS8{( ceilDiv(i2, 4) )}rf, iS9{4}rf\n"
        " loop domain : (iS6{i0}, rS8{( ceilDiv(i2, 4) )}rf, iS9{4}rf)\n"
    )
    assert str(t1) == "T1_g_float[iS10{i0}, rS11{4}]"
    assert t1.definition.inputs == [rf]
    torch.testing.assert_close(fd.execute([x])[0], x.sum(1))
    # The producer of the rfactor tensor can be scheduled like it and inlined into it.
    fd.sched.transform_like(rf)
    fd.sched.inline_most()
    assert rf.max_producer_pos == 0  # T0 is an input: never inlined
    torch.testing.assert_close(fd.execute([x])[0], x.sum(1))


def test_rfactor_max_of_a_merged_reduction():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1])
        t1 = fd.ops.exp(t0)
        t2 = fd.ops.max(t1, dims=[1, 2])
        fd.add_output(t2)
    x = torch.randn(2, 5, 3)
    fd.sched.merge(t2, 1)
    fd.sched.split(t2, 1, 4, inner_split=False)
    rf = fd.sched.rfactor(t2, [2])
    assert [i.is_reduction for i in rf.domain.logical] == [False, False, True]
    fd.sched.transform_like(rf)
    fd.sched.inline_most()
    assert t1.compute_at_pos == 3
    verify_fusion(fd.fusion)
    torch.testing.assert_close(fd.execute([x])[0], x.exp().amax(dim=(1, 2)))


def test_rfactor_refusals_leave_the_tensor_unchanged():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.ops.sum(t0, dims=[1])
        fd.add_output(t1)
    fd.sched.split(t1, 1, 4)
    s = state(t1)
    with pytest.raises(ScheduleError, match="T1: rfactor must leave at least one reduction axis"):
        fd.sched.rfactor(t1, [1, 2])
    with pytest.raises(ScheduleError, match=r"T1: rfactor axis iS2\{i0\} is not a reduction axis"):
        fd.sched.rfactor(t1, [0])
    with pytest.raises(ScheduleError, match="T0: rfactor needs a tensor defined by a reduction"):
        fd.sched.rfactor(t0, [0])
    assert state(t1) == s
    assert [c.name for c in fd.sched.calls] == ["split"]


# ---- refusals ------------------------------------------------------------------------------------

def pointwise_chain():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.ops.exp(t0)
        t2 = fd.ops.sum(t1, dims=[1])
        fd.add_output(t2)
    return fd, t0, t1, t2


def test_inline_beyond_the_legal_position_is_refused():
    fd, t0, t1, t2 = pointwise_chain()
    fd.sched.split(t1, 1, 4)  # t2 not split: T1's second loop id no longer maps
    s1, s2 = state(t1), state(t2)
    with pytest.raises(ScheduleError, match="T1: cannot inline at position 2; the largest legal position is 1"):
        t1.inline_at(2)
    assert (state(t1), state(t2)) == (s1, s2)
    t1.inline_at(3, best_effort=True)
    assert t1.compute_at_pos == 1 and t2.max_producer_pos == 1
    with pytest.raises(ScheduleError, match="T1: cannot split axis 0 inside the inlined positions"):
        fd.sched.split(t1, 0, 2)
    with pytest.raises(ScheduleError, match="T2: reorder moves axes inside the inlined positions"):
        fd.sched.reorder(t2, {0: 1})
    with pytest.raises(ScheduleError, match="T1: transform_like must come before inlining"):
        fd.sched.transform_like(t2)
    assert (t1.compute_at_pos, t2.max_producer_pos) == (1, 1)


def test_reduction_axis_ends_the_inline_position():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.ops.sum(t0, dims=[1])
        t2 = fd.ops.broadcast(t1, [False, True])
        t3 = fd.ops.add(t0, t2)
        fd.add_output(t3)
    fd.sched.inline_most()
    assert t1.compute_at_pos == 1
    with pytest.raises(ScheduleError, match="largest legal position is 1"):
        t1.inline_at(2)


def test_merge_of_reduction_and_iteration_is_refused():
    fd, t0, t1, t2 = pointwise_chain()
    s = state(t2)
    with pytest.raises(ScheduleError, match="T2: cannot merge iS.* and rS.*: iteration and reduction"):
        fd.sched.merge(t2, 0)
    assert state(t2) == s


def test_merge_of_reduction_and_split_broadcast_piece_is_refused():
    # fuzz schedule-3-5028: bS{2}, the overhang of bS{1} split by 2, merged into the
    # reduction axis made the reduction count every element twice.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        t1 = fd.ops.sum(t0, dims=[1])
        fd.add_output(t1)
    fd.sched.split(t1, 0, 2)
    s = state(t1)
    with pytest.raises(ScheduleError, match=r"T1: loop domain is invalid: merge of bS\d+\{2\} and rS\d+\{i\d+\} "
                                            "mixes a reduction axis with a broadcast axis of 2 iterations"):
        fd.sched.merge(t1, 1)
    assert state(t1) == s
    fd.sched.merge(t1, 0)  # the pieces together are still a broadcast: allowed
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        t1 = fd.ops.sum(t0, dims=[1])
        fd.add_output(t1)
    fd.sched.merge(t1, 0)  # bS{1} iterates once: merging it into the reduction is harmless
    assert t1.domain.loop[0].is_reduction


def test_inline_keeps_a_reduction_and_its_reader_out_of_one_loop():
    # fuzz schedule-3-5447: the cached input, inlined into both the min and the add that
    # reads the min, put the add inside the min's reduction loop.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1])
        t1 = fd.ops.min(t0, dims=[0])
        t2 = fd.ops.add(t0, t1)
        fd.add_output(t2)
    c = fd.sched.cache_after(t0)
    fd.sched.inline_most()
    assert c.compute_at_pos == 0
    with pytest.raises(ScheduleError, match=r"T\d+: cannot inline at position 1; the largest legal position is 0 "
                                            r"\(T\d+ reads the reduction T1 inside the loop over its reduction axis"):
        c.inline_at(1)
    # A row-wise normalization still shares the row loop, which the reduction does not run.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.ops.sum(t0, dims=[1])
        t2 = fd.ops.broadcast(t1, [False, True])
        t3 = fd.ops.add(t0, t2)
        fd.add_output(t3)
    c = fd.sched.cache_after(t0)
    fd.sched.inline_most()
    assert c.compute_at_pos == 1


def test_set_allocation_domain_validates_and_changes_nothing_when_refused():
    fd, t0, t1, t2 = pointwise_chain()
    a, b = t1.domain.logical
    s = state(t1)
    with pytest.raises(ScheduleError, match="T1: allocation domain is invalid: .* appears twice"):
        t1.set_allocation_domain([a, a])
    with pytest.raises(ScheduleError, match="T1: allocation domain is invalid: iS.* is derived from the logical domain but not covered"):
        t1.set_allocation_domain([a])
    with pytest.raises(ScheduleError, match="T1: allocation domain is invalid: iS0.* does not derive"):
        t1.set_allocation_domain([t0.domain.logical[0], b])
    with pytest.raises(ScheduleError, match="T1: contiguity has 1 entries for 2 axes"):
        t1.set_allocation_domain([b, a], [True])
    assert state(t1) == s
    t1.set_allocation_domain([b, a], [True, False])
    assert t1.domain.allocation == [b, a]
    # Allocation in split ids: derived from the logical domain, so accepted.
    t1.split(0, 2)
    t1.set_allocation_domain(t1.domain.loop[::-1], True)
    verify(t1)
    fd.sched.set_allocation_as_loop(t1)
    assert t1.domain.allocation == t1.domain.loop


def test_verifier_names_the_tensor_with_a_broken_loop():
    fd, t0, t1, t2 = pointwise_chain()
    a, b = t1.domain.logical
    t1.domain.loop = [a, a]
    with pytest.raises(ScheduleError, match="T1: loop domain is invalid: iS.* appears twice"):
        verify(t1)
    t1.domain.loop = [a, t0.domain.logical[1]]
    with pytest.raises(ScheduleError, match="T1: loop domain is invalid"):
        verify_fusion(fd.fusion)
    t1.domain.loop = [a, b]
    t1.compute_at_pos = 2  # a legal position, but T2's produce_pos was not raised with it
    verify(t1)
    with pytest.raises(ScheduleError, match=r"T2: produce_pos 0 does not match its producers' ca_pos \(max 2\)"):
        verify(t2)
    t2.max_producer_pos = 2
    t1.domain.loop = [b, a]  # no longer position for position with T2's loop
    with pytest.raises(ScheduleError, match="T1: ca_pos 2 is illegal; .* only up to position 0"):
        verify(t1)


def test_compute_at_replays_the_consumer():
    fd, t0, t1, t2 = pointwise_chain()
    t2.split(1, 8).split(0, 2)
    t1.compute_at(t2, 2)
    assert [str(i.extent.inline()) for i in t1.domain.loop] == [
        str(i.extent.inline()) for i in t2.domain.loop]
    assert t1.compute_at_pos == 2 and t2.max_producer_pos == 2
    x = torch.randn(4, 20)
    torch.testing.assert_close(fd.execute([x])[0], x.exp().sum(1))


def test_parallelize_like_follows_mapped_loops():
    fd, t0, t1, t2 = pointwise_chain()
    fd.sched.split(t2, 1, 32)
    fd.sched.transform_like(t2)
    fd.sched.parallelize(t2, 0, ParallelType.grid_x)
    fd.sched.parallelize(t2, 2, ParallelType.block_x)
    fd.sched.parallelize_like(t2, selected_parallel_types=[ParallelType.grid_x])
    assert [i.parallel_type for i in t1.domain.loop] == [
        ParallelType.grid_x, ParallelType.serial, ParallelType.serial]
    fd.sched.parallelize_like(t2, selected_tensors=[t1])
    assert str(t1).startswith("T1_l_float[iblockIdx.x")
    assert t1.domain.loop[2].parallel_type == ParallelType.block_x
    assert t0.domain.loop[2].parallel_type == ParallelType.serial  # not selected


# ---- logical map ------------------------------------------------------------------------------

def names(m):
    return {str(p): str(c) for p, c in m.items()}


def test_logical_map_seed001_rules():
    fd, t0 = seed001()
    tvs = {t.short_name: t for t in fd.fusion.tensors()}
    pm = pairwise_logical_map
    # squeeze: the squeezed bS0 is unmapped
    assert names(pm(t0, tvs["T1"])) == {"iS1{4096}": "iS3{4096}", "iS2{4096}": "iS4{4096}"}
    # reduction: the reduced axis maps to the consumer's reduction id
    assert names(pm(tvs["T1"], tvs["T2"])) == {"iS3{4096}": "iS5{4096}", "iS4{4096}": "rS6{4096}"}
    # broadcast: the producer's reduction id is not seen; new broadcast axes unmapped
    assert names(pm(tvs["T2"], tvs["T3"])) == {"iS5{4096}": "iS8{4096}"}
    # pointwise: broadcast maps to concrete unless asked not to
    assert names(pm(tvs["T3"], tvs["T4"])) == {
        "bS7{1}": "bS10{1}", "iS8{4096}": "iS11{4096}", "bS9{1}": "iS12{4096}"}
    assert names(pm(tvs["T3"], tvs["T4"], map_broadcast=False)) == {
        "bS7{1}": "bS10{1}", "iS8{4096}": "iS11{4096}"}
    # not a producer of that consumer
    assert pm(t0, tvs["T2"]) == {}
    edges = [(p.short_name, c.short_name) for p, c, _ in tensor_edges(fd.fusion)]
    assert edges == [("T0", "T1"), ("T1", "T2"), ("T2", "T3"), ("T0", "T4"), ("T3", "T4"),
                     ("T4", "T5"), ("T5", "T6")]


def test_logical_map_shape_and_indexing_ops():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1, -1])
        p = fd.ops.permute(a, [2, 0, 1])
        s = fd.ops.slice(a, [0, 0, 1], [2, 3, 4])
        c = fd.ops.cat([a, a], dim=1)
        idx = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        sel = fd.ops.index_select(a, idx, 1)
        one = fd.ops.select(a, 0, 2)
    pm = pairwise_logical_map
    x0, x1, x2 = a.domain.logical
    # permute maps through the consumer's root; the root is in input order
    assert [pm(a, p)[x] for x in (x0, x1, x2)] == p.domain.root
    assert sorted(pm(a, p).values(), key=lambda i: i.name) == sorted(p.domain.logical, key=lambda i: i.name)
    assert list(pm(a, s).values()) == s.domain.root
    # cat: each padded input shares every axis with the output
    pads = c.definition.inputs
    assert all(len(pm(q, c)) == 3 for q in pads)
    m = pm(a, sel)
    assert set(m) == {x0, x2}
    # The index reaches the op broadcast to the table's rank: its axis maps to `dim`, its
    # broadcasts to the other axes.
    bidx = sel.definition.inputs[1]
    assert pm(idx, bidx) == {idx.domain.logical[0]: bidx.domain.logical[1]}
    assert pm(bidx, sel) == dict(zip(bidx.domain.logical, sel.domain.logical))
    assert set(pm(a, one)) == {x0, x1}


def test_logical_map_matmul_and_linear():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1, -1])  # [B, M, K]
        b = fd.define_tensor(shape=[-1, -1])      # [K, N]
        mm = fd.ops.matmul(a, b)
        w = fd.define_tensor(shape=[-1, -1])      # [N, K]
        bias = fd.define_tensor(shape=[-1])
        lin = fd.ops.linear(a, w, bias)
    pm = pairwise_logical_map
    ab, am, ak = a.domain.logical
    ob, om, on, ok = mm.domain.logical
    assert pm(a, mm) == {ab: ob, am: om, ak: ok}
    assert pm(b, mm) == {b.domain.logical[0]: ok, b.domain.logical[1]: on}
    lo = lin.domain.logical
    assert pm(a, lin)[ab] is lo[0] and pm(a, lin)[am] is lo[1]
    assert pm(w, lin)[w.domain.logical[0]] is lo[2]
    assert pm(bias, lin) == {bias.domain.logical[0]: lo[2]}


def test_unknown_ops_map_nothing():
    with FusionDefinition() as fd:
        f = fd.ops.full([2, 3], 1.0, DataType.Float)
        fd.add_output(f)
    assert list(tensor_edges(fd.fusion)) == []


# ---- fd.sched records calls as given ------------------------------------------------------------

def test_sched_records_calls_and_not_refusals():
    fd, t0, t1, t2 = pointwise_chain()
    fd.sched.split(t2, 1, 4)
    rf = fd.sched.reduction_factor(t2, [1])
    c = fd.sched.cache_after(t0, cache_op=CacheOp.AllLevels)
    fd.sched.transform_like(rf, [t1, c])
    fd.sched.parallelize(rf, 0, ParallelType.grid_x)
    fd.sched.parallelize_like(rf, pos=1)
    with pytest.raises(ScheduleError):
        fd.sched.inline_at(rf, 3)
    fd.sched.inline_at(rf, 2, best_effort=True)
    fd.sched.inline_most([t2])
    calls = [(k.name, k.args, k.kwargs) for k in fd.sched.calls]
    assert calls == [
        ("split", (t2, 1, 4), {"inner_split": True}),
        ("reduction_factor", (t2, [1]), {}),
        ("cache_after", (t0,), {"cache_op": CacheOp.AllLevels}),
        ("transform_like", (rf, [t1, c]), {}),
        ("parallelize", (rf, 0, ParallelType.grid_x), {}),
        ("parallelize_like", (rf,), {"pos": 1}),
        ("inline_at", (rf,), {"pos": 2, "best_effort": True}),
        ("inline_most", ([t2],), {}),
    ]
    assert fd.sched.is_reduction(t2) and fd.sched.is_reduction(rf) and not fd.sched.is_reduction(t1)
    assert fd.sched.to_string(rf) == transforms_block(rf)
    assert fd.sched.user_schedule_ir() == str(fd.fusion)
    assert rf in fd.sched.tensors() and c in fd.sched.tensors()
    x = torch.randn(3, 9)
    torch.testing.assert_close(fd.execute([x])[0], x.exp().sum(1))


def test_verifier_checks_logical_against_root():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.ops.sum(t0, dims=[1])
        fd.add_output(t1)
    fd.sched.split(t1, 1, 4)
    rf = fd.sched.rfactor(t1, [1])
    verify(rf)
    rf.domain.logical = rf.domain.logical[:2]  # drops the inner split output
    with pytest.raises(ScheduleError, match="T2: logical domain is invalid against the root: iS.* not covered"):
        verify(rf)


def test_no_cache_between_a_pad_and_its_cat():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 3])
        t1 = fd.ops.cat([t0, t0], dim=1)
        fd.add_output(t1)
    padded = t1.definition.inputs[0]
    listing = str(fd.fusion)
    with pytest.raises(ScheduleError, match="cache_after between a pad and the cat"):
        fd.sched.cache_after(padded)
    with pytest.raises(ScheduleError, match="cache_before between a pad and the cat"):
        fd.sched.cache_before(padded)
    assert str(fd.fusion) == listing
    x = torch.randn(2, 3)
    torch.testing.assert_close(fd.execute([x])[0], torch.cat([x, x], 1))


def test_transform_like_reaches_a_reduction_through_x_minus_mean_and_inline_most_keeps_x_apart():
    """nvFuser's schedule test test_var_mean_user_schedule, reduced: the mean's keepdim axis is
    split; transform_like (the max-info tree) carries the split to the reduction through
    x - mean (not through the reduction's broadcast, which has none of it), and inline_most
    keeps x, read again after the reduction, out of the loops the reduction closes."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.ops.sum(x, dims=[-1], keepdim=True)
        mean = fd.ops.div(s, fd.define_scalar(64, dtype=DataType.Int))
        fd.add_output(fd.ops.sub(x, mean))
    red = next(t for t in fd.sched.tensors() if fd.sched.is_reduction(t))
    c0 = fd.sched.cache_after(x)
    fd.sched.split(mean, -1, 16)
    fd.sched.transform_like(mean)
    assert red.nloop == 3 and red.domain.loop[1].is_reduction and red.domain.loop[2].is_reduction
    fd.sched.rfactor(red, [-1])
    fd.sched.inline_most()
    assert c0.compute_at_pos == 1  # before the split rows the reduction closes
    xs = [torch.randn(5, 64)]
    (out,) = fd.execute(xs)
    torch.testing.assert_close(out, xs[0] - xs[0].mean(-1, keepdim=True))


# ---- loop-only broadcasts ------------------------------------------------------------------------

def test_broadcast_loop_inserts_a_broadcast_in_the_loop_domain_only():
    fd, t0, t1, t2 = pointwise_chain()
    t1.broadcast_loop(1, 4)
    b = t1.axis(1)
    assert str(t1) == f"T1_l_float[iS2{{i0}}, bS{b.name}{{4}}, iS3{{i2}}]"
    assert transforms_block(t1).endswith(f" logical domain : (iS2{{i0}}, iS3{{i2}})\n contiguity: t t\n"
                                         f" loop domain : (iS2{{i0}}, bS{b.name}{{4}}, iS3{{i2}})\n")
    assert t1.domain.loop_only == [b] and b.definition is None
    verify_fusion(fd.fusion)
    x = torch.randn(3, 5)
    torch.testing.assert_close(fd.execute([x])[0], x.exp().sum(1))
    # A clone has its own copy, still listed as loop-only.
    clone, vmap = fd.fusion.clone()
    c1 = vmap[t1]
    assert str(clone) == str(fd.fusion)
    assert c1.domain.loop_only == [c1.axis(1)] and c1.axis(1) is not b
    verify_fusion(clone)


def test_broadcast_loop_refusals_leave_the_tensor_unchanged():
    fd, t0, t1, t2 = pointwise_chain()
    t1.inline_at(1)
    s = state(t1)
    with pytest.raises(ScheduleError, match="T1: broadcast position 4 is outside 0..2"):
        t1.broadcast_loop(4)
    with pytest.raises(ScheduleError, match="T1: broadcast extent must be a positive int, got 0"):
        t1.broadcast_loop(2, 0)
    with pytest.raises(ScheduleError, match="T1: cannot insert a broadcast at axis 0 inside the inlined positions"):
        t1.broadcast_loop(0)
    assert state(t1) == s and t1.domain.loop_only == []


def test_verifier_accepts_only_the_listed_loop_only_broadcasts():
    from engine.ir.iterdomain import IterDomain, IterType

    fd, t0, t1, t2 = pointwise_chain()
    stray = IterDomain(fd.fusion, 1, IterType.Broadcast)
    t1.domain.loop.insert(0, stray)
    with pytest.raises(ScheduleError, match=r"T1: loop domain is invalid: bS\d+\{1\} does not derive from the logical"):
        verify(t1)
    t1.domain.loop_only.append(stray)
    verify(t1)
    t1.domain.loop_only.append(t1.domain.logical[0])
    with pytest.raises(ScheduleError, match=r"T1: loop domain is invalid: iS2\{i0\} is listed as a loop-only broadcast"):
        verify(t1)
    # A loop-only broadcast may be merged away like any loop id: it holds no element.
    t1.domain.loop_only.pop()
    t1.merge(0)
    verify(t1)


def _bias_times_promoted_loop():
    """y = x * broadcast(-w, [True, False, True]) with y's last two axes merged: the merge
    in the broadcast's loop runs w's axis times x's last one, which w's own loop lacks,
    after a broadcast axis (the first) that w does not have."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        r = fd.ops.neg(w)
        y = fd.ops.mul(x, fd.ops.broadcast(r, [True, False, True]))
        fd.add_output(y)
    fd.sched.merge(y, 1)
    fd.sched.split(y, 1, 32)
    fd.sched.parallelize(y, 0, ParallelType.grid_x)
    fd.sched.parallelize(y, 2, ParallelType.block_x)
    fd.sched.transform_like(y)
    fd.sched.parallelize_like(y)
    return fd, r


def test_inline_most_gives_a_producer_the_broadcast_axes_its_consumer_has():
    """Without its loop-only broadcast, -w stayed at ca_pos 0 (its loop does not pair with
    the broadcast's first, broadcast, loop) and was computed by threads other than those
    reading it: the kernel was refused."""

    from engine.compile import compile_fusion
    from engine.reference import evaluate

    fd, r = _bias_times_promoted_loop()
    fd.sched.inline_most()
    b = r.axis(0)
    assert r.domain.loop_only == [b] and b.parallel_type == ParallelType.grid_x
    assert r.compute_at_pos == 3
    verify_fusion(fd.fusion)
    require_gxx()
    xs = [torch.randn(3, 4, 40), torch.randn(4)]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["user"]
    assert torch.equal(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0])
