"""Shape and indexing ops (ops/shape.py, ops/einsum.py, ops/indexing.py, movement.IndexPut)
against PyTorch, by finite differences, exactly for integer results, and error for error.

Each parity case draws its shapes and arguments from hypothesis and its values from a seeded
generator (``strategies.values``); inputs are C-ordered or transposed views. Scatter-like
cases without accumulation draw indices without duplicates (torch leaves the winner of
duplicate writes unspecified); accumulating ones draw duplicates on purpose.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import DEVICE, check_parity, to_torch
from tinygrad_tx.testing.strategies import non_contiguous, seeds, shapes, values
from tinygrad_tx import gradcheck
from tinygrad_tx.ops import indexing as I
from tinygrad_tx.ops import movement as M
from tinygrad_tx.ops import shape as S

DTYPES = pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])


def arr(shape, seed, layout=False, domain="real"):
    a = values(shape, seed, domain)
    return non_contiguous(a) if layout else a


def both(name):
    """The same call on our tensor and torch's: ``x.name(*args)``."""
    return lambda *args, **kw: (lambda t: getattr(t, name)(*args, **kw))


def weighted_cat(parts, lib):
    """Tuple outputs as one tensor: part i flattened and scaled by i + 1, so a gradient routed
    to the wrong part is caught."""
    return lib.cat([p.reshape(-1) * (i + 1) for i, p in enumerate(parts)])


def distinct_index(rng, x_shape, dim, index_shape):
    """An index for scatter along ``dim`` with no duplicates within each line along dim."""
    full = list(index_shape)
    full[dim] = x_shape[dim]
    perm = np.argsort(rng.random(full), axis=dim)
    return np.take(perm, np.arange(index_shape[dim]), axis=dim).astype(np.int64)


def sub_shape(draw, shape, dim, max_along=4, at_least_one=True):
    """A shape no larger than ``shape`` apart from ``dim`` (1..max_along there)."""
    lo = 1 if at_least_one else 0
    return tuple(draw(st.integers(lo, max_along)) if d == dim else draw(st.integers(lo, n))
                 for d, n in enumerate(shape))


# ============================================================================ parity cases
# name -> builder(draw, seed, layout) returning (ours_fn, torch_fn, inputs[, allow_zero_grad])

def case_tril_triu(draw, seed, layout):
    shape = draw(shapes(2, 4))
    k = draw(st.integers(-2, 2))
    name = draw(st.sampled_from(["tril", "triu"]))
    x = arr(shape, seed, layout)
    zero = (0,) if (name == "tril" and k < -shape[-2] + 1) or (name == "triu" and k > shape[-1] - 1) else ()
    if draw(st.booleans()):   # the top-level function or the method
        return (lambda t: getattr(tg, name)(t, k)), (lambda t: getattr(torch, name)(t, k)), [x], zero
    return both(name)(diagonal=k), both(name)(diagonal=k), [x], zero


def case_roll(draw, seed, layout):
    shape = draw(shapes(0, 4))
    x = arr(shape, seed, layout)
    if not shape or draw(st.booleans()):
        shifts = draw(st.integers(-7, 7))
        return both("roll")(shifts), both("roll")(shifts), [x]
    dims = draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=3))
    shifts = tuple(draw(st.integers(-7, 7)) for _ in dims)
    return both("roll")(shifts, tuple(dims)), both("roll")(shifts, tuple(dims)), [x]


def case_flip(draw, seed, layout):
    kind = draw(st.sampled_from(["flip", "fliplr", "flipud", "rot90"]))
    shape = draw(shapes({"flip": 0, "fliplr": 2, "flipud": 1, "rot90": 2}[kind], 4))
    x = arr(shape, seed, layout)
    if kind == "flip":
        dims = tuple(draw(st.lists(st.integers(0, max(len(shape) - 1, 0)), unique=True, max_size=len(shape))))
        return both("flip")(dims), both("flip")(dims), [x]
    if kind == "rot90":
        k = draw(st.integers(-3, 5))
        d0, d1 = draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=2, max_size=2,
                               unique_by=lambda d: d % len(shape)))
        return both("rot90")(k, (d0, d1)), both("rot90")(k, (d0, d1)), [x]
    return both(kind)(), both(kind)(), [x]


def case_diagonal(draw, seed, layout):
    kind = draw(st.sampled_from(["diagonal", "diag", "diag_embed"]))
    if kind == "diag":
        shape = draw(shapes(1, 2))
        k = draw(st.integers(-2, 2))
        x = arr(shape, seed, layout)
        zero = (0,) if len(shape) == 2 and not (-shape[0] < k < shape[1]) else ()
        return (lambda t: tg.diag(t, k)), (lambda t: torch.diag(t, k)), [x], zero
    if kind == "diag_embed":
        shape = draw(shapes(1, 3))
        n = len(shape) + 1
        d1, d2 = draw(st.lists(st.integers(-n, n - 1), min_size=2, max_size=2, unique_by=lambda d: d % n))
        k = draw(st.integers(-2, 2))
        return both("diag_embed")(k, d1, d2), both("diag_embed")(k, d1, d2), [arr(shape, seed, layout)]
    shape = draw(shapes(2, 4))
    n = len(shape)
    d1, d2 = draw(st.lists(st.integers(-n, n - 1), min_size=2, max_size=2, unique_by=lambda d: d % n))
    k = draw(st.integers(-2, 2))
    zero = (0,) if not (-shape[d1] < k < shape[d2]) else ()
    return both("diagonal")(k, d1, d2), both("diagonal")(k, d1, d2), [arr(shape, seed, layout)], zero


def case_repeat(draw, seed, layout):
    kind = draw(st.sampled_from(["repeat", "tile"]))
    shape = draw(shapes(0, 3, max_side=3))
    extra = draw(st.integers(0, 2))
    n = len(shape) + extra if kind == "repeat" else draw(st.integers(0, len(shape) + 1))
    sizes = tuple(draw(st.integers(1, 3)) for _ in range(n))
    x = arr(shape, seed, layout)
    return both(kind)(sizes), both(kind)(sizes), [x]


def case_repeat_interleave(draw, seed, layout):
    shape = draw(shapes(0, 3, max_side=4))
    x = arr(shape, seed, layout)
    dim = None if not shape or draw(st.booleans()) else draw(st.integers(-len(shape), len(shape) - 1))
    n = x.size if dim is None else shape[dim]
    if draw(st.booleans()):
        reps = draw(st.integers(1, 3))
        return both("repeat_interleave")(reps, dim), both("repeat_interleave")(reps, dim), [x]
    reps = np.random.default_rng(seed).integers(0, 4, n)
    reps[0] = max(reps[0], 1)   # never an empty output
    return (lambda t, r: t.repeat_interleave(r, dim)), (lambda t, r: t.repeat_interleave(r, dim)), [x, reps]


def case_unfold(draw, seed, layout):
    shape = draw(shapes(0, 3, max_side=6))
    x = arr(shape, seed, layout)
    d = draw(st.integers(-max(len(shape), 1), max(len(shape), 1) - 1))
    n = shape[d] if shape else 1
    size, step = draw(st.integers(1, n)), draw(st.integers(1, 3))
    return both("unfold")(d, size, step), both("unfold")(d, size, step), [x]


