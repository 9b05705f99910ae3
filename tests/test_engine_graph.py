"""The graph's memory behaviour and traversal: what it keeps alive, when it frees, in which order
it runs, the pairwise reduction of broadcast gradients, and size-dependent op paths.

Where torch defines the behaviour (gradients of arbitrary DAGs, hooks on tensors that were
dropped, second backwards) the same program runs through torch and the results are compared.
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from tinygrad_tx import SavedMemory
from tinygrad_tx.autograd import reduce_grad_to_input, sum_rows
from reference.testing import DEVICE


# ============================================================================ what the graph keeps alive

def test_graph_does_not_pin_intermediates_that_no_backward_saved():
    """``x = x + f(x)``: the old intermediate goes away once nothing but the graph refers to it,
    unless an op saved it (torch's graph, too, links nodes and saved tensors, not outputs)."""
    x = tg.Tensor(np.ones((64, 64)), requires_grad=True)
    h = x * 2.0                       # Mul by a constant saves nothing from h
    unsaved = weakref.ref(h._data)
    out = h + 1.0                     # Add saves nothing either
    k = out * out                     # saves out (twice, one buffer)
    saved = weakref.ref(out._data)
    del h, out
    gc.collect()
    assert unsaved() is None          # only reachable through the graph: released
    assert saved() is not None        # Mul's backward needs it
    k.sum().backward()
    gc.collect()
    assert saved() is None            # freed with the node after its backward
    np.testing.assert_allclose(x.grad, 2 * (2 * x._data + 1) * 2)


def test_backward_frees_each_node_as_it_goes():
    """When a node's backward runs, every node already run has released its saved arrays: the
    accounting then holds exactly the arrays of the nodes still waiting (and this one)."""
    start = SavedMemory.current
    x = tg.Tensor(np.random.default_rng(0).standard_normal((32, 32)), requires_grad=True)
    h = x
    for _ in range(5):
        h = (h * h).tanh()            # Mul saves its inputs, Tanh its output
    waiting = []
    tg.autograd._backward_observers.append(lambda ctx, g, grads: waiting.append(
        (SavedMemory.current - start, ctx.saved_bytes)))
    try:
        h.sum().backward()
    finally:
        tg.autograd._backward_observers.pop()
    held = [w for w, _ in waiting]
    assert held == sorted(held, reverse=True) and held[0] > held[-1]
    assert waiting[-1][0] == waiting[-1][1]   # the last node holds the only saved arrays left
    assert SavedMemory.current == start


def test_second_backward_raises_without_retain_graph_and_works_with_it():
    rng = np.random.default_rng(1)
    x0, g = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    start = SavedMemory.current
    x = tg.Tensor(x0, requires_grad=True)
    y = (x * x).exp()
    y.backward(g, retain_graph=True)
    assert SavedMemory.current > start            # retained: the arrays are still held
    y.backward(g)                                 # second pass accumulates, then frees
    assert SavedMemory.current == start
    xt = torch.tensor(x0, requires_grad=True, device=DEVICE)
    yt = (xt * xt).exp()
    yt.backward(torch.tensor(g, device=DEVICE), retain_graph=True)
    yt.backward(torch.tensor(g, device=DEVICE))
    np.testing.assert_allclose(x.grad, xt.grad.cpu().numpy(), rtol=1e-14)
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        y.backward(g)
    del y
    gc.collect()
    assert SavedMemory.current == start


def test_hooks_and_retain_grad_of_a_dropped_tensor_behave_like_torch():
    """A hook registered on an intermediate still runs (and may change the gradient) after the
    Python object is gone, as torch's does; retain_grad on a dropped tensor is harmless."""
    x0 = np.array([1.0, -2.0, 0.5])
    results = {}
    for m in (tg, torch):
        x = m.tensor(x0, requires_grad=True)
        h = x * 3.0
        seen = []
        h.register_hook(lambda g, seen=seen: (seen.append(np.array(g._data if m is tg else g.numpy())), g * 2.0)[1])
        k = h.exp()
        k.retain_grad()
        out = (k * h).sum()
        del h, k
        gc.collect()
        out.backward()
        results[m.__name__] = (seen[0], np.array(x.grad if m is tg else x.grad.numpy()))
    np.testing.assert_allclose(results["tinygrad_tx"][0], results["torch"][0], rtol=1e-14)
    np.testing.assert_allclose(results["tinygrad_tx"][1], results["torch"][1], rtol=1e-14)


def test_retained_grad_and_name_are_kept_on_live_tensors():
    x = tg.Tensor(np.ones(3), requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    h.name = "h"
    assert h._ctx.label == "h"       # the graph node carries the label for the study tools
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad, 2 * h._data)


# ============================================================================ traversal order

def test_input_used_directly_and_through_another_path():
    """``x / x.sum()``: x feeds the root op directly and through Sum; its gradient must collect
    both contributions before it is used (a node reached again deeper down runs later)."""
    rng = np.random.default_rng(2)
    x0, g = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for through_exp in (False, True):
        x = tg.Tensor(x0, requires_grad=True)
        xt = torch.tensor(x0, requires_grad=True, device=DEVICE)
        e, et = (x.exp(), xt.exp()) if through_exp else (x, xt)
        (e / e.sum(1, keepdim=True)).backward(g)
        (et / et.sum(1, keepdim=True)).backward(torch.tensor(g, device=DEVICE))
        np.testing.assert_allclose(x.grad, xt.grad.cpu().numpy(), rtol=1e-13)


_OPS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "sub": lambda a, b: a - b,
        "tanh": lambda a, b: a.tanh(), "mean_bcast": lambda a, b: a * b.mean(1, keepdim=True)}


