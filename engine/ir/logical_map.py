"""Which IterDomains of a producer and a consumer are "the same axis" across one Expr.

This is nvFuser's PairwiseLogicalDomainMap, reduced to the ops this engine has. The
map goes from the producer's logical domain to the consumer's root domain (its
logical domain when it has no root), because the consumer's root is what the op
itself produces: a permute, reshape, slice or pad relates the consumer's root to
the producer and then transforms root into logical.

Rules, per op (unmapped axes are simply absent from the map):

- Reduction axes of the producer never map: the consumer does not see them.
- Pointwise ops, casts, set/segment_set, expand, reductions (the consumer's reduced
  axes map to the producer axes they reduce), Welford, permute, reshape, slice and
  pad: positional between the producer's non-reduction logical axes and the
  consumer's root.
- broadcast: the consumer's new broadcast axes (flags true) are unmapped.
- squeeze: the producer's squeezed axes (flags true) are unmapped.
- cat: every axis but the concatenated one, which maps only where its extent provably
  equals the output's: the cat builder pads each input to the output's extent first
  (as nvFuser), and then the padded inputs do share the output's loop; an unpadded
  input would not, and mapping it would claim a loop it does not have.
- select: the selected axis of the input is unmapped; the index is a scalar.
- index_select: the input maps on every axis but `dim`; the index tensor, broadcast to
  the input's rank by the op's builder (its own axis at `dim`), maps positionally.
- gather: the index tensor maps positionally; the looked-up input maps on axes other
  than `dim` whose extents are provably equal.
- matmul / linear: batch axes (right-aligned, as torch broadcasts them), M and N map
  to the output; K maps to the output's reduction axis when it has one.
- block quantization: the values map positionally to the quantized output, and to
  the block scales on every axis but the last (K against K / block_size).
- Any other op (layout ops, factories): nothing maps. Being silent is
  safe: an unmapped axis only stops inlining and transform propagation.

Broadcast against concrete: with `map_broadcast=True` (the default, as nvFuser) a
broadcast axis maps to the concrete axis it meets (a `b` producer axis to an `i`
consumer axis and the reverse). That is what lets a broadcast producer be inlined
into its consumer's loop. Pass `map_broadcast=False` for analyses that need equal
extents on both sides (e.g. vectorization); such pairs are then dropped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, Resize
from engine.ir.quant_exprs import BlockQuantizationOp, PreprocessGroupedMatmulInputSf
from engine.ir.scalar import same_scalar
from engine.ir.tensorview_base import TensorViewBase

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView

IdMap = dict[IterDomain, IterDomain]
T = TypeVar("T")

_POSITIONAL = (
    ex.UnaryOp, ex.BinaryOp, ex.TernaryOp, ex.ReductionOp, ex.WelfordOp, ex.ExpandOp,
    ex.LoadStoreOp, ex.ViewOp, ex.SliceOp, ex.PadOp,
)


def _no_red(ids: Sequence[IterDomain]) -> list[IterDomain]:
    return [i for i in ids if not i.is_reduction]


def _zip_map(p_ids: Sequence[IterDomain], c_ids: Sequence[IterDomain]) -> IdMap:
    # A rank mismatch means the op is not what the rule expects: map nothing rather
    # than pair the wrong axes.
    if len(p_ids) != len(c_ids):
        return {}
    return dict(zip(p_ids, c_ids))


def _right_aligned(p_ids: Sequence[IterDomain], c_ids: Sequence[IterDomain]) -> IdMap:
    if len(p_ids) > len(c_ids):
        return {}
    return dict(zip(p_ids, c_ids[len(c_ids) - len(p_ids):]))


def _matmul_map(role: int, p_ids: list[IterDomain], a_nd: int, b_nd: int,
                out_iter: list[IterDomain], out_red: list[IterDomain]) -> IdMap:
    """torch.matmul semantics. role 0 is `a`, role 1 is `b`."""
    k = out_red[0] if len(out_red) == 1 else None
    m: IdMap = {}
    if role == 0:
        if a_nd == 1:
            if k is not None:
                m[p_ids[0]] = k
            return m
        if b_nd == 1:  # [..., M, K] @ [K] -> [..., M]
            m.update(_right_aligned(p_ids[:-1], out_iter))
        else:  # [..., M, K] @ [..., K, N] -> [..., M, N]
            m.update(_right_aligned(p_ids[:-1], out_iter[:-1]))
        if k is not None:
            m[p_ids[-1]] = k
        return m
    if b_nd == 1:
        if k is not None:
            m[p_ids[0]] = k
        return m
    # b: [..., K, N]; its batch axes line up with the output's batch axes.
    n_batch_out = len(out_iter) - (1 if a_nd == 1 else 2)
    if n_batch_out < 0:
        return {}
    m.update(_right_aligned(p_ids[:-2], out_iter[:n_batch_out]))
    m[p_ids[-1]] = out_iter[-1]
    if k is not None:
        m[p_ids[-2]] = k
    return m


def _linear_map(role: int, p_ids: list[IterDomain], b_nd: int,
                out_iter: list[IterDomain], out_red: list[IterDomain]) -> IdMap:
    """out = a @ b.T + bias: a [..., K], b [N, K] or [K], bias [N]; a weight's leading axes
    ([E..., N, K], bias [E..., N]) lead the output: [E..., ..., N]."""
    k = out_red[0] if len(out_red) == 1 else None
    extra = max(0, b_nd - 2)
    m: IdMap = {}
    if role == 0:
        m.update(_zip_map(p_ids[:-1], out_iter[extra:extra + len(p_ids) - 1]))
        if k is not None and p_ids:
            m[p_ids[-1]] = k
    elif role == 1:
        if b_nd >= 2:
            m.update(_zip_map(p_ids[:extra], out_iter[:extra]))
            m[p_ids[-2]] = out_iter[-1]
            if k is not None:
                m[p_ids[-1]] = k
        elif k is not None and p_ids:
            m[p_ids[0]] = k
    elif role == 2 and p_ids and out_iter and len(p_ids) == extra + 1:
        m.update(_zip_map(p_ids[:extra], out_iter[:extra]))
        m[p_ids[-1]] = out_iter[-1]
    return m


def _expr_map(expr: Expr, role: int, producer: TensorView, consumer: TensorView) -> IdMap:
    p_ids = _no_red(producer.domain.logical)
    c_root = list(consumer.domain.maybe_root)
    if isinstance(expr, ex.BroadcastOp):
        return _zip_map(p_ids, [c for c, f in zip(c_root, expr.flags) if not f])
    if isinstance(expr, ex.SqueezeOp):
        return _zip_map([p for p, f in zip(p_ids, expr.flags) if not f], c_root)
    if isinstance(expr, ex.SelectOp):
        if role != 0:
            return {}
        return _zip_map([p for k, p in enumerate(p_ids) if k != expr.dim], c_root)
    if isinstance(expr, ex.IndexSelectOp):
        if role == 0:
            if len(p_ids) != len(c_root):
                return {}
            return {p: c for k, (p, c) in enumerate(zip(p_ids, c_root)) if k != expr.dim}
        # The index has the table's rank (broadcast to it by the op's builder, as
        # nvFuser's): its axis maps to `dim`, its broadcasts to the other axes.
        return _zip_map(p_ids, c_root)
    if isinstance(expr, ex.GatherOp):
        if role == 1:
            return _zip_map(p_ids, c_root)
        if len(p_ids) != len(c_root):
            return {}
        # take_along_axis (exact_sizes) requires the axes other than `dim` to match, so
        # they map even where a segment boundary gave them different symbolic extents
        # (nvFuser's PairwiseLogicalDomainMap maps them when exactSizes()); torch.gather's
        # index may be smaller than the lookup table, so only provably equal axes map.
        return {p: c for k, (p, c) in enumerate(zip(p_ids, c_root))
                if k != expr.dim and (expr.exact_sizes or same_scalar(p.extent, c.extent))}
    if isinstance(expr, ex.CatOp):
        if len(p_ids) != len(c_root):
            return {}
        return {p: c for k, (p, c) in enumerate(zip(p_ids, c_root))
                if k != expr.dim or same_scalar(p.extent, c.extent)}
    if isinstance(expr, (ex.MatmulOp, ex.LinearOp)):
        tvs = [v for v in expr.inputs if isinstance(v, TensorViewBase)]
        out_iter = _no_red(c_root)
        out_red = [c for c in c_root if c.is_reduction]
        if isinstance(expr, ex.MatmulOp):
            a_nd, b_nd = (len(_no_red(t.domain.logical)) for t in tvs[:2])
            return _matmul_map(role, p_ids, a_nd, b_nd, out_iter, out_red)
        b_nd = len(_no_red(tvs[1].domain.logical))
        return _linear_map(role, p_ids, b_nd, out_iter, out_red)
    if isinstance(expr, BlockQuantizationOp):
        # The values map positionally to the quantized output; to the block scales
        # every axis but the last (K against K / block_size), as nvFuser's
        # PairwiseLogicalDomainMap. The global scale is 0-d and maps nothing.
        if role != 0:
            return {}
        if consumer is expr.quantized:
            return _zip_map(p_ids, c_root)
        if consumer is expr.block_scales and len(p_ids) == len(c_root):
            return dict(zip(p_ids[:-1], c_root[:-1]))
        return {}
    if isinstance(expr, PreprocessGroupedMatmulInputSf):
        # The layout op moves scale (r, c) of its input to a computed place of its
        # output's (padded) allocation: logically the output is the input, as in
        # nvFuser's domain map, which maps the input and skips the offsets.
        return _zip_map(p_ids, c_root) if role == 0 else {}
    if isinstance(expr, _POSITIONAL):
        if isinstance(expr, (ex.PadOp, ex.SliceOp)) and role != 0:
            return {}
        return _zip_map(p_ids, c_root)
    return {}


# Maps that several fusions share, keyed by the domains they map (see DomainMaps).
DomainMaps = dict[tuple[Any, ...], IdMap]

# Per thread (a compile in a worker thread freezes its own fusion): (fusion, maps, facts,
# domain maps) while pairwise_maps_frozen(fusion) holds (see there).
_Frozen = tuple[Fusion, dict[Any, IdMap], dict[tuple[str, int], Any], DomainMaps | None]


class _State(threading.local):
    frozen: _Frozen | None = None


_state = _State()


def _current() -> _Frozen | None:
    return _state.frozen


@contextlib.contextmanager
def pairwise_maps_frozen(fusion: Fusion, domain_maps: DomainMaps | None = None) -> Iterator[None]:
    """Compute each pairwise map of `fusion`'s tensors once while it does not change: a
    scheduler's verdict is such a time (it never changes the fusion it judges; trial
    schedules work on copies, whose maps are not kept), and its checks walk every edge
    again and again (broadcast groups, inner dims, self mapping, alignment).

    `domain_maps`: maps kept across fusions that share their domains, keyed by the two
    domains, the producer's operand and the consumer's output position and the kind of map. The segmenter's cuts
    of one fusion without free symbols share the complete fusion's domains
    (segment.cut.shareable_domains) and copy its ops: an edge between two tensors whose
    domains are those of a complete fusion's edge is a copy of that edge, whose map
    (ids of those very domains) the other cuts then reuse. The caller keeps the dict no
    longer than those domains and ops stay as they are."""
    outer = _current()
    _state.frozen = (fusion, {}, {}, domain_maps)
    try:
        yield
    finally:
        _state.frozen = outer


def _shared_map(kind: str, producer: TensorView, consumer: TensorView, map_broadcast: bool,
                fresh: Callable[[TensorView, TensorView, bool], IdMap]) -> IdMap:
    """fresh(producer, consumer, map_broadcast), kept in the frozen fusion's maps and, for an
    edge of the op that defines the consumer, in the shared domain maps."""
    frozen = _current()
    assert frozen is not None
    key = (kind, producer, consumer, map_broadcast)
    got = frozen[1].get(key)
    if got is None:
        shared = frozen[3]
        expr = consumer.definition
        role = _role(expr, producer) if shared is not None and expr is not None else None
        if role is None:
            got = fresh(producer, consumer, map_broadcast)
        else:
            # The objects themselves key it: a domain held here is never freed meanwhile,
            # so no other domain can take its id.
            out = next(k for k, o in enumerate(expr.outputs) if o is consumer)
            dkey = (kind, producer.domain, consumer.domain, role, out, map_broadcast)
            got = shared.get(dkey)  # type: ignore[union-attr]
            if got is None:
                got = shared[dkey] = fresh(producer, consumer, map_broadcast)  # type: ignore[index]
        frozen[1][key] = got
    return got


def frozen_fact(fusion: Fusion, name: str, compute: Callable[[Fusion], T]) -> T:
    """compute(fusion), once per `name` while pairwise_maps_frozen(fusion) holds (and the
    fusion's version with it): the schedulers' verdicts on one fusion share checks (the
    resize and transpose schedulers both look for non-unique broadcasts and group inputs
    and outputs by inner dim; every scheduler asks the registry's common rules). Callers
    must not change what they get. Outside that scope, computed each time."""
    frozen = _current()
    if frozen is None or frozen[0] is not fusion:
        return compute(fusion)
    key = (name, fusion.version)
    facts = frozen[2]
    if key in facts:
        return facts[key]
    got = facts[key] = compute(fusion)
    return got


def pairwise_logical_map(producer: TensorView, consumer: TensorView, *,
                         map_broadcast: bool = True) -> IdMap:
    """Producer logical IterDomain -> consumer root IterDomain across the consumer's definition.

    Empty when `producer` is not an input of `consumer`'s definition or the op is unknown.
    """
    frozen = _current()
    if frozen is not None and consumer.fusion is frozen[0]:
        return dict(_shared_map("pairwise", producer, consumer, map_broadcast, _fresh_pairwise_map))
    return _fresh_pairwise_map(producer, consumer, map_broadcast)


def _fresh_pairwise_map(producer: TensorView, consumer: TensorView, map_broadcast: bool) -> IdMap:
    expr = consumer.definition
    if expr is None:
        return {}
    role = _role(expr, producer)
    if role is None:
        return {}
    if type(expr) in _PLAIN_POSITIONAL:
        m = _positional(producer, consumer)
    else:
        m = _expr_map(expr, role, producer, consumer)
    if not map_broadcast:
        m = {p: c for p, c in m.items() if p.is_broadcast == c.is_broadcast}
    return m


def _role(expr: Expr, producer: TensorView) -> int | None:
    """`producer`'s position among the tensor operands of `expr` (a scalar operand does
    not shift it), or None when it is no operand."""
    k = 0
    for v in expr.inputs:
        if v is producer:
            return k
        if isinstance(v, TensorViewBase):
            k += 1
    return None


def _positional(producer: TensorView, consumer: TensorView) -> IdMap:
    return _zip_map(_no_red(producer.domain.logical), consumer.domain.maybe_root)


# Ops that _expr_map maps positionally for every operand, by exact type: the pairwise map
# is asked for thousands of times per compile, mostly across these (a subclass of one,
# such as an rfactor reduction, still goes through _expr_map's own checks).
_PLAIN_POSITIONAL = frozenset({ex.UnaryOp, ex.BinaryOp, ex.TernaryOp, ex.ReductionOp, ex.ExpandOp,
                               ex.LoadStoreOp, ex.ViewOp})


def root_to_logical(tv: TensorView) -> IdMap:
    """Root ids that continue as one logical id: identical (permute) or through a Resize.

    A reshape's splits and merges are not one-to-one, so their root ids stop here;
    transform propagation crosses a reshape as a whole instead, from the full merge of
    one side's logical ids to the other's (engine.ir.transform_replay.linear_id).
    """
    dom = tv.domain
    logical = set(dom.logical)
    out: IdMap = {}
    for r in dom.maybe_root:
        if r in logical:
            out[r] = r
            continue
        uses = [u for u in r.uses if isinstance(u, Resize) and u.out in logical]
        if len(uses) == 1:
            out[r] = uses[0].out
    return out


def logical_map(producer: TensorView, consumer: TensorView, *, map_broadcast: bool = True) -> IdMap:
    """Producer logical -> consumer logical: the pairwise map followed through root->logical.
    Kept while pairwise_maps_frozen holds for the consumer's fusion, as pairwise maps are."""
    frozen = _current()
    if frozen is not None and consumer.fusion is frozen[0]:
        return dict(_shared_map("logical", producer, consumer, map_broadcast, _fresh_logical_map))
    return _fresh_logical_map(producer, consumer, map_broadcast)


def _fresh_logical_map(producer: TensorView, consumer: TensorView, map_broadcast: bool) -> IdMap:
    r2l = root_to_logical(consumer)
    pw = pairwise_logical_map(producer, consumer, map_broadcast=map_broadcast)
    return {p: r2l[c] for p, c in pw.items() if c in r2l}


# ---- walking the fusion's tensors ------------------------------------------------------------

def tensor_edges(fusion: Fusion) -> Iterator[tuple[TensorView, TensorView, Expr]]:
    """(producer, consumer, expr) for every tensor edge, in topological order of exprs."""
    for expr in fusion.exprs():
        producers = [v for v in expr.inputs if isinstance(v, TensorViewBase)]
        consumers = [v for v in expr.outputs if isinstance(v, TensorViewBase)]
        seen: set[int] = set()
        for p in producers:
            if id(p) in seen:
                continue
            seen.add(id(p))
            for c in consumers:
                yield p, c, expr


def consumers_of(tv: TensorView) -> list[TensorView]:
    """The tensors the live exprs reading `tv` compute, each once. Kept per tensor until the
    graph changes (the fusion's version, as its expr order is): every walk over producers
    and consumers asks, thousands of times per compile."""
    fusion = tv.fusion
    version = fusion.version
    cache = fusion.__dict__.get("_consumers")
    if cache is None or cache[0] != version:
        cache = fusion._consumers = (version, {})  # type: ignore[attr-defined]
    got = cache[1].get(tv)
    if got is None:
        got = cache[1][tv] = _fresh_consumers(tv)
    return list(got)


def _fresh_consumers(tv: TensorView) -> list[TensorView]:
    out: list[TensorView] = []
    for e in tv.fusion.uses_of(tv):
        for o in e.outputs:
            if isinstance(o, TensorViewBase) and o not in out:
                out.append(o)
    return out


def producers_of(tv: TensorView) -> list[TensorView]:
    e = tv.definition
    if e is None:
        return []
    out: list[TensorView] = []
    for v in e.inputs:
        if isinstance(v, TensorViewBase) and v not in out:
            out.append(v)
    return out