def case_views(draw, seed, layout):
    kind = draw(st.sampled_from(["unflatten", "view_as", "reshape_as", "movedim", "moveaxis", "swapdims",
                                 "t", "ravel", "atleast_1d", "atleast_2d", "atleast_3d"]))
    shape = draw(shapes(0 if kind in ("ravel", "t") or kind.startswith("atleast") else 1, 4 if kind != "t" else 2))
    x = arr(shape, seed, layout)
    nd = len(shape)
    if kind == "unflatten":
        d = draw(st.integers(-nd, nd - 1))
        sizes = (1, shape[d]) if draw(st.booleans()) else (shape[d], -1)
        return both(kind)(d, sizes), both(kind)(d, sizes), [x]
    if kind in ("view_as", "reshape_as"):
        other = np.zeros(tuple(reversed(shape)))
        return (lambda t: getattr(t, kind)(tg.Tensor(other))), (lambda t: getattr(t, kind)(torch.tensor(other, device=DEVICE))), [x]
    if kind in ("movedim", "moveaxis"):
        src = draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd, unique_by=lambda d: d % nd))
        dst = draw(st.lists(st.integers(-nd, nd - 1), min_size=len(src), max_size=len(src), unique_by=lambda d: d % nd))
        return (lambda t: tg.movedim(t, src, dst)), (lambda t: torch.movedim(t, src, dst)), [x]
    if kind == "swapdims":
        a, b = draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))
        return both(kind)(a, b), both(kind)(a, b), [x]
    if kind.startswith("atleast"):
        return getattr(tg, kind), getattr(torch, kind), [x]
    return both(kind)(), both(kind)(), [x]


def case_splits(draw, seed, layout):
    kind = draw(st.sampled_from(["unbind", "tensor_split", "hsplit", "vsplit", "dsplit"]))
    nmin = {"unbind": 1, "tensor_split": 1, "hsplit": 1, "vsplit": 2, "dsplit": 3}[kind]
    shape = draw(shapes(nmin, 3 if kind != "dsplit" else 3, max_side=5))
    x = arr(shape, seed, layout)
    if kind == "unbind":
        d = draw(st.integers(-len(shape), len(shape) - 1))
        return (lambda t: weighted_cat(t.unbind(d), tg)), (lambda t: weighted_cat(t.unbind(d), torch)), [x]
    d = {"tensor_split": draw(st.integers(0, len(shape) - 1)), "hsplit": 0 if len(shape) == 1 else 1,
         "vsplit": 0, "dsplit": 2}[kind]
    n = shape[d]
    if draw(st.booleans()):
        divisors = [s for s in range(1, n + 1) if n % s == 0] if kind != "tensor_split" else list(range(1, n + 2))
        spec = draw(st.sampled_from(divisors))
    else:
        spec = sorted(draw(st.lists(st.integers(0, n + 1), max_size=3)))
    args = (spec, d) if kind == "tensor_split" else (spec,)
    return ((lambda t: weighted_cat(getattr(t, kind)(*args), tg)),
            (lambda t: weighted_cat(getattr(t, kind)(*args), torch)), [x])


def case_grids(draw, seed, layout):
    if draw(st.booleans()):
        sizes = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))
        inputs = [arr((n,) if n else (), seed + i) for i, n in enumerate(sizes)]
        indexing = draw(st.sampled_from(["ij", "xy"]))
        return ((lambda *ts: weighted_cat(tg.meshgrid(*ts, indexing=indexing), tg)),
                (lambda *ts: weighted_cat(torch.meshgrid(*ts, indexing=indexing), torch)), inputs)
    from hypothesis.extra.numpy import mutually_broadcastable_shapes
    sh = draw(mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=4)).input_shapes
    inputs = [arr(s, seed + i, layout) for i, s in enumerate(sh)]
    return ((lambda *ts: weighted_cat(tg.broadcast_tensors(*ts), tg)),
            (lambda *ts: weighted_cat(torch.broadcast_tensors(*ts), torch)), inputs)


EINSUM = {   # equation -> shapes of the operands, from a size per subscript
    "ij,jk->ik": "ij,jk", "bij,bjk->bik": "bij,bjk", "bhqd,bhkd->bhqk": "bhqd,bhkd",
    "ij,jk": "ij,jk", "ii->i": "ii", "ii": "ii", "iij->j": "iij", "ij->": "ij", "ij->ji": "ij",
    "i,i->": "i,i", "i,j->ij": "i,j", "bn,anm,bm->ba": "bn,anm,bm", "ijk,kj->i": "ijk,kj",
    "...ij,...jk->...ik": "aij,jk", "...i,i": "bai,i", "b...,b->...": "bcd,b", "i...->...": "ia",
    "ij,ij->ij": "ij,ij", "Ab,bC->AC": "Ab,bC", "ji,ik,kj": "ji,ik,kj",
}


def case_einsum(draw, seed, layout):
    eq = draw(st.sampled_from(sorted(EINSUM)))
    size = {c: draw(st.integers(1, 4)) for c in set(EINSUM[eq]) - {","}}
    inputs = [arr(tuple(size[c] for c in term), seed + i, layout) for i, term in enumerate(EINSUM[eq].split(","))]
    return (lambda *ts: tg.einsum(eq, *ts)), (lambda *ts: torch.einsum(eq, *ts)), inputs


def case_gather(draw, seed, layout):
    shape = draw(shapes(1, 3, max_side=4))
    d = draw(st.integers(-len(shape), len(shape) - 1))
    ishape = sub_shape(draw, shape, d % len(shape))
    idx = np.random.default_rng(seed).integers(0, shape[d], ishape)   # repeats on purpose
    zero = (0,)   # an index may miss every element
    return (lambda t, i: t.gather(d, i)), (lambda t, i: t.gather(d, i)), [arr(shape, seed, layout), idx], zero


def case_scatter(draw, seed, layout):
    kind = draw(st.sampled_from(["src", "value", "add", "reduce"]))
    shape = draw(shapes(1, 3, max_side=4))
    d = draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(seed)
    x = arr(shape, seed, layout)
    if kind in ("src", "value"):
        ishape = sub_shape(draw, shape, d, max_along=shape[d])
        idx = distinct_index(rng, shape, d, ishape)
    else:
        ishape = sub_shape(draw, shape, d)
        idx = rng.integers(0, shape[d], ishape)
    src = arr(ishape, seed + 1, layout)   # torch's backward rejects a src larger than index (see below)
    if kind == "value":
        v = draw(st.floats(-2, 2))
        return (lambda t, i: t.scatter(d, i, v)), (lambda t, i: t.scatter(d, i, v)), [x, idx], (0,)
    if kind == "src":
        return ((lambda t, i, s: t.scatter(d, i, s)), (lambda t, i, s: t.scatter(d, i, s)), [x, idx, src], (0,))
    if kind == "add":
        return (lambda t, i, s: t.scatter_add(d, i, s)), (lambda t, i, s: t.scatter_add(d, i, s)), [x, idx, src]
    reduce = draw(st.sampled_from(["sum", "prod", "mean", "amax", "amin"]))
    include_self = draw(st.booleans())
    f = lambda t, i, s: t.scatter_reduce(d, i, s, reduce, include_self=include_self)  # noqa: E731
    return f, f, [x, idx, src], (0, 2)


