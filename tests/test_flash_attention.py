"""The tiled (flash-style) attention against torch's scaled_dot_product_attention."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, strategies as st

import tinygrad_tx as tg
from reference.testing import DEVICE, check_parity
from tinygrad_tx.testing.strategies import float_dtypes, seeds
from tinygrad_tx.ops.flash_attention import flash_attention


@st.composite
def attention_configs(draw):
    B, H = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    # at least two keys: with a single key softmax is constant and dL/dq is exactly zero
    Tq, Tk = draw(st.integers(1, 12)), draw(st.integers(2, 12))
    d, dv = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    mask = draw(st.sampled_from(["none", "causal", "bool", "float", "padding"]))
    if mask == "causal":
        Tq = Tk
    block_q, block_k = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    return B, H, Tq, Tk, d, dv, mask, block_q, block_k


@given(attention_configs(), float_dtypes, seeds)
def test_flash_matches_torch_sdpa(cfg, dtype, seed):
    B, H, Tq, Tk, d, dv, mask, bq, bk = cfg
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(s) for s in [(B, H, Tq, d), (B, H, Tk, d), (B, H, Tk, dv)])
    causal = mask == "causal"
    m = None
    if mask == "bool":
        m = rng.random((B, 1, Tq, Tk)) < 0.7
        m[..., :2] = True  # every query sees two keys: defined output and a non-zero dL/dq
    elif mask == "float":
        m = rng.standard_normal((Tq, Tk)).astype(dtype)
    elif mask == "padding":
        m = np.ones((B, 1, 1, Tk), bool)
        m[0, ..., rng.integers(2, Tk + 1):] = False
    tm = None if m is None else torch.tensor(m, device=DEVICE)
    check_parity("flash_attention",
                 lambda a, b, c: flash_attention(a, b, c, attn_mask=m, is_causal=causal, block_q=bq, block_k=bk),
                 lambda a, b, c: TF.scaled_dot_product_attention(a, b, c, attn_mask=tm, is_causal=causal),
                 [q, k, v], dtype, seed=seed)


def test_fully_masked_row_gives_zero_output_and_gradients():
    rng = np.random.default_rng(0)
    q = tg.Tensor(rng.standard_normal((1, 1, 3, 4)), requires_grad=True)
    k = tg.Tensor(rng.standard_normal((1, 1, 5, 4)), requires_grad=True)
    v = tg.Tensor(rng.standard_normal((1, 1, 5, 4)), requires_grad=True)
    m = np.ones((1, 1, 3, 5), bool)
    m[0, 0, 1] = False
    out = flash_attention(q, k, v, attn_mask=m, block_q=2, block_k=2)
    out.backward(rng.standard_normal(out.shape))
    assert np.all(out._data[0, 0, 1] == 0)
    assert np.all(q.grad[0, 0, 1] == 0)
    assert np.all(np.isfinite(k.grad)) and np.all(np.isfinite(v.grad))
    assert np.any(q.grad[0, 0, 0] != 0)


def test_gradcheck_tiled_with_mask():
    rng = np.random.default_rng(1)
    m = rng.random((5, 6)) < 0.8
    m[:, 0] = True
    tg.gradcheck(lambda a, b, c: flash_attention(a, b, c, attn_mask=m, block_q=2, block_k=4),
                 [rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 6, 2))])


def test_saved_memory_is_linear_in_sequence_length():
    """Only q, k, v, the output and one log-sum-exp per row are kept: no T x T array."""
    T, d = 256, 8
    rng = np.random.default_rng(2)
    q, k, v = (tg.Tensor(rng.standard_normal((1, 1, T, d)).astype(np.float32), requires_grad=True) for _ in range(3))
    before = tg.SavedMemory.current
    out = flash_attention(q, k, v, is_causal=True, block_q=64, block_k=64)
    held = tg.SavedMemory.current - before
    assert held == 4 * T * d * 4 + T * 8  # q, k, v, out (float32) + lse (float64: see FlashAttention.forward)
    assert held < T * T * 4  # far below one T x T float32 score matrix
    out.backward(np.ones(out.shape, np.float32))
    assert tg.SavedMemory.current == before


@pytest.mark.parametrize("shapes, message", [
    (((1, 4, 3), (1, 4, 2), (1, 4, 3)), "feature size"),
    (((1, 4, 3), (1, 5, 3), (1, 4, 3)), "key length"),
    (((2, 4, 3), (3, 4, 3), (3, 4, 3)), "do not broadcast"),
])
def test_bad_shapes_raise_value_error(shapes, message):
    q, k, v = (tg.Tensor(np.zeros(s)) for s in shapes)
    with pytest.raises(ValueError, match=message):
        flash_attention(q, k, v)


def test_bad_mask_shape_raises():
    q = tg.Tensor(np.zeros((1, 4, 3)))
    with pytest.raises(ValueError, match=r"attn_mask of shape \(3, 3\)"):
        flash_attention(q, q, q, attn_mask=np.ones((3, 3), bool))


@pytest.mark.parametrize("block_k", [1, 2, 8])
def test_a_query_that_sees_one_key_gets_an_exact_zero_score_gradient(block_k):
    """Regression (dev profile, test_models::test_encoder_parity[flash], float64 grad 1.22e-10 off
    torch's on a 2-token Encoder): D = G·O (FlashAttention's identity) is not rounded as the P of
    dS, so where one key dominates a row dP - D was rounding noise; D summed from the P and dP
    used makes causal row 0 (one key, P = 1) exactly 0, as torch's, in one key tile or several."""
    rng = np.random.default_rng(3)
    q, k, v = (tg.tensor(rng.standard_normal((2, 5, 3)), requires_grad=True) for _ in range(3))
    out = flash_attention(q, k, v, is_causal=True, block_q=2, block_k=block_k)
    out.backward(tg.tensor(rng.standard_normal(out.shape)))
    assert not q.grad.numpy()[:, 0].any()
    rng = np.random.default_rng(3)
    saturated = [rng.standard_normal((1, 3, 4)) * s for s in (4.0, 4.0, 1.0)]   # one key dominates
    check_parity(lambda a, b, c: flash_attention(a, b, c, block_q=1, block_k=block_k),
                 lambda a, b, c: TF.scaled_dot_product_attention(a, b, c), *saturated, dtype=np.float64)
