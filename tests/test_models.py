"""The tutorial's models (``tinygrad_tx.models``) against their PyTorch twins (``reference/``).

For every architecture hypothesis draws a configuration and inputs; our model gets random
weights, the twin receives them through ``state_dict``; then ``check_parity`` compares, with a
random cotangent, the output (logits and loss concatenated) and the gradients of every float
input and of **every parameter** (passed in as inputs through ``functional_call``), in
float64 (relative error <= 1e-10 per tensor) and float32 (our worst error vs a float64 oracle
no worse than 4x the worst torch float32 makes on the same and on neighbouring inputs; see
``check_parity_model``, also for the flash kernel's looser bound). Our attention
implementation (fused / naive / flash) is drawn too; the twin always runs the tutorial's
masked_fill + softmax code.

Also: our ``MultiHeadAttention`` against ``torch.nn.MultiheadAttention`` (weights mapped),
state-dict round trips ours -> torch -> ours (tied weights stay tied, non-persistent
buffers stay out), the baselines, dropout modes, and the ValueErrors for bad input.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import reference as R
import tinygrad_tx as tg
import reference.testing as parity
from reference.testing import DEVICE, F32_FLOOR, F32_RATIO, check_parity, rel_err, to_numpy, to_torch
from tinygrad_tx.testing.strategies import seeds
from tinygrad_tx import models as M
from tinygrad_tx import nn as tnn

# Tiny tensors: torch's intra-op threads only contend for the cores (7x slower on 2 shared cores).
torch.set_num_threads(1)

FLASH_F32_RTOL = 1e-3   # see check_parity_model

NAMES = Path(__file__).resolve().parents[2] / "shared" / "data" / "names.txt"


# ============================================================================ harness

def _caller(base):
    """A module class (on ``base``) wrapping ``fn(model, *args)`` -- a forward, ``classify``,
    ``masked_lm`` -- as a module call, so ``functional_call`` can swap the model's parameters
    for test inputs."""
    class Call(base):
        def __init__(self, model, fn):
            super().__init__()
            self.model = model
            self.fn = fn

        def forward(self, *args):
            return self.fn(self.model, *args)
    return Call


_OursCall, _TwinCall = _caller(tnn.Module), _caller(torch.nn.Module)


def _flat_ours(outs):
    outs = [o for o in (outs if isinstance(outs, tuple) else (outs,)) if o is not None]
    return outs[0] if len(outs) == 1 else tg.cat([o.reshape(-1) for o in outs])


def _flat_torch(outs):
    outs = [o for o in (outs if isinstance(outs, tuple) else (outs,)) if o is not None]
    return outs[0] if len(outs) == 1 else torch.cat([o.reshape(-1) for o in outs])


def check_parity_model(name, ours_fn, torch_fn, inputs, seed, grad, flash=False, ours_samples=3, torch_samples=8):
    """float64: ``check_parity`` (every output and gradient within 1e-10 relative).

    float32, for a whole model: a float64 torch run on the same float32 inputs is the oracle.
    A small model's float32 error is decided by a handful of roundings amplified by the
    model's conditioning, so it is a heavy-tailed random variable: for one 1-token Encoder
    torch float32's worst relative error ranged from 7.3e-7 to 5.2e-6 over eight neighbouring
    inputs (every float moved by under one ulp). One draw of torch's error is no yardstick. The
    bound is therefore set by the range torch spans: the problem is solved for the inputs and
    for neighbours (every float input moved by up to two float32 ulps), ours on the first
    ``ours_samples``, torch on ``torch_samples``, and our worst relative error over outputs and
    all gradients must not exceed 4x torch float32's worst (+ a few ulps). A real bug (a lost
    term, a float64 detour, a wrong dtype) lands orders of magnitude above.

    ``flash``: our tiled flash kernel took softmax's row term from the output, D = G . O
    (FlashAttention's identity), where torch (and our fused op) sums P dP. Where a query sees a
    single key (row 0 of every causal attention) dP - D was then rounding noise instead of an
    exact 0, and in tiny models whose query/key gradients are small it dominated them: we
    measured up to 2.4e-4 relative on a k-projection gradient of a 2-token model (torch:
    1.2e-7), and float64 1.2e-10 (over the 1e-10 bound) on a 2-token Encoder. The kernel now
    sums P dP too (ops/flash_attention.py); the float32 bound FLASH_F32_RTOL for the flash path
    is kept until measured again; float64 parity (1e-10) proves its arithmetic exact.
    """
    check_parity(name, ours_fn, torch_fn, inputs, np.float64, seed=seed, grad=grad)
    diff = [i in grad for i in range(len(inputs))]
    labels = ["output"] + [f"grad[{i}]" for i in range(len(inputs)) if diff[i]]
    rng = np.random.default_rng(seed + 1)
    eps = float(np.finfo(np.float32).eps)
    base = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in inputs]
    g = None
    worst_ours, worst_torch, where = 0.0, 0.0, ""
    for k in range(max(ours_samples, torch_samples)):
        f32 = base if k == 0 else [
            (a * (1 + 2 * eps * rng.uniform(-1, 1, a.shape))).astype(np.float32) if a.dtype.kind == "f" else a
            for a in base]
        as64 = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in f32]
        if k < ours_samples:
            ours_in = [tg.Tensor(a, requires_grad=d) for a, d in zip(f32, diff)]
            out = ours_fn(*ours_in)
            if g is None:
                g = np.random.default_rng(seed).standard_normal(out.shape).astype(np.float32)
            out.backward(g)
            ours = [out._data] + [t.grad for t, d in zip(ours_in, diff) if d]
            assert all(a.dtype == np.float32 for a in ours), f"{name}: float32 inputs gave {[a.dtype for a in ours]}"
        oracle = _flat_results(parity._run_torch(torch_fn, as64, np.float64, diff, g.astype(np.float64)))
        if k < torch_samples:
            torch32 = _flat_results(parity._run_torch(torch_fn, f32, np.float32, diff, g))
            worst_torch = max(worst_torch, max(rel_err(a, b) for a, b in zip(torch32, oracle)))
        if k < ours_samples:
            e_ours = [rel_err(a, b) for a, b in zip(ours, oracle)]
            i = int(np.argmax(e_ours))
            if e_ours[i] > worst_ours:
                worst_ours, where = e_ours[i], f"{labels[i]} of sample {k}"
    if flash:
        assert worst_ours <= max(F32_RATIO * worst_torch + F32_FLOOR, FLASH_F32_RTOL), (
            f"{name} float32: our worst error {worst_ours:.3g} ({where}) exceeds {FLASH_F32_RTOL:g} and 4x torch "
            f"float32's worst {worst_torch:.3g}")
    else:
        assert worst_ours <= F32_RATIO * worst_torch + F32_FLOOR, (
            f"{name} float32: our worst error {worst_ours:.3g} ({where}) vs torch float32's worst "
            f"{worst_torch:.3g} over {torch_samples} neighbouring problems (allowed {F32_RATIO:g}x + {F32_FLOOR:.2g})")
    parity._record(name, "float32", worst_ours, worst_torch)


def _flat_results(result):
    out, grads = result
    return [out] + list(grads)


def perturb(model, seed):
    """Move every parameter off its initial value (LayerNorm's ones and zeros, the zero [CLS]
    token) so that no gradient path is tested at a degenerate point."""
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        p._data[...] += (0.3 * rng.standard_normal(p.shape)).astype(p.dtype)


def build_pair(build, seed, ours_kw=None, prepare=None):
    """Our model (random weights, eval mode) and its twin loaded from our state_dict;
    ``prepare(ours)`` may adjust the weights first."""
    tg.manual_seed(seed)
    torch.manual_seed(seed)
    ours = build(M, **(ours_kw or {}))
    perturb(ours, seed)
    if prepare is not None:
        prepare(ours)
    twin = build(R)
    twin.load_state_dict(ours.state_dict())   # our arrays straight into the torch twin
    return ours.eval(), twin.to(DEVICE).eval()


def check_model(name, build, call, data, seed, ours_kw=None, unused=(), may_be_zero=(), zero_inputs=(),
                prepare=None):
    """check_parity on ``call(model, *data)`` with every used parameter as an input.

    ``build(lib, **kw)`` builds the model from ``lib`` (``tinygrad_tx.models`` or
    ``reference``); ``call(model, *tensors)`` returns an output or a tuple (logits, loss);
    ``unused``: name prefixes of parameters this call does not touch (e.g. the MLM head when
    classifying); ``may_be_zero``: regexes of parameter names whose gradient is exactly zero
    in exact arithmetic (the query/key projections of an attention in which every query sees
    one key only: its softmax is the constant 1), and ``zero_inputs``: indices into ``data``
    of such inputs (the queries of such a cross-attention). Their computed gradients are pure
    rounding noise, so they are left out of the comparison.
    """
    ours, twin = build_pair(build, seed, ours_kw, prepare)
    ours_names = [n for n, _ in ours.named_parameters()]
    assert ours_names == [n for n, _ in twin.named_parameters()]
    names = [n for n in ours_names if not n.startswith(tuple(unused))] if unused else ours_names
    params = dict(ours.named_parameters())
    weights = [params[n]._data.copy() for n in names]
    ours_w = _OursCall(ours, call)
    k = len(names)

    def ours_fn(*ts):
        return _flat_ours(tnn.functional_call(ours_w, {"model." + n: t for n, t in zip(names, ts[:k])}, ts[k:]))

    def torch_fn_of(model):
        wrapped = _TwinCall(model, call)

        def torch_fn(*ts):
            return _flat_torch(torch.func.functional_call(
                wrapped, {"model." + n: t for n, t in zip(names, ts[:k])}, tuple(ts[k:])))
        return torch_fn

    zero = {i for i, n in enumerate(names) if any(re.search(z, n) for z in may_be_zero + (KEY_BIAS,))}
    zero |= {k + i for i in zero_inputs}
    inputs = weights + list(data)
    grad = {i for i, a in enumerate(inputs) if a.dtype.kind == "f"} - zero
    check_parity_model(name, ours_fn, torch_fn_of(twin), inputs, seed, grad,
                       flash=(ours_kw or {}).get("attn_impl") == "flash")


def one_key_each(T_k, padding=None):
    """True when every query of a non-causal attention over T_k keys sees exactly one key."""
    return T_k == 1 or (padding is not None and padding.sum(-1).max() == 1)


QK = (r"(^|\.)[qk]_proj\.",)
# The key projection's bias adds q.b_k to every score of a query row, and softmax ignores a
# shift shared by the row: its gradient is exactly zero, so only rounding noise is left to
# compare. It is checked to be ~0 in test_key_bias_gets_no_gradient instead. (GPT's fused
# c_attn.bias holds b_k too, next to b_q and b_v, whose gradients dominate its comparison.)
KEY_BIAS = r"(^|\.)k_proj\.bias$"


def ids(rng, vocab, shape):
    return rng.integers(0, vocab, size=shape).astype(np.int64)


def lm_targets(rng, vocab, B, T, kind):
    """None, (B,) last-position targets, or (B, T) targets with some -100 (at least one kept)."""
    if kind == "none":
        return None
    if kind == "last":
        return ids(rng, vocab, (B,))
    t = ids(rng, vocab, (B, T))
    t[rng.random((B, T)) < 0.3] = -100
    t[0, 0] = rng.integers(0, vocab)
    return t


def right_padding(rng, B, T):
    """(B, T) bool padding mask, True = real token: a random length >= 1 per row."""
    lengths = rng.integers(1, T + 1, size=B)
    return np.arange(T)[None, :] < lengths[:, None]


def with_targets(targets):
    return () if targets is None else (targets,)


@st.composite
def heads_and_width(draw, max_heads=3, max_dk=4):
    """(n_heads, d_model), d_model = n_heads * d_k >= 4: LayerNorm over one feature is constant and
    over two features it is ill-conditioned (x-hat is +-1 whatever the input)."""
    n_heads = draw(st.integers(1, max_heads))
    d_k = draw(st.integers(-(-4 // n_heads), max_dk))
    return n_heads, n_heads * d_k


# ============================================================================ GPT family

@given(hw=heads_and_width(), vocab=st.integers(2, 12), n_layers=st.integers(1, 2), block_size=st.integers(1, 8),
       data=st.data(), impl=st.sampled_from(M.ATTN_IMPLS), kind=st.sampled_from(["none", "last", "all"]),
       seed=seeds)
def test_gpt_language_model_parity(hw, vocab, n_layers, block_size, data, impl, kind, seed):
    n_heads, d_model = hw
    T = data.draw(st.integers(1, block_size), label="T")
    B = data.draw(st.integers(1, 3), label="B")
    rng = np.random.default_rng(seed)
    idx, targets = ids(rng, vocab, (B, T)), lm_targets(rng, vocab, B, T, kind)
    check_model(f"GPTLanguageModel[{impl}]",
                lambda lib, **kw: lib.GPTLanguageModel(vocab, d_model, n_heads, n_layers, block_size, 0.1, **kw),
                lambda m, *a: m(*a), (idx,) + with_targets(targets), seed, {"attn_impl": impl})


@given(hw=heads_and_width(), block_size=st.integers(1, 6), data=st.data(),
       module=st.sampled_from(["CausalSelfAttention", "FeedForward", "TransformerBlock"]),
       impl=st.sampled_from(M.ATTN_IMPLS), seed=seeds)
def test_gpt_blocks_parity(hw, block_size, data, module, impl, seed):
    n_heads, d_model = hw
    T = data.draw(st.integers(1, block_size), label="T")
    B = data.draw(st.integers(1, 3), label="B")
    x = np.random.default_rng(seed).standard_normal((B, T, d_model))

    def build(lib, **kw):
        if module == "FeedForward":
            return lib.FeedForward(d_model, 0.1)
        return getattr(lib, module)(d_model, n_heads, block_size, 0.1, **kw)
    check_model(f"{module}[{impl}]", build, lambda m, x: m(x), (x,), seed,
                None if module == "FeedForward" else {"attn_impl": impl})


# ============================================================================ attention

@st.composite
def attention_case(draw):
    """A MultiHeadAttention configuration with inputs and masks that leave every query a key."""
    n_heads, d_model = draw(heads_and_width())
    B, T_q = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    cross = draw(st.booleans())
    T_k = draw(st.integers(1, 5).filter(lambda t: t != T_q)) if cross else T_q
    causal = draw(st.booleans())
    use_padding = draw(st.booleans())
    mask_shape = draw(st.sampled_from([None, (T_q, T_k), (B, 1, T_q, T_k), (1, n_heads, T_q, T_k), (T_k,)]))
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    # key j0 stays visible to every query (key 0 when causal: row 0 sees only key 0)
    j0 = 0 if causal else int(rng.integers(0, T_k))
    padding = None
    if use_padding:
        padding = rng.random((B, T_k)) < 0.6
        padding[:, j0] = True
    attn_mask = None
    if mask_shape is not None:
        attn_mask = rng.random(mask_shape) < 0.6
        attn_mask[..., j0] = True
    x = rng.standard_normal((B, T_q, d_model))
    context = rng.standard_normal((B, T_k, d_model)) if cross else None
    return dict(n_heads=n_heads, d_model=d_model, causal=causal, x=x, context=context, padding=padding,
                attn_mask=attn_mask, seed=seed, bias=draw(st.booleans()), impl=draw(st.sampled_from(M.ATTN_IMPLS)))


def visible_keys(c):
    """The (B, heads, T_q, T_k) "may attend" mask of an attention_case."""
    B, T_q, _ = c["x"].shape
    T_k = T_q if c["context"] is None else c["context"].shape[1]
    full = np.ones((B, c["n_heads"], T_q, T_k), dtype=bool)
    if c["causal"]:
        full &= np.tril(np.ones((T_q, T_k), dtype=bool))
    if c["attn_mask"] is not None:
        full &= c["attn_mask"]
    if c["padding"] is not None:
        full &= c["padding"][:, None, None, :]
    return full


@given(case=attention_case())
def test_multi_head_attention_parity(case):
    c = case
    data = (c["x"],) + (() if c["context"] is None else (c["context"],))

    one_key = (visible_keys(c).sum(-1) == 1).all()   # then the output ignores the queries

    def call(m, x, context=None):
        return m(x, context, padding_mask=c["padding"], attn_mask=c["attn_mask"])
    check_model(f"MultiHeadAttention[{c['impl']}]",
                lambda lib, **kw: lib.MultiHeadAttention(c["d_model"], c["n_heads"], 0.1, c["causal"], c["bias"], **kw),
                call, data, c["seed"], {"attn_impl": c["impl"]},
                may_be_zero=QK if one_key else (), zero_inputs=(0,) if one_key and c["context"] is not None else ())


@pytest.mark.parametrize("impl", M.ATTN_IMPLS)
def test_key_bias_gets_no_gradient(impl):
    """softmax(s + c) = softmax(s) for a shift c shared by a row, and q.b_k is such a shift."""
    tg.manual_seed(0)
    mha = M.MultiHeadAttention(8, 2, attn_impl=impl).double()
    perturb(mha, 0)
    x = tg.Tensor(np.random.default_rng(0).standard_normal((2, 5, 8)))
    out = mha(x, tg.Tensor(np.random.default_rng(1).standard_normal((2, 3, 8))))
    out.backward(np.random.default_rng(2).standard_normal(out.shape))
    assert np.abs(mha.k_proj.bias.grad).max() <= 1e-13 * np.abs(mha.q_proj.bias.grad).max()
    assert np.abs(mha.q_proj.bias.grad).max() > 1e-3


@given(case=attention_case())
def test_multi_head_attention_matches_torch_multihead_attention(case):
    """Ours against torch.nn.MultiheadAttention: in_proj_weight = [W_q; W_k; W_v], masks inverted
    (torch's key_padding_mask and bool attn_mask mark what may NOT be attended)."""
    c = case
    tg.manual_seed(c["seed"])
    ours = M.MultiHeadAttention(c["d_model"], c["n_heads"], 0.0, c["causal"], c["bias"], attn_impl=c["impl"])
    perturb(ours, c["seed"])
    ref = torch.nn.MultiheadAttention(c["d_model"], c["n_heads"], bias=c["bias"], batch_first=True).to(DEVICE)
    B, T_q, _ = c["x"].shape
    T_k = T_q if c["context"] is None else c["context"].shape[1]
    c_no_padding = dict(c, padding=None)
    forbid = to_torch((~visible_keys(c_no_padding)).reshape(B * c["n_heads"], T_q, T_k))
    key_padding = None if c["padding"] is None else to_torch(~c["padding"])
    names = ["q_proj.weight", "k_proj.weight", "v_proj.weight", "out_proj.weight"]
    if c["bias"]:
        names += ["q_proj.bias", "k_proj.bias", "v_proj.bias", "out_proj.bias"]
    params = dict(ours.named_parameters())
    weights = [params[n]._data.copy() for n in names]
    x, context = c["x"], (c["x"] if c["context"] is None else c["context"])
    cross = c["context"] is not None

    def ours_fn(*ts):
        *w, xq, xkv = ts
        return tnn.functional_call(ours, dict(zip(names, w)), (xq, xkv if cross else None),
                                   {"padding_mask": c["padding"], "attn_mask": c["attn_mask"]})

    def torch_fn(*ts):
        *w, xq, xkv = ts
        xkv = xkv if cross else xq
        p = {"in_proj_weight": torch.cat(w[:3]), "out_proj.weight": w[3]}
        if c["bias"]:
            p.update({"in_proj_bias": torch.cat(w[4:7]), "out_proj.bias": w[7]})
        return torch.func.functional_call(ref, p, (xq, xkv, xkv), {
            "key_padding_mask": key_padding, "attn_mask": forbid, "need_weights": False})[0]

    grad = set(range(len(weights) + (2 if cross else 1)))      # self-attention: x is passed once
    grad -= {i for i, n in enumerate(names) if re.search(KEY_BIAS, n)}
    if (visible_keys(c).sum(-1) == 1).all():   # the output ignores the queries (see check_model)
        grad -= {i for i, n in enumerate(names) if re.search(QK[0], n)} | ({len(names)} if cross else set())
    check_parity_model(f"MultiHeadAttention~nn.MultiheadAttention[{c['impl']}]", ours_fn, torch_fn,
                       weights + [x, context], c["seed"], grad, flash=c["impl"] == "flash")


# ============================================================================ encoder, encoder-decoder

@given(hw=heads_and_width(), vocab=st.integers(2, 10), n_layers=st.integers(1, 2), block_size=st.integers(1, 7),
       num_classes=st.integers(2, 4), tie=st.booleans(), head=st.sampled_from(["classify", "masked_lm"]),
       with_loss=st.booleans(), padded=st.booleans(), impl=st.sampled_from(M.ATTN_IMPLS), data=st.data(), seed=seeds)
def test_encoder_parity(hw, vocab, n_layers, block_size, num_classes, tie, head, with_loss, padded, impl, data,
                        seed):
    n_heads, d_model = hw
    T = data.draw(st.integers(1, block_size), label="T")
    B = data.draw(st.integers(1, 3), label="B")
    rng = np.random.default_rng(seed)
    idx = ids(rng, vocab, (B, T))
    padding = right_padding(rng, B, T) if padded else None
    if head == "classify":
        targets = ids(rng, num_classes, (B,)) if with_loss else None
        unused = ("mlm_head.bias",) if tie else ("mlm_head",)
    else:
        targets = lm_targets(rng, vocab, B, T, "all") if with_loss else None
        unused = ("pooler", "classifier")

    def call(m, idx, *t):
        return getattr(m, head)(idx, padding, *t)
    check_model(f"Encoder.{head}[{impl}]",
                lambda lib, **kw: lib.Encoder(vocab, d_model, n_heads, n_layers, block_size, num_classes, 0.1, tie,
                                              **kw),
                call, (idx,) + with_targets(targets), seed, {"attn_impl": impl}, unused,
                may_be_zero=QK if one_key_each(T, padding) else ())


@given(hw=heads_and_width(), src_vocab=st.integers(2, 9), tgt_vocab=st.integers(2, 9), layers=st.tuples(
       st.integers(1, 2), st.integers(1, 2)), sizes=st.tuples(st.integers(1, 6), st.integers(1, 6)),
       kind=st.sampled_from(["none", "last", "all"]), padded=st.booleans(),
       impl=st.sampled_from(M.ATTN_IMPLS), data=st.data(), seed=seeds)
def test_encoder_decoder_parity(hw, src_vocab, tgt_vocab, layers, sizes, kind, padded, impl, data, seed):
    n_heads, d_model = hw
    src_block, tgt_block = sizes
    T_s = data.draw(st.integers(1, src_block), label="T_src")
    T_t = data.draw(st.integers(1, tgt_block), label="T_tgt")
    B = data.draw(st.integers(1, 3), label="B")
    rng = np.random.default_rng(seed)
    src, tgt = ids(rng, src_vocab, (B, T_s)), ids(rng, tgt_vocab, (B, T_t))
    targets = lm_targets(rng, tgt_vocab, B, T_t, kind)
    src_pad = right_padding(rng, B, T_s) if padded else None
    tgt_pad = right_padding(rng, B, T_t) if padded else None

    def call(m, src, tgt, *t):
        return m(src, tgt, src_pad, tgt_pad, *t)
    check_model(f"EncoderDecoder[{impl}]",
                lambda lib, **kw: lib.EncoderDecoder(src_vocab, tgt_vocab, d_model, n_heads, layers[0], layers[1],
                                                     tgt_block, src_block, 0.1, **kw),
                call, (src, tgt) + with_targets(targets), seed, {"attn_impl": impl},
                # one source key: the cross-attention output ignores its queries, and so ln2 before it
                may_be_zero=((r"^encoder\..*\.attn\.[qk]_proj", r"cross_attn\.[qk]_proj", r"^decoder\..*\.ln2\.")
                             if one_key_each(T_s, src_pad) else ())
                + ((r"self_attn\.[qk]_proj",) if one_key_each(T_t, tgt_pad) else ()))


# ============================================================================ ViT

@given(hw=heads_and_width(), grid=st.tuples(st.integers(1, 3), st.integers(1, 3)), patch=st.integers(1, 3),
       channels=st.integers(1, 3), num_classes=st.integers(2, 5), n_layers=st.integers(1, 2),
       with_loss=st.booleans(), impl=st.sampled_from(M.ATTN_IMPLS), B=st.integers(1, 2), seed=seeds)
def test_vit_parity(hw, grid, patch, channels, num_classes, n_layers, with_loss, impl, B, seed):
    n_heads, d_model = hw
    size = (grid[0] * patch, grid[1] * patch)
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((B, channels) + size)
    targets = ids(rng, num_classes, (B,)) if with_loss else None
    check_model(f"ViT[{impl}]",
                lambda lib, **kw: lib.ViT(size, patch, channels, num_classes, d_model, n_heads, n_layers, 0.1, **kw),
                lambda m, *a: m(*a), (images,) + with_targets(targets), seed, {"attn_impl": impl})


def test_vit_patch_projection_is_the_tutorials_conv2d():
    """patch_embed.proj is a Conv2d(in_channels, d_model, kernel_size=P, stride=P) in both twins."""
    ours, twin = build_pair(lambda lib, **kw: lib.ViT(8, 4, 3, 2, 8, 2, 1, **kw), 0)
    assert isinstance(twin.patch_embed.proj, torch.nn.Conv2d)
    assert twin.patch_embed.proj.kernel_size == twin.patch_embed.proj.stride == (4, 4)
    assert isinstance(ours.patch_embed.proj, tnn.Conv2d)
    assert ours.patch_embed.proj.kernel_size == ours.patch_embed.proj.stride == (4, 4)
    assert ours.patch_embed.proj.weight.shape == (8, 3, 4, 4)
    assert ours.pos_embedding.shape == (1, 5, 8) and ours.cls_token.shape == (1, 1, 8)


# ============================================================================ baselines

@given(vocab=st.integers(2, 9), shape=st.sampled_from(["1d", "2d"]), kind=st.sampled_from(["none", "last", "all"]),
       B=st.integers(1, 4), T=st.integers(1, 5), seed=seeds)
def test_neural_bigram_parity(vocab, shape, kind, B, T, seed):
    rng = np.random.default_rng(seed)
    if shape == "1d":
        idx = ids(rng, vocab, (B,))
        targets = None if kind == "none" else ids(rng, vocab, (B,))
    else:
        idx, targets = ids(rng, vocab, (B, T)), lm_targets(rng, vocab, B, T, kind)
    check_model("NeuralBigram", lambda lib, **kw: lib.NeuralBigram(vocab), lambda m, *a: m(*a),
                (idx,) + with_targets(targets), seed)


def test_neural_bigram_lookup_is_one_hot_matmul():
    """Row lookup in logits_table == one_hot(idx) @ W, the tutorial's section-5.1 equivalence."""
    tg.manual_seed(3)
    m = M.NeuralBigram(7)
    idx = np.array([[0, 6, 2], [2, 2, 5]])
    one_hot = np.eye(7, dtype=np.float32)[idx]
    assert np.array_equal(m(idx)[0]._data, one_hot @ m.logits_table.weight._data)


@given(vocab=st.integers(2, 9), block_size=st.integers(1, 5), d_model=st.integers(1, 4), hidden=st.integers(4, 8),
       activation=st.sampled_from(["tanh", "relu", "gelu"]), with_loss=st.booleans(), B=st.integers(1, 4), seed=seeds)
def test_flatten_mlp_parity(vocab, block_size, d_model, hidden, activation, with_loss, B, seed):
    rng = np.random.default_rng(seed)
    idx = ids(rng, vocab, (B, block_size))
    targets = ids(rng, vocab, (B,)) if with_loss else None
    def keep_relus_alive(model):   # all-dead ReLUs would leave the first layers with zero gradient
        model.mlp[0].bias._data += 3.0
    check_model(f"FlattenMLP[{activation}]",
                lambda lib, **kw: lib.FlattenMLP(vocab, block_size, d_model, hidden, activation),
                lambda m, *a: m(*a), (idx,) + with_targets(targets), seed,
                prepare=keep_relus_alive if activation == "relu" else None)


@pytest.mark.parametrize("lib", [M, R], ids=["ours", "reference"])
def test_flatten_mlp_rejects_other_lengths(lib):
    """Section 5.3, failure mode 1: the first Linear is sized for exactly block_size tokens."""
    model = lib.FlattenMLP(27, block_size=6, d_model=4)
    make = tg.Tensor if lib is M else torch.tensor
    model(make(np.zeros((2, 6), dtype=np.int64)))
    for T in (5, 7):
        with pytest.raises(ValueError, match=rf"block_size=6.*length {T}"):
            model(make(np.zeros((2, T), dtype=np.int64)))


SAMPLE_NAMES = ["sada", "john", "emma", "olivia", "liam", "noah", "ava", "lucas"]
STOI = {c: i for i, c in enumerate("$abcdefghijklmnopqrstuvwxyz")}


def _bigram_pair(names, alpha):
    ours = M.BigramCountModel(27, alpha).fit(names, stoi=STOI, boundary="$")
    twin = R.BigramCountModel(27, alpha).to(DEVICE).fit(names, stoi=STOI, boundary="$")
    return ours, twin


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_bigram_count_model_matches_reference(alpha):
    ours, twin = _bigram_pair(SAMPLE_NAMES, alpha)
    assert np.array_equal(ours.counts._data, to_numpy(twin.counts))
    assert ours.counts._data.sum() == sum(len(n) + 1 for n in SAMPLE_NAMES)
    # the tutorial's example: 'sada' contributes $->s, s->a, a->d, d->a, a->$
    assert ours.counts._data[STOI["$"], STOI["s"]] == 1 and ours.counts._data[STOI["a"], STOI["$"]] == 4
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(ours.probs._data, to_numpy(twin.probs), rtol=1e-6, equal_nan=True)
    seen = ours.counts._data.sum(1) > 0
    np.testing.assert_allclose(ours.probs._data[seen].sum(1), 1.0, rtol=1e-6)
    held_out = ["ava", "noah"] if alpha == 0 else ["zyx", "emma"]
    assert ours.nll(held_out, STOI, "$") == pytest.approx(twin.nll(held_out, STOI, "$"), rel=1e-6)
    idx, targets = np.array([[0, 19, 1], [0, 5, 13]]), np.array([[19, 1, 4], [5, 13, 13]])
    lo, loss = ours(idx, targets)
    lt, loss_t = twin(torch.tensor(idx, device=DEVICE), torch.tensor(targets, device=DEVICE))
    np.testing.assert_allclose(lo._data, to_numpy(lt), rtol=1e-6)
    assert loss.item() == pytest.approx(loss_t.item(), rel=1e-5)


def test_bigram_smoothing_is_what_keeps_unseen_transitions_finite():
    """Section 3.2: with alpha = 0 an unseen bigram has probability 0 and infinite NLL."""
    plain, _ = _bigram_pair(SAMPLE_NAMES, 0.0)
    smooth, _ = _bigram_pair(SAMPLE_NAMES, 1.0)
    assert plain.counts._data[STOI["a"], STOI["a"]] == 0            # every row of "$aa$" is seen, a -> a is not
    assert plain.nll(["aa"], STOI, "$") == float("inf")
    assert np.isfinite(smooth.nll(["aa"], STOI, "$"))
    assert plain.nll(SAMPLE_NAMES, STOI, "$") < smooth.nll(SAMPLE_NAMES, STOI, "$")   # smoothing costs fit


@pytest.mark.skipif(not NAMES.exists(), reason=f"{NAMES} not present")
def test_bigram_count_model_on_names_file():
    names = [n.strip() for n in NAMES.read_text().split() if n.strip()]
    names = [n for n in names if set(n) <= set(STOI)]
    ours, twin = _bigram_pair(names, 1.0)
    assert np.array_equal(ours.counts._data, to_numpy(twin.counts))
    nll = ours.nll(names, STOI, "$")
    assert nll == pytest.approx(twin.nll(names, STOI, "$"), rel=1e-5)
    assert 2.0 < nll < np.log(27)   # better than uniform over the vocabulary


# ============================================================================ state dicts

MODEL_BUILDERS = {
    "GPTLanguageModel": lambda lib: lib.GPTLanguageModel(11, 8, 2, 2, 6),
    "Encoder": lambda lib: lib.Encoder(11, 8, 2, 2, 6, num_classes=3),
    "Encoder-untied": lambda lib: lib.Encoder(11, 8, 2, 1, 6, num_classes=3, tie_weights=False),
    "EncoderDecoder": lambda lib: lib.EncoderDecoder(11, 9, 8, 4, 1, 2, 5, 7),
    "ViT": lambda lib: lib.ViT((6, 4), 2, 3, 5, 8, 2, 2),
    "MultiHeadAttention": lambda lib: lib.MultiHeadAttention(8, 2, causal=True),
    "TransformerBlock": lambda lib: lib.TransformerBlock(8, 4, 5),
    "BigramCountModel": lambda lib: lib.BigramCountModel(11, 0.5).fit([[1, 2, 3, 2, 1]]),
    "NeuralBigram": lambda lib: lib.NeuralBigram(11),
    "FlattenMLP": lambda lib: lib.FlattenMLP(11, 4, 3, 7, "relu"),
}
TIED = {"GPTLanguageModel": [("token_embedding", "lm_head")], "Encoder": [("token_embedding", "mlm_head")],
        "EncoderDecoder": [("decoder.token_embedding", "decoder.lm_head")]}


def _get(model, path):
    for part in path.split("."):
        model = getattr(model, part)
    return model


@pytest.mark.parametrize("kind", list(MODEL_BUILDERS))
def test_state_dict_round_trip_ours_torch_ours(kind):
    build = MODEL_BUILDERS[kind]
    tg.manual_seed(1)
    ours = build(M)
    perturb(ours, 1) if list(ours.parameters()) else None
    twin = build(R)
    twin.load_state_dict(ours.state_dict())
    sd, twin_sd = ours.state_dict(), twin.state_dict()
    assert list(sd) == list(twin_sd), "state-dict keys (and their order) differ from the torch twin's"
    assert not any(k.endswith("causal_mask") for k in sd), "the causal mask is a non-persistent buffer"
    for k in sd:
        assert np.array_equal(sd[k], to_numpy(twin_sd[k])), k
    tg.manual_seed(2)
    back = build(M)
    back.load_state_dict(twin.state_dict())                     # torch tensors straight into ours
    for k, v in back.state_dict().items():
        assert np.array_equal(v, sd[k]) and v.dtype == sd[k].dtype, k
    for a, b in TIED.get(kind, []):
        assert _get(back, a).weight is _get(back, b).weight, f"{a}.weight and {b}.weight are no longer tied"
        assert _get(twin, a).weight is _get(twin, b).weight
    if kind == "Encoder-untied":
        assert back.token_embedding.weight is not back.mlm_head.weight


MORE_BUILDERS = {
    "CNN": lambda lib: lib.CNN(8, 1, 3, 2, 3),
    "RecurrentLM": lambda lib: lib.RecurrentLM(11, 4, 6, 5, 2, "lstm"),
    "BagOfWordsLM": lambda lib: lib.BagOfWordsLM(11, 4, 6, 5, 1),
    "WaveNetLM": lambda lib: lib.WaveNetLM(11, 4, 6, 2, 2),
}


@pytest.mark.parametrize("default", ["float64", "float32"])
@pytest.mark.parametrize("kind", [*MODEL_BUILDERS, *MORE_BUILDERS])
@pytest.mark.cpu_only(reason="dtypes of freshly built models, nothing computed")
def test_parameters_and_buffers_take_the_default_dtype_as_the_twins(kind, default):
    """Built under ``set_default_dtype``, every parameter and buffer (the non-persistent causal
    mask included) has the dtype its torch twin's has: ViT's cls_token/pos_embedding and the
    GPT causal mask follow the default float; the bigram counts stay int32."""
    build = {**MODEL_BUILDERS, **MORE_BUILDERS}[kind]
    tg.set_default_dtype(getattr(tg, default))
    torch.set_default_dtype(getattr(torch, default))
    ours, twin = build(M), build(R)

    def dtypes_of(model):
        return {n: np.dtype(str(t.dtype).split(".")[-1]) for n, t in [*model.named_parameters(), *model.named_buffers()]}
    assert dtypes_of(ours) == dtypes_of(twin)


@given(vocab=st.integers(2, 20), hw=heads_and_width(), n_layers=st.integers(0, 3), block_size=st.integers(1, 9),
       seed=seeds)
def test_gpt_state_dict_round_trip_random_configs(vocab, hw, n_layers, block_size, seed):
    n_heads, d_model = hw
    tg.manual_seed(seed)
    ours = M.GPTLanguageModel(vocab, d_model, n_heads, n_layers, block_size)
    twin = R.GPTLanguageModel(vocab, d_model, n_heads, n_layers, block_size)
    twin.load_state_dict(ours.state_dict())
    assert list(ours.state_dict()) == list(twin.state_dict())
    back = M.GPTLanguageModel(vocab, d_model, n_heads, n_layers, block_size)
    back.load_state_dict(twin.state_dict())
    assert back.token_embedding.weight is back.lm_head.weight
    assert sum(p._data.size for p in back.parameters()) == sum(p.numel() for p in twin.parameters())
    idx = np.random.default_rng(seed).integers(0, vocab, (2, block_size))
    assert np.array_equal(back.eval()(idx)[0]._data, ours.eval()(idx)[0]._data)


# ============================================================================ modes

def test_dropout_is_active_in_training_only():
    tg.manual_seed(0)
    idx = np.random.default_rng(0).integers(0, 11, (2, 6))
    model = M.GPTLanguageModel(11, 8, 2, 2, 6, dropout=0.3)
    a, b = model.train()(idx)[0]._data, model(idx)[0]._data
    assert not np.array_equal(a, b), "two training-mode forwards drew the same dropout masks"
    model.eval()
    assert np.array_equal(model(idx)[0]._data, model(idx)[0]._data)
    no_drop = M.GPTLanguageModel(11, 8, 2, 2, 6, dropout=0.0)
    no_drop.load_state_dict(model.state_dict())
    assert np.array_equal(no_drop.train()(idx)[0]._data, model(idx)[0]._data)


@pytest.mark.parametrize("impl", M.ATTN_IMPLS)
def test_attention_dropout_in_training(impl):
    """Fused and naive attention drop attention weights in training; flash has no dropout and says so."""
    tg.manual_seed(0)
    attn = M.CausalSelfAttention(8, 2, 6, dropout=0.5, attn_impl=impl)
    attn.resid_dropout.p = 0.0
    x = tg.randn(2, 6, 8)
    if impl == "flash":
        with pytest.raises(ValueError, match="flash.*dropout"):
            attn.train()(x)
        return
    y_eval = attn.eval()(x)._data
    y_train = attn.train()(x)._data
    assert not np.allclose(y_eval, y_train)


# ============================================================================ bad input

def _tensor(lib, a):
    return tg.Tensor(a) if lib is M else torch.tensor(a, device=DEVICE)


LIBS = pytest.mark.parametrize("lib", [M, R], ids=["ours", "reference"])


@LIBS
def test_bad_configurations_raise_value_error(lib):
    with pytest.raises(ValueError, match=r"d_model=10, n_heads=3"):
        lib.GPTLanguageModel(11, 10, 3)
    with pytest.raises(ValueError, match=r"d_model=6, n_heads=4"):
        lib.MultiHeadAttention(6, 4)
    with pytest.raises(ValueError, match=r"d_model=6, n_heads=4"):
        lib.Encoder(11, 6, 4)
    with pytest.raises(ValueError, match=r"\(10, 12\) is not divisible by the patch size \(4, 4\)"):
        lib.ViT((10, 12), 4, 3, 2, 8, 2, 1)
    with pytest.raises(ValueError, match="alpha"):
        lib.BigramCountModel(5, -1.0)
    with pytest.raises(ValueError, match="activation"):
        lib.FlattenMLP(5, 3, activation="sigmoid")


@LIBS
def test_bad_inputs_raise_value_error(lib):
    t = lambda a: _tensor(lib, np.asarray(a))  # noqa: E731
    gpt = lib.GPTLanguageModel(11, 8, 2, 1, block_size=4)
    with pytest.raises(ValueError, match="length 5, block size is 4"):
        gpt(t(np.zeros((1, 5), dtype=np.int64)))
    with pytest.raises(ValueError, match=r"token id 11 outside \[0, vocab_size\) = \[0, 11\)"):
        gpt(t([[1, 11]]))
    with pytest.raises(ValueError, match=r"token id -1"):
        gpt(t([[-1, 2]]))
    with pytest.raises(TypeError, match="integer token ids"):
        gpt(t(np.zeros((1, 2), dtype=np.float32)))
    with pytest.raises(ValueError, match=r"targets must have shape \(1,\).*or \(1, 2\)"):
        gpt(t([[1, 2]]), t([1, 2, 3]))
    with pytest.raises(ValueError, match="class id 11"):
        gpt(t([[1, 2]]), t([[1, 11]]))

    vit = lib.ViT(8, 4, 3, 2, 8, 2, 1)
    with pytest.raises(ValueError, match="expected 3 input channels, got 1"):
        vit(t(np.zeros((1, 1, 8, 8), dtype=np.float32)))
    with pytest.raises(ValueError, match=r"expected images of size \(8, 8\).*got \(12, 8\)"):
        vit(t(np.zeros((1, 3, 12, 8), dtype=np.float32)))

    mha = lib.MultiHeadAttention(8, 2)
    x = t(np.zeros((2, 3, 8), dtype=np.float32))
    with pytest.raises(ValueError, match=r"padding_mask must have shape \(batch, key length\) = \(2, 3\), got \(2, 4\)"):
        mha(x, padding_mask=np.ones((2, 4), dtype=bool))
    with pytest.raises(ValueError, match=r"attn_mask of shape \(4, 3\) does not broadcast.*\(2, 2, 3, 3\)"):
        mha(x, attn_mask=np.ones((4, 3), dtype=bool))
    with pytest.raises(ValueError, match=r"query row \(1, 0, 0\).*no key"):
        mha(x, padding_mask=np.array([[1, 1, 0], [0, 0, 0]]))
    with pytest.raises(ValueError, match=r"context must have shape \(batch=2, T_k, d_model=8\)"):
        mha(x, t(np.zeros((3, 3, 8), dtype=np.float32)))

    enc = lib.Encoder(11, 8, 2, 1, 4, num_classes=3)
    with pytest.raises(ValueError, match="class id 3"):
        enc.classify(t([[1, 2]]), None, t([3]))
    with pytest.raises(ValueError, match=r"length 6, block size is 4"):
        enc.masked_lm(t(np.zeros((1, 6), dtype=np.int64)))

    ed = lib.EncoderDecoder(11, 9, 8, 2, 1, 1, block_size=3, src_block_size=5)
    with pytest.raises(ValueError, match=r"target sequence of length 4, block size is 3"):
        ed(t(np.zeros((1, 5), dtype=np.int64)), t(np.zeros((1, 4), dtype=np.int64)))
    with pytest.raises(ValueError, match=r"tgt holds token id 9"):
        ed(t(np.zeros((1, 5), dtype=np.int64)), t([[9]]))
    with pytest.raises(ValueError, match="batch sizes differ"):
        ed(t(np.zeros((2, 5), dtype=np.int64)), t(np.zeros((1, 3), dtype=np.int64)))


@LIBS
def test_bigram_fit_rejects_unknown_tokens(lib):
    model = lib.BigramCountModel(5)
    with pytest.raises(ValueError, match=r"token id 7 outside \[0, vocab_size\) = \[0, 5\)"):
        model.fit([[0, 1, 7]])
    with pytest.raises(ValueError, match=r"characters \['!'\]"):
        model.fit(["a!"], stoi={"a": 1, "$": 0}, boundary="$")
    assert model.counts.sum().item() == 0, "a rejected fit must not count anything"