def case_index_along(draw, seed, layout):
    kind = draw(st.sampled_from(["index_select", "index_add", "index_copy", "index_fill", "index_fill_tensor"]))
    shape = draw(shapes(1, 3, max_side=4))
    d = draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(seed)
    x = arr(shape, seed, layout)
    n = shape[d]
    if kind in ("index_copy",):
        idx = rng.permutation(n)[:draw(st.integers(1, n))]
    else:
        idx = rng.integers(0, n, draw(st.integers(1, 5)))
    if kind == "index_select":
        return (lambda t, i: t.index_select(d, i)), (lambda t, i: t.index_select(d, i)), [x, idx], (0,)
    if kind.startswith("index_fill"):
        if kind == "index_fill":
            return (lambda t, i: t.index_fill(d, i, -1.5)), (lambda t, i: t.index_fill(d, i, -1.5)), [x, idx], (0,)
        return (lambda t, i, v: t.index_fill(d, i, v)), (lambda t, i, v: t.index_fill(d, i, v)), \
            [x, idx, arr((), seed + 2)], (0,)
    src_shape = list(shape)
    src_shape[d] = idx.size
    src = arr(tuple(src_shape), seed + 1, layout)
    if kind == "index_add":
        alpha = draw(st.sampled_from([1, 2.5, -1]))
        f = lambda t, i, s: t.index_add(d, i, s, alpha=alpha)  # noqa: E731
        return f, f, [x, idx, src]
    return (lambda t, i, s: t.index_copy(d, i, s)), (lambda t, i, s: t.index_copy(d, i, s)), [x, idx, src], (0,)


def case_masks(draw, seed, layout):
    from hypothesis.extra.numpy import mutually_broadcastable_shapes
    xs, ms = draw(mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4)).input_shapes
    rng = np.random.default_rng(seed)
    x = arr(xs, seed, layout)
    mask = np.asarray(rng.random(ms) < 0.6)
    if draw(st.booleans()):
        return (lambda t, m: t.masked_select(m)), (lambda t, m: t.masked_select(m)), [x, mask], (0,)
    ms = np.broadcast_shapes(xs, ms)
    mask = np.broadcast_to(rng.random(ms) < 0.6, ms).copy()
    x = arr(ms, seed, layout)
    src = arr((int(mask.sum()) + draw(st.integers(0, 3)),), seed + 1)
    return ((lambda t, m, s: t.masked_scatter(m, s)), (lambda t, m, s: t.masked_scatter(m, s)),
            [x, mask, src], (0, 2))


def case_take(draw, seed, layout):
    shape = draw(shapes(0, 3))
    x = arr(shape, seed, layout)
    rng = np.random.default_rng(seed)
    if draw(st.booleans()):
        idx = rng.integers(-x.size, x.size, draw(shapes(0, 2)))
        return (lambda t, i: t.take(i)), (lambda t, i: t.take(i)), [x, idx], (0,)
    if not shape or draw(st.booleans()):
        idx = rng.integers(0, x.size, draw(shapes(0, 2))) if shape else np.zeros((), np.int64)
        return (lambda t, i: t.take_along_dim(i)), (lambda t, i: t.take_along_dim(i)), [x, idx], (0,)
    d = draw(st.integers(-len(shape), len(shape) - 1))
    ishape = tuple(draw(st.integers(1, 4)) if k == d % len(shape) else draw(st.sampled_from([1, n]))
                   for k, n in enumerate(shape))
    idx = rng.integers(0, shape[d], ishape)
    return (lambda t, i: t.take_along_dim(i, d)), (lambda t, i: torch.take_along_dim(t, i, d)), [x, idx], (0,)


def _put_index(draw, rng, shape, accumulate):
    """A Python index expression for x of ``shape``, and the torch equivalent."""
    kind = draw(st.sampled_from(["int", "slice", "ints", "mask", "tuple"]))
    n0 = shape[0]
    if kind == "int":
        i = draw(st.integers(-n0, n0 - 1))
        return i, i
    if kind == "slice":
        s = slice(draw(st.integers(0, n0)), None, draw(st.integers(1, 2)))
        return s, s
    if kind == "ints":
        idx = rng.integers(-n0, n0, draw(st.integers(1, 4))) if accumulate else rng.permutation(n0)[:draw(st.integers(1, n0))]
        return idx.tolist(), torch.tensor(idx, device=DEVICE)
    if kind == "mask":
        m = rng.random(shape[:1]) < 0.5
        return tg.Tensor(m), torch.tensor(m, device=DEVICE)
    if len(shape) < 2:
        return (Ellipsis, 0), (Ellipsis, 0)
    cols = [0, shape[1] - 1] if shape[1] > 1 else [0]   # no duplicates: torch's += is not accumulating
    return (slice(None), None, tg.Tensor(np.array(cols))), (slice(None), None, torch.tensor(cols, device=DEVICE))


def case_index_put(draw, seed, layout):
    shape = draw(shapes(1, 3, max_side=4))
    rng = np.random.default_rng(seed)
    accumulate = draw(st.booleans())
    ours_idx, torch_idx = _put_index(draw, rng, shape, accumulate)
    x = arr(shape, seed, layout)
    target = np.zeros(shape)[M._normalize_index(ours_idx)[0]].shape
    vshape = target[draw(st.integers(0, len(target))):] if draw(st.booleans()) else target
    v = arr(vshape, seed + 1)

    def torch_fn(t, vv):
        out = t.clone()
        idx = torch_idx if isinstance(torch_idx, tuple) else (torch_idx,)
        if any(isinstance(i, (int, slice)) or i is None or i is Ellipsis for i in idx):
            if accumulate:
                out[torch_idx] += vv
            else:
                out[torch_idx] = vv
            return out
        return torch.index_put(t, idx, vv, accumulate=accumulate)
    return (lambda t, vv: tg.index_put(t, ours_idx, vv, accumulate=accumulate)), torch_fn, [x, v], (0, 1)


CASES = {
    "tril/triu": case_tril_triu, "roll": case_roll, "flip": case_flip, "diagonal": case_diagonal,
    "repeat": case_repeat, "repeat_interleave": case_repeat_interleave, "unfold": case_unfold,
    "views": case_views, "splits": case_splits, "grids": case_grids, "einsum": case_einsum,
    "gather": case_gather, "scatter": case_scatter, "index_along": case_index_along,
    "masks": case_masks, "take": case_take, "index_put": case_index_put,
}


@DTYPES
@pytest.mark.parametrize("name", list(CASES))
@given(data=st.data(), seed=seeds, layout=st.booleans())
def test_parity(name, dtype, data, seed, layout):
    built = CASES[name](data.draw, seed, layout)
    ours, ref, inputs = built[:3]
    zero = built[3] if len(built) > 3 else ()
    check_parity(name, ours, ref, inputs, dtype, seed=seed, allow_zero_grad=zero)


# ============================================================================ finite differences (float64)

