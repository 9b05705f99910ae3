"""The engine's array pool (``tinygrad_tx.buffers``): an array is handed out again only when
nothing else references it, the pool stays within its bounds, and a training step computes
exactly what it computes without the pool."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from tinygrad_tx import buffers
from tinygrad_tx.models import GPTLanguageModel

SHAPE = (128, 256)                     # 128 KiB of float32: above MIN_BYTES


@pytest.fixture(autouse=True)
def _empty_pool():
    buffers.empty_cache()
    yield
    buffers.empty_cache()


def test_a_free_array_is_reused_and_small_ones_are_not_pooled():
    a = buffers.empty(SHAPE, np.float32)
    assert a.shape == SHAPE and a.dtype == np.float32 and a.flags.c_contiguous
    first = id(a)
    del a
    b = buffers.empty(SHAPE, np.float32)
    assert id(b) == first                                   # the same array, no fresh pages
    assert buffers.empty(SHAPE, np.float64) is not b        # dtype is part of the key
    small = buffers.empty((4, 4), np.float32)
    assert small.nbytes < buffers.MIN_BYTES and buffers.stats()["arrays"] == 2


@pytest.mark.cpu_only(reason="torch.from_numpy shares the array's memory on the CPU: the holder under test")
@pytest.mark.parametrize("holder", ["name", "view", "tensor", "torch", "memoryview"])
def test_a_referenced_array_is_never_handed_out(holder):
    a = buffers.empty(SHAPE, np.float32)
    a[...] = 7.0
    keep = {"name": lambda: a, "view": lambda: a[3:, ::2], "tensor": lambda: tg.from_numpy(a),
            "torch": lambda: torch.from_numpy(a), "memoryview": lambda: memoryview(a)}[holder]()
    del a
    for _ in range(3):
        b = buffers.empty(SHAPE, np.float32)
        b[...] = -1.0                                       # would overwrite a shared array
        view = np.asarray(keep.numpy() if isinstance(keep, (tg.Tensor, torch.Tensor)) else keep)
        assert np.all(view == 7.0), f"{holder}: a referenced pooled array was handed out again"


def test_an_array_saved_for_backward_is_never_handed_out():
    """u = x + z comes from the pool; sin saves it; with the tensor u gone, only the graph holds
    the array, and the backward still reads cos(x + z)."""
    rng = np.random.default_rng(0)
    x, z = (tg.from_numpy(rng.standard_normal(SHAPE).astype(np.float32)).requires_grad_() for _ in range(2))
    u = x + z
    expected = np.cos(u.detach().numpy())
    v = u.sin()
    del u
    for _ in range(3):
        buffers.empty(SHAPE, np.float32)[...] = -1.0
    v.backward(np.ones(SHAPE, np.float32))
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_bounds_and_empty_cache(monkeypatch):
    monkeypatch.setattr(buffers, "MAX_ARRAYS", 3)
    live = [buffers.empty(SHAPE, np.float32) for _ in range(5)]
    assert buffers.stats()["arrays"] == 3                   # the rest are plain np.empty
    monkeypatch.setattr(buffers, "MAX_BYTES", buffers.stats()["held_bytes"])
    extra = buffers.empty((256, 256), np.float32)
    assert buffers.stats()["shapes"] == 1 and extra.shape == (256, 256)
    del live[0]
    s = buffers.stats()
    assert s["free_bytes"] == 128 * 256 * 4 and s["held_bytes"] == 3 * 128 * 256 * 4
    assert buffers.empty_cache() == 128 * 256 * 4
    assert buffers.stats() == {"held_bytes": 2 * 128 * 256 * 4, "free_bytes": 0, "arrays": 2, "shapes": 1}


def test_threads_never_share_an_array():
    errors = []

    def work(value):
        for _ in range(300):
            a = buffers.empty(SHAPE, np.float32)
            a.fill(value)
            if not np.all(a == value):
                errors.append(value)

    threads = [threading.Thread(target=work, args=(float(v),)) for v in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _train(steps):
    tg.manual_seed(0)
    model = GPTLanguageModel(27, d_model=64, n_heads=4, n_layers=2, block_size=16, dropout=0.1)
    opt = tg.optim.AdamW(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    idx, tgt = (tg.from_numpy(rng.integers(0, 27, size=(32, 16))) for _ in range(2))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = model(idx, tgt)[1]
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


def test_training_is_identical_with_and_without_the_pool(monkeypatch):
    """A GPT (dropout on) trained 4 AdamW steps: losses and parameters bit-identical with the pool
    and with every array from plain np.empty; once warm, a step adds no array to the pool."""
    pooled = _train(4)
    held = buffers.stats()["arrays"]
    assert held > 10                                        # the forward's activations are pooled
    _train(4)
    assert buffers.stats()["arrays"] == held                # reused, not added to
    monkeypatch.setattr(buffers, "MIN_BYTES", float("inf"))
    plain = _train(4)
    assert pooled[0] == plain[0]
    assert all(np.array_equal(a, b) for a, b in zip(pooled[1], plain[1]))


_LAYOUTS = {
    "contiguous": lambda a: a,
    "2-D transposed": lambda a: a.reshape(512, 256).T,
    "last two transposed": lambda a: a.reshape(8, 128, 128).transpose(0, 2, 1),
    "last axis moved first": lambda a: a.reshape(32, 64, 64).transpose(2, 0, 1),
    "heads permuted (last axis stays)": lambda a: a.reshape(8, 16, 16, 64).transpose(0, 2, 1, 3),
    "every other column": lambda a: a.reshape(256, 512)[:, ::2],
    "flipped": lambda a: a.reshape(512, 256)[::-1].T,
    "broadcast": lambda a: np.broadcast_to(a[:256], (512, 256)).T,
    "ragged tiles": lambda a: a[:333 * 393].reshape(333, 393).T,
    "0-d": lambda a: a[0, ...] if a.ndim else a,
}


@pytest.mark.parametrize("dtype", [None, np.float32, np.float16])
@pytest.mark.parametrize("pooled", [True, False])
@pytest.mark.parametrize("layout", sorted(_LAYOUTS))
def test_copy_is_numpys_copy_for_every_layout(layout, pooled, dtype):
    """``buffers.copy`` is ``np.array(x, dtype, order="C", copy=True)`` whatever the source's
    layout: the tiled path (a large source whose fastest memory axis is not its last) included."""
    base = np.random.default_rng(0).standard_normal(131072)
    x = _LAYOUTS[layout](base)
    want = np.array(x, dtype=dtype, order="C", copy=True)
    got = buffers.copy(x, dtype, pooled=pooled)
    assert got.flags.c_contiguous and got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want) and not np.shares_memory(got, x)
    assert (buffers._tile_axis(x) is not None) == (layout in ("2-D transposed", "last two transposed",
                                                 "last axis moved first", "ragged tiles"))


def test_a_transposed_gradient_reaches_grad_and_clone_unchanged():
    """The engine's copies that take the tiled path: a leaf's first gradient arriving transposed
    (``.grad`` is a fresh array, never a pooled one) and ``contiguous()`` of a transposed tensor."""
    a = np.random.default_rng(1).standard_normal((300, 400)).astype(np.float32)
    g = np.random.default_rng(2).standard_normal((400, 300)).astype(np.float32)
    x = tg.tensor(a, requires_grad=True)
    y = x.t().contiguous()
    assert y._data.flags.c_contiguous and np.array_equal(y._data, a.T)
    y.backward(tg.tensor(g))
    assert np.array_equal(x.grad._data, g.T) and x.grad._data.flags.c_contiguous
    held = {id(arr) for arrays in buffers._lists.values() for arr in arrays}
    assert id(x.grad._data) not in held


def test_blas_operand_copies_only_a_strided_stack_with_enough_rows():
    """``blas_operand``: a non-contiguous stack (kᵀ, a head of a qkv view) with at least
    BLAS_COPY_ROWS rows on the left is copied to C order; a 2-D matrix, a broadcast (zero
    stride), a contiguous stack or a short product is passed as it is."""
    rng = np.random.default_rng(0)
    k = rng.standard_normal((2, 3, 128, 32)).astype(np.float32)
    kt = np.swapaxes(k, -1, -2)
    copied = buffers.blas_operand(kt, 128)
    assert copied is not kt and copied.flags.c_contiguous and np.array_equal(copied, kt)
    assert buffers.blas_operand(kt, buffers.BLAS_COPY_ROWS - 1) is kt
    assert buffers.blas_operand(k, 128) is k
    w = rng.standard_normal((64, 32)).astype(np.float32)
    wt = w.T
    assert buffers.blas_operand(wt, 128) is wt
    wide = np.broadcast_to(w.T, (5, 32, 64))
    assert buffers.blas_operand(wide, 128) is wide


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_of_strided_stacks_equals_torch(dtype):
    """q @ kᵀ and p @ v with q, k, v heads of one qkv array (the naive attention's products, which
    take blas_operand's copy), forward and both gradients, against torch."""
    from reference.testing import DEVICE
    rng = np.random.default_rng(1)
    B, T, H, E = 2, 96, 2, 8
    qkv = rng.standard_normal((B, T, 3 * H * E))
    g = rng.standard_normal((B, H, T, E))

    def run(lib, make):
        x = make(qkv)
        q, k, v = (t.reshape(B, T, H, E).transpose(1, 2) for t in x.split(H * E, dim=2))
        y = (q @ k.transpose(-2, -1)) @ v
        (dx,) = lib.autograd.grad(y, x, make(g))
        return y.detach().cpu().numpy(), dx.cpu().numpy()

    ours = run(tg, lambda a: tg.tensor(a.astype(dtype), requires_grad=True))
    theirs = run(torch, lambda a: torch.tensor(a.astype(dtype), device=DEVICE, requires_grad=True))
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.abs(b).max())
    assert np.abs(theirs[1]).max() > 1e-3