@given(st.lists(st.tuples(st.sampled_from(sorted(_OPS)), st.integers(0, 10 ** 6), st.integers(0, 10 ** 6)),
                min_size=1, max_size=25),
       st.integers(0, 2 ** 31 - 1))
def test_random_dags_match_torch(program, seed):
    """Random DAGs over a pool of nodes (every new node may reuse any earlier one, several
    times): each leaf's gradient equals torch's, float64."""
    rng = np.random.default_rng(seed)
    leaves0 = [rng.standard_normal((3, 4)) * 0.5 for _ in range(3)]
    g = rng.standard_normal((3, 4))
    grads = []
    for m in (tg, torch):
        leaves = [m.tensor(a, requires_grad=True) for a in leaves0]
        pool = list(leaves)
        for op, i, j in program:
            pool.append(_OPS[op](pool[i % len(pool)], pool[j % len(pool)]))
        out = pool[-1]
        for extra in pool[len(leaves):-1:3]:      # several outputs feed the root
            out = out + extra
        out.backward(torch.tensor(g, device=DEVICE) if m is torch else g)
        grads.append([np.zeros((3, 4)) if t.grad is None else np.asarray(t.grad) for t in leaves])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


# ============================================================================ the broadcast reduction

@pytest.mark.parametrize("rows", [1, 2, 63, 64, 65, 127, 128, 1000, 4097])
def test_sum_rows_float32_is_accurate_and_float64_exact(rows):
    rng = np.random.default_rng(rows)
    a = (rng.standard_normal((rows, 37)) + 3.0).astype(np.float32)   # a mean: running sums drift
    ref = a.astype(np.float64).sum(axis=0)
    before = a.copy()
    got = sum_rows(a)
    np.testing.assert_array_equal(a, before)            # the input is not summed into
    assert got.dtype == np.float32 and got.shape == (37,)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    eps = np.finfo(np.float32).eps
    assert err <= (2 + np.log2(rows)) * eps
    running = np.add.accumulate(a, axis=0)[-1]          # NumPy's float32 sum down an axis
    assert err <= max(np.abs(running - ref).max() / np.abs(ref).max(), eps)
    a64 = a.astype(np.float64)
    np.testing.assert_array_equal(sum_rows(a64), a64.sum(axis=0))


@pytest.mark.parametrize("grad_shape,shape", [((4, 5, 3), (3,)), ((4, 5, 3), (5, 3)), ((4, 5, 3), (5, 1)),
                                              ((4, 5, 3), (1, 3)), ((2, 3), ()), ((200, 3), (3,)),
                                              ((0, 3), (3,)), ((4, 0, 3), (3,))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reduce_grad_to_input_sums_the_broadcast_axes(grad_shape, shape, dtype):
    rng = np.random.default_rng(3)
    g = rng.standard_normal(grad_shape).astype(dtype)
    got = reduce_grad_to_input(g, shape, np.dtype(dtype), "Op")
    t = torch.tensor(g.astype(np.float64), device=DEVICE)
    expect = t.sum_to_size(shape).cpu().numpy() if shape else t.sum().cpu().numpy()
    assert got.shape == shape and got.dtype == dtype
    np.testing.assert_allclose(got, expect, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-6)
    gt = np.ascontiguousarray(np.swapaxes(g, 0, -1)).swapaxes(0, -1)   # same values, not C-contiguous
    np.testing.assert_allclose(reduce_grad_to_input(gt, shape, np.dtype(dtype), "Op"), got,
                               rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-6)


# ============================================================================ size-dependent paths

@pytest.mark.parametrize("n_ids,vocab", [(64, 27), (512, 64), (40, 2000), (2048, 27)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_embedding_backward_dense_and_sparse_paths_match_torch(n_ids, vocab, dtype):
    """The embedding backward builds the one-hot matrix dense when V·N <= 2^15 and sparse
    above; the cases sit on both sides, with repeated ids and a padding row."""
    from reference.testing import check_parity
    from tinygrad_tx import functional as F
    rng = np.random.default_rng(n_ids + vocab)
    ids = rng.integers(0, min(vocab, 50), n_ids).reshape(-1, 8)    # at most 50 distinct rows: repeats
    w = rng.standard_normal((vocab, 16))
    check_parity("F.embedding", lambda t: F.embedding(ids, t, padding_idx=3),
                 lambda t: torch.nn.functional.embedding(torch.from_numpy(ids).to(DEVICE), t, padding_idx=3),
                 [w], dtype, seed=7)