def _r(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


IDX = np.array([[0, 2, 2], [1, 1, 0]])          # repeats on purpose
GRADCHECK = {
    "tril": (lambda t: t.tril(-1), [_r((3, 4))]),
    "triu": (lambda t: tg.triu(t, 1), [_r((2, 3, 4))]),
    "roll": (lambda t: t.roll((1, -2), (0, 1)), [_r((3, 4))]),
    "roll flat": (lambda t: t.roll(5), [_r((3, 4))]),
    "flip": (lambda t: t.flip(0, 2), [_r((2, 3, 2))]),
    "rot90": (lambda t: t.rot90(3, (1, 0)), [_r((3, 4))]),
    "diagonal": (lambda t: t.diagonal(1, 2, 0), [_r((3, 2, 4))]),
    "diag vector": (lambda t: tg.diag(t, -1), [_r((4,))]),
    "diag_embed": (lambda t: t.diag_embed(1, 0, 2), [_r((2, 3))]),
    "repeat": (lambda t: t.repeat(2, 1, 3), [_r((2, 3))]),
    "repeat big": (lambda t: t.repeat(3, 2), [_r((7, 5))]),
    "repeat_interleave": (lambda t: t.repeat_interleave(tg.tensor([2, 0, 3]), 1), [_r((2, 3))]),
    "unfold": (lambda t: t.unfold(1, 3, 2), [_r((2, 7))]),
    "unfold overlapping": (lambda t: t.unfold(0, 4, 1), [_r((9, 6))]),
    "einsum attention": (lambda q, k: tg.einsum("bqd,bkd->bqk", q, k), [_r((2, 3, 4)), _r((2, 5, 4), 1)]),
    "einsum trace chain": (lambda a, b: tg.einsum("ii,jk->kj", a, b), [_r((3, 3)), _r((2, 3), 1)]),
    "einsum three": (lambda a, b, c: tg.einsum("ij,jk,kl->il", a, b, c), [_r((2, 3)), _r((3, 2), 1), _r((2, 2), 2)]),
    "gather": (lambda t: t.gather(1, tg.tensor(IDX)), [_r((2, 4))]),
    "scatter": (lambda t, s: t.scatter(1, tg.tensor([[0, 2], [3, 1]]), s), [_r((2, 4)), _r((2, 3), 1)]),
    "scatter value": (lambda t: t.scatter(0, tg.tensor([[1, 0]]), 2.0), [_r((2, 2))]),
    "scatter_add": (lambda t, s: t.scatter_add(1, tg.tensor(IDX), s), [_r((2, 4)), _r((2, 3), 1)]),
    "scatter_reduce mean": (lambda t, s: t.scatter_reduce(1, tg.tensor(IDX), s, "mean"), [_r((2, 4)), _r((2, 3), 1)]),
    "scatter_reduce amax": (lambda t, s: t.scatter_reduce(1, tg.tensor(IDX), s, "amax", include_self=False),
                            [_r((2, 4)), _r((2, 3), 1)]),
    "scatter_reduce prod": (lambda t, s: t.scatter_reduce(1, tg.tensor(IDX), s, "prod"), [_r((2, 4)), _r((2, 3), 1)]),
    "index_select": (lambda t: t.index_select(0, tg.tensor([2, 0, 2])), [_r((3, 2))]),
    "index_add": (lambda t, s: t.index_add(0, tg.tensor([2, 0, 2]), s, alpha=-2.0), [_r((3, 2)), _r((3, 2), 1)]),
    "index_copy": (lambda t, s: t.index_copy(1, tg.tensor([2, 0]), s), [_r((2, 3)), _r((2, 2), 1)]),
    "index_fill": (lambda t, v: t.index_fill(1, tg.tensor([2, 0, 2]), v), [_r((2, 3)), _r(())]),
    "masked_select": (lambda t: t.masked_select(tg.tensor([[True], [False], [True]])), [_r((3, 4))]),
    "masked_scatter": (lambda t, s: t.masked_scatter(tg.tensor([True, False, True]), s), [_r((2, 3)), _r((5,), 1)]),
    "take": (lambda t: t.take(tg.tensor([[0, -1], [5, 0]])), [_r((2, 3))]),
    "take_along_dim": (lambda t: t.take_along_dim(tg.tensor([[0], [2]]), 1), [_r((2, 3))]),
    "index_put": (lambda t, v: tg.index_put(t, (slice(None), [0, 2]), v), [_r((2, 3)), _r((2,), 1)]),
    "index_put accumulate": (lambda t, v: t.index_put(([1, 1, 0],), v, accumulate=True), [_r((2, 3)), _r((3, 3), 1)]),
    "index_put mask": (lambda t, v: tg.index_put(t, tg.tensor([[True, False, True], [False, True, False]]), v),
                       [_r((2, 3)), _r((3,), 1)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck(name):
    fn, inputs = GRADCHECK[name]
    assert gradcheck(fn, inputs)


# ============================================================================ the Function behind each op

FUNCTION_OF = {   # op -> the Function class whose node it must produce
    S.Triangle: lambda t: t.triu(), S.Roll: lambda t: t.roll(1, 0),
    S.Flip: lambda t: t.flip(0), S.Diagonal: lambda t: t.diagonal(), S.DiagEmbed: lambda t: t.diag_embed(),
    S.Repeat: lambda t: t.repeat(2, 1), S.RepeatInterleave: lambda t: t.repeat_interleave(2, 0),
    S.UnfoldFn: lambda t: t.unfold(0, 2, 1), I.Gather: lambda t: t.gather(0, tg.tensor([[1, 0]])),
    I.Scatter: lambda t: t.scatter(0, tg.tensor([[1, 0]]), 1.0),
    I.ScatterAdd: lambda t: t.scatter_add(0, tg.tensor([[1, 0]]), t),
    I.ScatterReduce: lambda t: t.scatter_reduce(0, tg.tensor([[1, 0]]), t, "amin"),
    I.IndexSelect: lambda t: t.index_select(0, tg.tensor([1])),
    I.IndexAdd: lambda t: t.index_add(0, tg.tensor([1, 0]), t), I.IndexCopy: lambda t: t.index_copy(0, tg.tensor([1, 0]), t),
    I.IndexFill: lambda t: t.index_fill(0, tg.tensor([1]), 0.5),
    I.MaskedSelect: lambda t: t.masked_select(tg.tensor([True, False])),
    I.MaskedScatter: lambda t: t.masked_scatter(tg.tensor([True, False]), t), I.Take: lambda t: t.take(tg.tensor([3])),
    M.IndexPut: lambda t: t.index_put((0,), 1.0),
}


@pytest.mark.parametrize("fn", list(FUNCTION_OF), ids=lambda f: f.__name__)
def test_each_op_records_its_function(fn):
    out = FUNCTION_OF[fn](tg.tensor(np.arange(4.0).reshape(2, 2), requires_grad=True))
    assert out.grad_fn.fn is fn


# ============================================================================ exact integer results

int_arrays = st.tuples(shapes(0, 3, min_side=0, max_side=4), seeds).map(
    lambda a: np.random.default_rng(a[1]).integers(-1, 2, a[0]) * (np.random.default_rng(a[1]).random(a[0]) < 0.6))


@given(a=int_arrays, as_float=st.booleans())
def test_nonzero_argwhere_where_exact(a, as_float):
    a = a.astype(np.float32) if as_float else a
    ours, ref = tg.Tensor(a), to_torch(a)
    for o, r in [(ours.nonzero(), ref.nonzero()), (tg.argwhere(ours), torch.argwhere(ref))]:
        assert o.dtype == np.int64 and o.shape == tuple(r.shape) and np.array_equal(o._data, r.cpu().numpy())
    for o_parts, r_parts in [(ours.nonzero(as_tuple=True), ref.nonzero(as_tuple=True)),
                             (tg.where(ours != 0), torch.where(ref != 0))]:
        assert len(o_parts) == len(r_parts)
        for o, r in zip(o_parts, r_parts):
            assert o.dtype == np.int64 and np.array_equal(o._data, r.cpu().numpy())


@given(shape=shapes(1, 3, max_side=4), seed=seeds)
def test_integer_tensors_exact(shape, seed):
    """Shape and indexing ops on int64 tensors (no gradient): exactly torch's values and dtype."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-9, 9, shape)
    x, tx = tg.Tensor(a), torch.tensor(a, device=DEVICE)
    d = int(rng.integers(0, len(shape)))
    idx = rng.integers(0, shape[d], shape)
    reps = rng.integers(0, 3, shape[d])
    counts = rng.integers(0, 3, shape[0])
    pairs = [
        (x.gather(d, tg.tensor(idx)), tx.gather(d, torch.tensor(idx, device=DEVICE))),
        (x.scatter_add(d, tg.tensor(idx), x), tx.scatter_add(d, torch.tensor(idx, device=DEVICE), tx)),
        (x.scatter_reduce(d, tg.tensor(idx), x, "amax"), tx.scatter_reduce(d, torch.tensor(idx, device=DEVICE), tx, "amax")),
        (x.index_select(d, tg.tensor(idx.reshape(-1))), tx.index_select(d, torch.tensor(idx.reshape(-1), device=DEVICE))),
        (x.repeat_interleave(tg.tensor(reps), d), tx.repeat_interleave(torch.tensor(reps, device=DEVICE), d)),
        (x.flip(d).roll(2, d).repeat(2, *([1] * len(shape))), tx.flip(d).roll(2, d).repeat(2, *([1] * len(shape)))),
        (tg.einsum("...->...", x), torch.einsum("...->...", tx)),
        (tg.repeat_interleave(tg.tensor(counts)), torch.repeat_interleave(torch.tensor(counts, device=DEVICE))),
    ]
    for o, r in pairs:
        assert o.dtype == np.int64 and o.shape == tuple(r.shape) and np.array_equal(o._data, r.cpu().numpy())


# ============================================================================ errors, case by case against torch

# torch's errors are compared on the CPU: there an out-of-range index raises IndexError, while on
# CUDA it is a device-side assert that poisons the whole test process (no exception to compare).
_ERR_DEVICE = "cpu"
_X = np.arange(6.0).reshape(2, 3)
L, T = tg.tensor(_X), torch.tensor(_X, device=_ERR_DEVICE)   # ours and torch's 2x3 float64 tensor
V, TV = tg.tensor(np.arange(3.0)), torch.tensor(np.arange(3.0), device=_ERR_DEVICE)
Z, TZ = tg.tensor(1.0), torch.tensor(1.0, device=_ERR_DEVICE)


def li(*a, dtype=np.int64):
    return tg.tensor(np.array(a, dtype=dtype))


def ti(*a, dtype=torch.int64):
    return torch.tensor(a, dtype=dtype, device=_ERR_DEVICE)


ERRORS = {   # name -> (ours, torch's, the exception class we raise)
    "tril 1-d": (lambda: V.tril(), lambda: TV.tril(), ValueError),
    "roll dim out of range": (lambda: L.roll(1, 5), lambda: T.roll(1, 5), IndexError),
    "roll shifts/dims": (lambda: L.roll((1, 2), (0,)), lambda: T.roll((1, 2), (0,)), ValueError),
    "roll 0-d with dims": (lambda: Z.roll(1, 0), lambda: TZ.roll(1, 0), IndexError),
    "roll no shifts": (lambda: L.roll(()), lambda: T.roll(()), ValueError),
    "flip repeated dim": (lambda: L.flip(0, 0), lambda: T.flip(0, 0), ValueError),
    "flip dim out of range": (lambda: L.flip(5), lambda: T.flip(5), IndexError),
    "fliplr 1-d": (lambda: V.fliplr(), lambda: TV.fliplr(), ValueError),
    "flipud 0-d": (lambda: Z.flipud(), lambda: TZ.flipud(), ValueError),
    "rot90 same dims": (lambda: L.rot90(1, (0, 0)), lambda: T.rot90(1, (0, 0)), ValueError),
    "rot90 one dim": (lambda: L.rot90(1, (0,)), lambda: T.rot90(1, (0,)), ValueError),
    "diagonal same dims": (lambda: L.diagonal(0, 1, -1), lambda: T.diagonal(0, 1, -1), ValueError),
    "diagonal 0-d": (lambda: Z.diagonal(), lambda: TZ.diagonal(), IndexError),
    "diag 3-d": (lambda: tg.diag(L.reshape(1, 2, 3)), lambda: torch.diag(T.reshape(1, 2, 3)), ValueError),
    "diag_embed same dims": (lambda: L.diag_embed(0, 0, 0), lambda: T.diag_embed(0, 0, 0), ValueError),
    "repeat too few sizes": (lambda: L.repeat(2), lambda: T.repeat(2), ValueError),
    "repeat negative": (lambda: L.repeat(2, -1), lambda: T.repeat(2, -1), ValueError),
    "repeat_interleave negative": (lambda: L.repeat_interleave(-1), lambda: T.repeat_interleave(-1), ValueError),
    "repeat_interleave sizes": (lambda: L.repeat_interleave(li(1, 2), 1), lambda: T.repeat_interleave(ti(1, 2), 1), ValueError),
    "repeat_interleave float repeats": (lambda: L.repeat_interleave(tg.tensor([1.0, 2.0]), 0),
                                        lambda: T.repeat_interleave(torch.tensor([1.0, 2.0], device=DEVICE), 0), TypeError),
    "repeat_interleave output_size": (lambda: L.repeat_interleave(2, 0, output_size=3),
                                      lambda: T.repeat_interleave(2, 0, output_size=3), ValueError),
    "unfold size": (lambda: L.unfold(1, 4, 1), lambda: T.unfold(1, 4, 1), ValueError),
    "unfold step": (lambda: L.unfold(1, 2, 0), lambda: T.unfold(1, 2, 0), ValueError),
    "unflatten product": (lambda: L.unflatten(1, (2, 2)), lambda: T.unflatten(1, (2, 2)), ValueError),
    "unflatten empty": (lambda: L.unflatten(1, ()), lambda: T.unflatten(1, ()), ValueError),
    "movedim repeated": (lambda: L.movedim((0, 0), (1, 0)), lambda: T.movedim((0, 0), (1, 0)), ValueError),
    "movedim lengths": (lambda: L.movedim((0, 1), (1,)), lambda: T.movedim((0, 1), (1,)), ValueError),
    "movedim out of range": (lambda: L.movedim(0, 5), lambda: T.movedim(0, 5), IndexError),
    "unbind 0-d": (lambda: Z.unbind(), lambda: TZ.unbind(), IndexError),
    "unbind out of range": (lambda: L.unbind(2), lambda: T.unbind(2), IndexError),
    "t 3-d": (lambda: L.reshape(1, 2, 3).t(), lambda: T.reshape(1, 2, 3).t(), ValueError),
    "tensor_split 0": (lambda: L.tensor_split(0, 1), lambda: T.tensor_split(0, 1), ValueError),
    "tensor_split float": (lambda: L.tensor_split(tg.tensor(2.0), 1), lambda: T.tensor_split(torch.tensor(2.0, device=DEVICE), 1), TypeError),
    "tensor_split 0-d": (lambda: Z.tensor_split(1), lambda: TZ.tensor_split(1), ValueError),
    "hsplit indivisible": (lambda: V.hsplit(2), lambda: TV.hsplit(2), ValueError),
    "vsplit 1-d": (lambda: V.vsplit(3), lambda: TV.vsplit(3), ValueError),
    "meshgrid 2-d": (lambda: tg.meshgrid(L, V, indexing="ij"), lambda: torch.meshgrid(T, TV, indexing="ij"), ValueError),
    "meshgrid indexing": (lambda: tg.meshgrid(V, indexing="foo"), lambda: torch.meshgrid(TV, indexing="foo"), ValueError),
    "meshgrid dtypes": (lambda: tg.meshgrid(V, li(1), indexing="ij"), lambda: torch.meshgrid(TV, ti(1), indexing="ij"), TypeError),
    "meshgrid empty": (lambda: tg.meshgrid(indexing="ij"), lambda: torch.meshgrid(indexing="ij"), ValueError),
    "broadcast_tensors": (lambda: tg.broadcast_tensors(tg.zeros(2), L), lambda: torch.broadcast_tensors(torch.zeros(2, device=DEVICE), T), ValueError),
    "einsum bad subscript": (lambda: tg.einsum("i1", L), lambda: torch.einsum("i1", T), ValueError),
    "einsum operand count": (lambda: tg.einsum("ij,jk", L), lambda: torch.einsum("ij,jk", T), ValueError),
    "einsum subscript count": (lambda: tg.einsum("ijk", L), lambda: torch.einsum("ijk", T), ValueError),
    "einsum repeated output": (lambda: tg.einsum("ij,jk->ii", L, L.t()), lambda: torch.einsum("ij,jk->ii", T, T.t()), ValueError),
    "einsum unknown output": (lambda: tg.einsum("ij->iz", L), lambda: torch.einsum("ij->iz", T), ValueError),
    "einsum sizes": (lambda: tg.einsum("ij,jk", L, L), lambda: torch.einsum("ij,jk", T, T), ValueError),
    "einsum diagonal sizes": (lambda: tg.einsum("ii->i", L), lambda: torch.einsum("ii->i", T), ValueError),
    "einsum stray dot": (lambda: tg.einsum("i.->i", L), lambda: torch.einsum("i.->i", T), ValueError),
    "einsum dtypes": (lambda: tg.einsum("ij,j", L, V.float()), lambda: torch.einsum("ij,j", T, TV.float()), TypeError),
    "gather index out of range": (lambda: L.gather(1, li([0, 3])), lambda: T.gather(1, ti([0, 3])), IndexError),
    "gather negative index": (lambda: L.gather(1, li([0, -1])), lambda: T.gather(1, ti([0, -1])), IndexError),
    "gather float index": (lambda: L.gather(1, tg.tensor([[0.0]])), lambda: T.gather(1, torch.tensor([[0.0]], device=DEVICE)), TypeError),
    "gather int16 index": (lambda: L.gather(1, li([0], dtype=np.int16)), lambda: T.gather(1, ti([0], dtype=torch.int16)), TypeError),
    "gather index rank": (lambda: L.gather(1, li(0, 1)), lambda: T.gather(1, ti(0, 1)), ValueError),
    "gather index size": (lambda: L.gather(1, li([0, 1], [0, 1], [0, 1])), lambda: T.gather(1, ti([0, 1], [0, 1], [0, 1])), ValueError),
    "gather dim": (lambda: L.gather(2, li([0])), lambda: T.gather(2, ti([0])), IndexError),
    "gather list index": (lambda: L.gather(1, [[0]]), lambda: T.gather(1, [[0]]), TypeError),
    "scatter src dtype": (lambda: L.scatter(1, li([0]), L.float()), lambda: T.scatter(1, ti([0]), T.float()), TypeError),
    "scatter reduce name": (lambda: L.scatter(1, li([0]), 1.0, reduce="foo"), lambda: T.scatter(1, ti([0]), 1.0, reduce="foo"), ValueError),
    "scatter src too small": (lambda: L.scatter(1, li([0, 2]), L[:1, :1]), lambda: T.scatter(1, ti([0, 2]), T[:1, :1]), ValueError),
    "scatter index out of range": (lambda: L.scatter(1, li([3]), 1.0), lambda: T.scatter(1, ti([3]), 1.0), IndexError),
    "scatter_add number src": (lambda: L.scatter_add(1, li([0]), 1.0), lambda: T.scatter_add(1, ti([0]), 1.0), TypeError),
    "scatter_reduce name": (lambda: L.scatter_reduce(1, li([0]), L, "foo"), lambda: T.scatter_reduce(1, ti([0]), T, "foo"), ValueError),
    "index_select 2-d index": (lambda: L.index_select(1, li([0])), lambda: T.index_select(1, ti([0])), IndexError),
    "index_select out of range": (lambda: L.index_select(1, li(3)), lambda: T.index_select(1, ti(3)), IndexError),
    "index_select negative": (lambda: L.index_select(1, li(-1)), lambda: T.index_select(1, ti(-1)), IndexError),
    "index_select float index": (lambda: L.index_select(1, tg.tensor([1.0])), lambda: T.index_select(1, torch.tensor([1.0], device=DEVICE)), TypeError),
    "index_add source size": (lambda: L.index_add(1, li(0, 0), L), lambda: T.index_add(1, ti(0, 0), T), ValueError),
    "index_add dtype": (lambda: L.index_add(1, li(0, 0), L[:, :2].float()), lambda: T.index_add(1, ti(0, 0), T[:, :2].float()), TypeError),
    "index_add out of range": (lambda: L.index_add(1, li(0, 3), L[:, :2]), lambda: T.index_add(1, ti(0, 3), T[:, :2]), IndexError),
    "index_copy int32": (lambda: L.index_copy(1, li(0, 1, dtype=np.int32), L[:, :2]),
                         lambda: T.index_copy(1, ti(0, 1, dtype=torch.int32), T[:, :2]), TypeError),
    "index_fill int32": (lambda: L.index_fill(1, li(0, dtype=np.int32), 1.0), lambda: T.index_fill(1, ti(0, dtype=torch.int32), 1.0), IndexError),
    "index_fill vector value": (lambda: L.index_fill(1, li(0), V), lambda: T.index_fill(1, ti(0), TV), ValueError),
    "masked_select int mask": (lambda: L.masked_select(li(1, 0, 1)), lambda: T.masked_select(ti(1, 0, 1)), TypeError),
    "masked_select shapes": (lambda: L.masked_select(tg.tensor([True, False])), lambda: T.masked_select(torch.tensor([True, False], device=DEVICE)), ValueError),
    "masked_scatter too few": (lambda: L.masked_scatter(tg.tensor([True, False, True]), V),
                               lambda: T.masked_scatter(torch.tensor([True, False, True], device=DEVICE), TV), ValueError),
    "take out of range": (lambda: L.take(li(6)), lambda: T.take(ti(6)), IndexError),
    "take below range": (lambda: L.take(li(-7)), lambda: T.take(ti(-7)), IndexError),
    "take int32": (lambda: L.take(li(1, dtype=np.int32)), lambda: T.take(ti(1, dtype=torch.int32)), TypeError),
    "take_along_dim rank": (lambda: L.take_along_dim(li([[0]]), 1), lambda: T.take_along_dim(ti([[0]]), 1), ValueError),
    "take_along_dim int32": (lambda: L.take_along_dim(li([0], dtype=np.int32), 1),
                             lambda: T.take_along_dim(ti([0], dtype=torch.int32), 1), TypeError),
    "index_put out of range": (lambda: tg.index_put(L, (li(0, 5),), tg.tensor(1.0, dtype=np.float64)),
                               lambda: torch.index_put(T, (ti(0, 5),), torch.tensor(1.0, dtype=torch.float64, device=DEVICE)), IndexError),
    "index_put shapes": (lambda: tg.index_put(L, (li(0, 1),), tg.ones(2, 2, dtype=np.float64)),
                         lambda: torch.index_put(T, (ti(0, 1),), torch.ones(2, 2, dtype=torch.float64, device=DEVICE)), ValueError),
    "index_put dtype": (lambda: tg.index_put(L, (li(0),), li(1, 2, 3)), lambda: torch.index_put(T, (ti(0),), ti(1, 2, 3)), TypeError),
    "index_put float index": (lambda: tg.index_put(L, (tg.tensor([0.0]),), 1.0),
                              lambda: torch.index_put(T, (torch.tensor([0.0], device=DEVICE),), torch.tensor(1.0, dtype=torch.float64, device=DEVICE)), TypeError),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_follow_torch(name):
    ours, theirs, expected = ERRORS[name]
    with pytest.raises(Exception):
        theirs()
    with pytest.raises(expected):
        ours()


def test_error_messages_name_the_value():
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for dimension 1 with size 3"):
        L.gather(1, li([0, 3]))
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 5"):
        L.roll(1, 5)
    with pytest.raises(ValueError, match=r"value tensor of shape \[2, 2\] cannot be broadcast to indexing result "
                                         r"of shape \[2, 3\]"):
        tg.index_put(L, (li(0, 1),), tg.ones(2, 2, dtype=np.float64))
    with pytest.raises(IndexError, match=r"index .*5.* out of range for a tensor of shape \(2, 3\).*size 2"):
        M.index_put_kernel(_X.copy(), [0, 5], 1.0)
    with pytest.raises(TypeError, match="int16"):
        L.gather(1, li([0], dtype=np.int16))


# ============================================================================ index_put and its in-place kernel

KERNEL_INDICES = [   # (ours, torch's) index expressions
    (1, 1), (-1, -1), (slice(None, None, 2), slice(None, None, 2)), ((Ellipsis, 1), (Ellipsis, 1)),
    ((None, 0), (None, 0)), ([2, 0], [2, 0]), ((slice(None), [0, 3]), (slice(None), [0, 3])),
    (np.array([True, False, True]), torch.tensor([True, False, True], device=DEVICE)),
    (tg.tensor([[True, False, True, False]] * 3), torch.tensor([[True, False, True, False]] * 3, device=DEVICE)),
    (([0, 2], [1, 3]), ([0, 2], [1, 3])), ((tg.tensor([1]), slice(1, 3)), (torch.tensor([1], device=DEVICE), slice(1, 3))),
]


@pytest.mark.parametrize("k", range(len(KERNEL_INDICES)))
@pytest.mark.parametrize("value_kind", ["scalar", "full", "broadcast", "extra leading 1"])
def test_index_put_kernel_matches_torch_setitem(k, value_kind):
    ours_idx, torch_idx = KERNEL_INDICES[k]
    base = np.arange(12.0).reshape(3, 4)
    target = torch.tensor(base, device=DEVICE)[torch_idx].shape
    rng = np.random.default_rng(k)
    v = {"scalar": np.float64(-7.5), "full": rng.standard_normal(target),
         "broadcast": rng.standard_normal(target[-1:]), "extra leading 1": rng.standard_normal((1,) + tuple(target))}[value_kind]
    ref = torch.tensor(base, device=DEVICE)
    ref[torch_idx] = torch.tensor(v, device=DEVICE)
    a = base.copy()
    assert M.index_put_kernel(a, ours_idx, v) is a
    np.testing.assert_array_equal(a, ref.cpu().numpy())
    out = tg.index_put(tg.tensor(base), ours_idx, v.item() if value_kind == "scalar" else tg.tensor(v))
    np.testing.assert_array_equal(out._data, ref.cpu().numpy())


def test_index_put_accumulate_duplicates_values_and_gradients():
    """accumulate=True with a repeated row: both values add in (np.add.at), and each gets
    the gradient of the row it landed in; the input's gradient passes unchanged."""
    rng = np.random.default_rng(3)
    x, v, g = rng.standard_normal((3, 2)), rng.standard_normal((4, 2)), rng.standard_normal((3, 2))
    idx = [2, 0, 2, 2]
    ox, ov = tg.tensor(x, requires_grad=True), tg.tensor(v, requires_grad=True)
    out = tg.index_put(ox, (idx,), ov, accumulate=True)
    out.backward(g)
    tx, tv = torch.tensor(x, requires_grad=True, device=DEVICE), torch.tensor(v, requires_grad=True, device=DEVICE)
    ref = torch.index_put(tx, (torch.tensor(idx, device=DEVICE),), tv, accumulate=True)
    ref.backward(torch.tensor(g, device=DEVICE))
    np.testing.assert_allclose(out._data, ref.detach().cpu().numpy(), rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(ox.grad), tx.grad.cpu().numpy())
    np.testing.assert_array_equal(np.asarray(ov.grad), tv.grad.cpu().numpy())
    expected = x.copy()
    np.add.at(expected, idx, v)
    np.testing.assert_allclose(M.index_put_kernel(x.copy(), (idx,), v, accumulate=True), expected, rtol=1e-14)


def test_index_put_leaves_its_input_alone():
    x = tg.tensor(np.zeros((2, 2)), requires_grad=True)
    y = x.index_put((0,), 1.0)
    assert np.array_equal(x._data, np.zeros((2, 2))) and y._data[0].tolist() == [1.0, 1.0]


# ============================================================================ behaviours pinned one by one

def test_scatter_src_larger_than_index_gets_zero_gradient_outside_it():
    """torch's own backward rejects a src larger than index; the gradient is then a gather
    of g for the used block and 0 elsewhere (torch's values for the used block)."""
    rng = np.random.default_rng(0)
    x, src, g = rng.standard_normal((2, 4)), rng.standard_normal((3, 5)), rng.standard_normal((2, 4))
    idx = np.array([[0, 3], [2, 1]])
    for op in ("scatter", "scatter_add"):
        ox, os_ = tg.tensor(x, requires_grad=True), tg.tensor(src, requires_grad=True)
        getattr(ox, op)(1, tg.tensor(idx), os_).backward(g)
        ts = torch.tensor(src[:2, :2], requires_grad=True, device=DEVICE)
        tout = getattr(torch.tensor(x, device=DEVICE), op)(1, torch.tensor(idx, device=DEVICE), ts)
        assert np.array_equal(getattr(tg.tensor(x), op)(1, tg.tensor(idx), tg.tensor(src))._data, tout.detach().cpu().numpy())
        tout.backward(torch.tensor(g, device=DEVICE))
        expected = np.zeros_like(src)
        expected[:2, :2] = ts.grad.cpu().numpy()
        np.testing.assert_array_equal(np.asarray(os_.grad), expected)


@pytest.mark.parametrize("reduce", ["amax", "amin", "mean", "sum", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("zeros", [False, True])
def test_scatter_reduce_ties_and_zeros_as_torch(reduce, include_self, zeros):
    """Ties between x and src and among src values share g evenly, as torch's backward; for
    prod, zero terms (one or two at a position, in x or in src) get torch's gradients."""
    x = np.array([[1.0, 5.0, 0.0], [2.0, 2.0, 2.0]])
    src = np.array([[1.0, 1.0, 5.0], [2.0, -1.0, 2.0]])
    if zeros:
        x[0, 0], src[0, 1], src[1, 0], src[1, 2] = 0.0, 0.0, 0.0, 0.0
    idx = np.array([[0, 0, 1], [2, 2, 0]])
    g = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    ox, os_ = tg.tensor(x, requires_grad=True), tg.tensor(src, requires_grad=True)
    out = ox.scatter_reduce(1, tg.tensor(idx), os_, reduce, include_self=include_self)
    out.backward(g)
    tx, ts = torch.tensor(x, requires_grad=True, device=DEVICE), torch.tensor(src, requires_grad=True, device=DEVICE)
    ref = tx.scatter_reduce(1, torch.tensor(idx, device=DEVICE), ts, reduce, include_self=include_self)
    ref.backward(torch.tensor(g, device=DEVICE))
    np.testing.assert_allclose(out._data, ref.detach().cpu().numpy(), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(ox.grad), tx.grad.cpu().numpy(), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(os_.grad), ts.grad.cpu().numpy(), rtol=1e-15)


def test_scatter_with_reduce_has_no_derivative_as_in_torch():
    x = tg.tensor(np.ones((2, 2)), requires_grad=True)
    y = x.scatter(1, tg.tensor([[0], [1]]), 2.0, reduce="multiply")
    assert y._data.tolist() == [[2.0, 1.0], [1.0, 2.0]]
    with pytest.raises(RuntimeError, match="derivative of scatter with reduce"):
        y.sum().backward()


ZERO_D = {   # 0-d inputs, where torch treats them as 1-element tensors
    "gather": (lambda t: t.gather(0, tg.tensor(0)), lambda t: t.gather(0, torch.tensor(0, device=DEVICE))),
    "index_select": (lambda t: t.index_select(0, tg.tensor([0])), lambda t: t.index_select(0, torch.tensor([0], device=DEVICE))),
    "unfold": (lambda t: t.unfold(0, 1, 1), lambda t: t.unfold(0, 1, 1)),
    "roll": (lambda t: t.roll(1), lambda t: t.roll(1)),
    "flip": (lambda t: t.flip(0), lambda t: t.flip(0)),
    "repeat": (lambda t: t.repeat(2, 3), lambda t: t.repeat(2, 3)),
    "repeat_interleave": (lambda t: t.repeat_interleave(3), lambda t: t.repeat_interleave(3)),
    "take": (lambda t: t.take(tg.tensor([0, 0])), lambda t: t.take(torch.tensor([0, 0], device=DEVICE))),
    "scatter": (lambda t: t.scatter(0, tg.tensor(0), 2.0), lambda t: t.scatter(0, torch.tensor(0, device=DEVICE), 2.0)),
    "t": (lambda t: t.t(), lambda t: t.t()),
    "atleast_3d": (tg.atleast_3d, torch.atleast_3d),
}


@pytest.mark.parametrize("name", list(ZERO_D))
def test_zero_dim_inputs(name):
    ours, theirs = ZERO_D[name]
    check_parity(name, ours, theirs, [np.array(1.5)], np.float64, allow_zero_grad=(0,))


def test_meshgrid_defaults_to_ij_and_shares_gradients():
    a, b = tg.tensor(np.arange(3.0), requires_grad=True), tg.tensor(np.arange(2.0), requires_grad=True)
    ga, gb = tg.meshgrid(a, b)
    assert ga.shape == (3, 2) and gb.shape == (3, 2)
    (ga * 2 + gb).sum().backward()
    assert np.asarray(a.grad).tolist() == [4.0, 4.0, 4.0] and np.asarray(b.grad).tolist() == [3.0, 3.0]


def test_top_level_shape_functions_call_the_methods():
    x = tg.tensor(np.arange(6.0).reshape(2, 3))
    assert tg.transpose(x, 0, 1).shape == (3, 2) and tg.permute(x, (1, 0)).shape == (3, 2)
    assert tg.reshape(x, (3, 2)).shape == (3, 2) and tg.flatten(x).shape == (6,)
    assert tg.unsqueeze(x, 0).shape == (1, 2, 3) and tg.squeeze(tg.unsqueeze(x, 0)).shape == (2, 3)
    assert [p.shape for p in tg.split(x, 2, 1)] == [(2, 2), (2, 1)] and len(tg.chunk(x, 2)) == 2
    assert tg.narrow(x, 1, 1, 2)._data.tolist() == [[1.0, 2.0], [4.0, 5.0]]
    assert tg.broadcast_shapes((2, 1), (3,)) == (2, 3)
    with pytest.raises(TypeError):
        tg.transpose(np.zeros((2, 2)), 0, 1)


@DTYPES
@pytest.mark.parametrize("equation, shapes_", [
    ("ij,jk->ik", [(2, 1), (3, 4)]), ("ij,jk", [(2, 3), (1, 4)]), ("...ij,...jk", [(2, 1, 3), (5, 1, 3, 2)]),
    ("...,...", [(2, 3), (3,)]), ("i...j,j...->i...", [(2, 3, 4), (4, 3)]), ("bA,bc", [(2, 3), (2, 5)]),
    ("...ij->ij", [(4, 2, 3)]), ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
])
def test_einsum_broadcasting_and_ellipsis(dtype, equation, shapes_):
    inputs = [values(s, k) for k, s in enumerate(shapes_)]
    check_parity("einsum", lambda *ts: tg.einsum(equation, *ts), lambda *ts: torch.einsum(equation, *ts), inputs, dtype)
    check_parity("einsum", lambda *ts: tg.einsum(equation, list(ts)), lambda *ts: torch.einsum(equation, list(ts)),
                 inputs, dtype)


KEYWORD_FORMS = {   # the same call, spelled with keywords, on ours and on torch
    "flip dims=": lambda lib, x: lib.flip(x, dims=[0, 1]),
    "tile dims=": lambda lib, x: lib.tile(x, dims=(2, 1, 1)),
    "repeat repeats=": lambda lib, x: x.repeat(repeats=(1, 2)),
    "roll shifts= dims=": lambda lib, x: x.roll(shifts=(1, -1), dims=(1, 0)),
    "diagonal offset= dim1= dim2=": lambda lib, x: lib.diagonal(x, offset=-1, dim1=1, dim2=0),
    "unfold dimension= size= step=": lambda lib, x: x.unfold(dimension=1, size=2, step=1),
    "gather dim= index=": lambda lib, x: lib.gather(x, dim=1, index=lib.tensor([[2], [0]])),
    "index_select dim= index=": lambda lib, x: x.index_select(dim=0, index=lib.tensor([1, 1])),
    "movedim source= destination=": lambda lib, x: lib.movedim(x, source=0, destination=1),
    "repeat_interleave repeats= dim=": lambda lib, x: x.repeat_interleave(repeats=2, dim=1),
    "scatter value=": lambda lib, x: x.scatter(1, lib.tensor([[0], [2]]), value=-1.0),
}


@pytest.mark.parametrize("name", list(KEYWORD_FORMS))
def test_keyword_forms_match_torch(name):
    call = KEYWORD_FORMS[name]
    ours, ref = call(tg, tg.tensor(_X)), call(torch, torch.tensor(_X, device=DEVICE))
    assert ours.shape == tuple(ref.shape) and np.array_equal(ours._data, ref.cpu().numpy())
    with pytest.raises(TypeError):
        tg.flip(tg.tensor(_X), 0, dims=[1])


def test_where_with_one_or_three_arguments():
    c = np.array([[True, False, True], [False, False, True]])
    parts = tg.where(tg.tensor(c))
    assert [p._data.tolist() for p in parts] == [r.tolist() for r in torch.where(torch.tensor(c, device=DEVICE))]
    out = tg.where(tg.tensor(c), tg.tensor(_X), 0.5)
    assert np.array_equal(out._data, torch.where(torch.tensor(c, device=DEVICE), torch.tensor(_X, device=DEVICE), 0.5).cpu().numpy())
    with pytest.raises(TypeError):
        tg.where(tg.tensor(c), tg.tensor(_X))
