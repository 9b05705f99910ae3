"""The ``nn.Transformer`` family against torch's own modules: ``TransformerEncoderLayer``,
``TransformerEncoder``, ``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer``.

Each case builds our module, loads its state dict into torch's (strict: the names are torch's),
runs both on the same inputs and masks in float64 and compares the output, the inputs' gradients
and every parameter's gradient under a random cotangent (≤ 1e-10 relative; torch's gradients are
checked to be non-trivial) — in training mode with dropout 0 and in eval mode with dropout 0.1.
"""
from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import DEVICE
from tinygrad_tx import nn

tnn = torch.nn
TF = torch.nn.functional
# torch's (and our) constructor warning that its inference fast path cannot apply: expected, tested once below
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
RTOL = 1e-10

D, H, FF = 6, 2, 10


def torch_state(module):
    return OrderedDict((k, torch.from_numpy(np.ascontiguousarray(v)).to(DEVICE))
                       for k, v in module.state_dict().items())


def rel_err(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)) if b.size else 0.0


def build(kind, tg_kw, torch_kw, layers=2):
    """(ours, theirs) of ``kind`` in float64 with the same weights (ours → theirs by state dict)."""
    if kind in ("EncoderLayer", "DecoderLayer", "Transformer"):
        name = {"EncoderLayer": "TransformerEncoderLayer", "DecoderLayer": "TransformerDecoderLayer"}.get(kind, kind)
        ours, theirs = getattr(nn, name)(**tg_kw), getattr(tnn, name)(**torch_kw)
    else:
        layer = "TransformerEncoderLayer" if kind == "Encoder" else "TransformerDecoderLayer"
        stack = "TransformerEncoder" if kind == "Encoder" else "TransformerDecoder"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # torch: enable_nested_tensor's fast path not usable
            ours = getattr(nn, stack)(getattr(nn, layer)(**tg_kw), layers, nn.LayerNorm(D))
            theirs = getattr(tnn, stack)(getattr(tnn, layer)(**torch_kw), layers, tnn.LayerNorm(D).to(DEVICE))
    ours = ours.double()
    theirs = theirs.to(DEVICE).double()
    theirs.load_state_dict(torch_state(ours))   # strict: every name is torch's
    return ours, theirs


def compare(ours, theirs, inputs, masks, kwargs, seed, degenerate_ok=False):
    """Forward both on ``inputs`` (float64 arrays) with ``masks`` (arrays) and ``kwargs``; backward a
    random cotangent; compare output, inputs' and parameters' gradients.

    ``degenerate_ok`` (random shapes): a parameter whose gradient is mathematically zero (one key:
    the attention weight is 1 whatever the query) may have a zero or rounding-noise torch gradient;
    each gradient is then judged against max(its own scale, 1e-5 × the largest gradient)."""
    xs = [tg.tensor(x, requires_grad=True) for x in inputs]
    txs = [torch.tensor(x, device=DEVICE, requires_grad=True) for x in inputs]
    ms = {k: tg.tensor(v) for k, v in masks.items()}
    tms = {k: torch.tensor(v, device=DEVICE) for k, v in masks.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # mixed bool/float masks: torch's (and our) deprecation warning
        out = ours(*xs, **ms, **kwargs)
        ref = theirs(*txs, **tms, **kwargs)
    assert rel_err(out.detach().numpy(), ref.detach().cpu().numpy()) <= RTOL
    g = np.random.default_rng(seed + 1000).standard_normal(ref.shape)
    out.backward(tg.tensor(g))
    ref.backward(torch.tensor(g, device=DEVICE))
    pairs = list(zip(xs, txs)) + [(p, dict(theirs.named_parameters())[n]) for n, p in ours.named_parameters()]
    assert len(pairs) == len(xs) + len(list(theirs.parameters()))
    refs = [torch_t.grad.cpu().numpy() for _, torch_t in pairs]
    floor = 1e-5 * max(float(np.max(np.abs(r))) for r in refs) if degenerate_ok else 0.0
    for i, ((ours_t, _), tref) in enumerate(zip(pairs, refs)):
        if not degenerate_ok or i < len(xs):
            assert np.any(tref != 0), "torch's gradient is zero: the check would prove nothing"
        assert ours_t.grad is not None
        scale = max(float(np.max(np.abs(tref))), floor, 1e-300)
        assert float(np.max(np.abs(ours_t.grad.numpy() - tref))) <= RTOL * scale
    return out


def seq(rng, batched, batch_first, n, length):
    if not batched:
        return rng.standard_normal((length, D))
    return rng.standard_normal((n, length, D) if batch_first else (length, n, D))


def make_mask(rng, kind, shape):
    """A bool or float attention/padding mask of ``shape`` whose first key is never masked."""
    if kind is None:
        return None
    m = rng.random(shape) < 0.4
    m[..., 0] = False
    if kind == "causal":
        return np.triu(np.ones(shape, dtype=bool), 1)
    return m if kind == "bool" else np.where(m, -np.inf, 0.1 * rng.standard_normal(shape))


def layer_kwargs(norm_first, batch_first, activation, bias, train):
    dropout = 0.0 if train else 0.1
    common = dict(d_model=D, nhead=H, dim_feedforward=FF, dropout=dropout, batch_first=batch_first,
                  norm_first=norm_first, bias=bias, layer_norm_eps=1e-6)
    acts = {"relu": ("relu", "relu"), "gelu": ("gelu", "gelu"), "fn": (tg.nn.functional.silu, TF.silu),
            "module": (nn.GELU(approximate="tanh"), tnn.GELU(approximate="tanh").to(DEVICE)),
            "default": (None, None)}
    a, ta = acts[activation]
    return (dict(common, **({} if a is None else {"activation": a})),
            dict(common, **({} if ta is None else {"activation": ta})))


def set_mode(ours, theirs, train):
    ours.train(train)
    theirs.train(train)


# ----------------------------------------------------------------------------------- encoder

ENCODER_CASES = [
    # norm_first, batch_first, activation, bias, train, batched, src_mask, kpm
    (False, False, "default", True, True, True, None, None),
    (True, True, "gelu", True, False, True, "bool", "bool"),
    (False, True, "relu", False, True, True, "float", "float"),
    (True, False, "fn", True, True, True, "causal", "bool"),
    (False, False, "module", True, False, False, "bool", "bool"),
    (True, True, "relu", True, True, False, "float", None),
    (False, True, "gelu", True, False, True, None, "float"),
]


@pytest.mark.parametrize("kind", ["EncoderLayer", "Encoder"])
@pytest.mark.parametrize("case", ENCODER_CASES)
def test_encoder_parity(kind, case):
    norm_first, batch_first, activation, bias, train, batched, mask_kind, kpm_kind = case
    seed = ENCODER_CASES.index(case)
    rng = np.random.default_rng(seed)
    tg.manual_seed(seed)
    ours, theirs = build(kind, *layer_kwargs(norm_first, batch_first, activation, bias, train))
    set_mode(ours, theirs, train)
    n, S = 2, 4
    src = seq(rng, batched, batch_first, n, S)
    masks = {}
    mask_name = "src_mask" if kind == "EncoderLayer" else "mask"
    if mask_kind:
        masks[mask_name] = make_mask(rng, mask_kind, (S, S))
    if kpm_kind:
        masks["src_key_padding_mask"] = make_mask(rng, kpm_kind, (n, S) if batched else (S,))
    kwargs = {"is_causal": True} if mask_kind == "causal" else {}
    compare(ours, theirs, [src], masks, kwargs, seed)


# ----------------------------------------------------------------------------------- decoder

DECODER_CASES = [
    # norm_first, batch_first, activation, bias, train, batched, tgt_mask, memory_mask, tgt_kpm, memory_kpm
    (False, False, "default", True, True, True, "causal", None, None, None),
    (True, True, "gelu", True, False, True, "bool", "float", "bool", "bool"),
    (False, True, "fn", False, True, True, "float", "bool", "float", None),
    (True, False, "relu", True, True, False, "causal", None, None, "bool"),
    (False, False, "gelu", True, False, True, None, None, "bool", "float"),
]


@pytest.mark.parametrize("kind", ["DecoderLayer", "Decoder", "Transformer"])
@pytest.mark.parametrize("case", DECODER_CASES)
def test_decoder_and_transformer_parity(kind, case):
    norm_first, batch_first, activation, bias, train, batched, tmask, mmask, tkpm, mkpm = case
    seed = 100 + DECODER_CASES.index(case)
    rng = np.random.default_rng(seed)
    tg.manual_seed(seed)
    kw, tkw = layer_kwargs(norm_first, batch_first, activation, bias, train)
    if kind == "Transformer":
        for k in (kw, tkw):
            k.update(num_encoder_layers=2, num_decoder_layers=2)
    ours, theirs = build(kind, kw, tkw)
    set_mode(ours, theirs, train)
    n, T, S = 2, 3, 4
    tgt, mem = seq(rng, batched, batch_first, n, T), seq(rng, batched, batch_first, n, S)
    masks = {}
    if tmask:
        masks["tgt_mask"] = make_mask(rng, tmask, (T, T))
    if mmask:
        masks["memory_mask"] = make_mask(rng, mmask, (T, S))
    if tkpm:
        masks["tgt_key_padding_mask"] = make_mask(rng, tkpm, (n, T) if batched else (T,))
    if mkpm:
        masks["memory_key_padding_mask"] = make_mask(rng, mkpm, (n, S) if batched else (S,))
    kwargs = {}
    if tmask == "causal":
        kwargs["tgt_is_causal"] = True
    if kind == "Transformer":
        if mkpm:   # the encoder pads the same source positions the decoder's cross-attention skips
            masks["src_key_padding_mask"] = masks["memory_key_padding_mask"]
        masks["src_mask"] = make_mask(rng, "bool", (S, S))
        inputs = [mem, tgt]
    else:
        inputs = [tgt, mem]
    compare(ours, theirs, inputs, masks, kwargs, seed)


# ----------------------------------------------------------------------------------- random configurations

@st.composite
def transformer_cases(draw):
    batched = draw(st.booleans())
    return dict(
        norm_first=draw(st.booleans()), batch_first=draw(st.booleans()), bias=draw(st.booleans()),
        activation=draw(st.sampled_from(["relu", "gelu", "fn", "module", "default"])), train=draw(st.booleans()),
        batched=batched, n=draw(st.integers(1, 3)), S=draw(st.integers(1, 5)), T=draw(st.integers(1, 4)),
        src_mask=draw(st.sampled_from([None, "bool", "float", "causal"])),
        tgt_mask=draw(st.sampled_from([None, "bool", "float", "causal"])),
        memory_mask=draw(st.sampled_from([None, "bool", "float"])),
        src_kpm=draw(st.sampled_from([None, "bool", "float"])), tgt_kpm=draw(st.sampled_from([None, "bool"])),
        hint=draw(st.booleans()), layers=(draw(st.integers(1, 2)), draw(st.integers(1, 2))))


@given(case=transformer_cases(), seed=st.integers(0, 2**16))
def test_transformer_random_configurations_equal_torch(case, seed):
    """Any combination of the flags, masks (bool/float, causal or not, with the is_causal hint or
    without), padding masks, batching and depths: output and every gradient equal torch's."""
    c = case
    rng = np.random.default_rng(seed)
    tg.manual_seed(seed)
    kw, tkw = layer_kwargs(c["norm_first"], c["batch_first"], "fn" if c["activation"] == "module" else
                           c["activation"], c["bias"], c["train"])
    for k in (kw, tkw):
        k.update(num_encoder_layers=c["layers"][0], num_decoder_layers=c["layers"][1])
    ours, theirs = build("Transformer", kw, tkw)
    set_mode(ours, theirs, c["train"])
    n, S, T = c["n"], c["S"], c["T"]
    src, tgt = seq(rng, c["batched"], c["batch_first"], n, S), seq(rng, c["batched"], c["batch_first"], n, T)
    masks, kwargs = {}, {}
    for name, kind, shape in (("src_mask", c["src_mask"], (S, S)), ("tgt_mask", c["tgt_mask"], (T, T)),
                              ("memory_mask", c["memory_mask"], (T, S))):
        if kind:
            masks[name] = make_mask(rng, kind, shape)
    for name, kind, length in (("src_key_padding_mask", c["src_kpm"], S), ("tgt_key_padding_mask", c["tgt_kpm"], T)):
        if kind:
            masks[name] = make_mask(rng, kind, (n, length) if c["batched"] else (length,))
    if "src_key_padding_mask" in masks:   # the decoder skips the same padded source positions
        kpm = masks["src_key_padding_mask"]
        masks["memory_key_padding_mask"] = kpm if kpm.dtype == bool else kpm.copy()
    if c["hint"]:
        kwargs.update({f"{k}_is_causal": True for k in ("src", "tgt") if c[f"{k}_mask"] == "causal"})
    compare(ours, theirs, [src, tgt], masks, kwargs, seed, degenerate_ok=True)


# ----------------------------------------------------------------------------------- semantics

def test_decoder_layer_module_activation():
    """A Module as activation (nn.GELU('tanh')): a single decoder layer equals torch's. In a
    TransformerDecoder torch's deep copies silently fall back to F.relu (its ``__setstate__`` puts
    F.relu in the instance dict, which hides the submodule); ours keep the activation given."""
    seed = 5
    rng = np.random.default_rng(seed)
    ours, theirs = build("DecoderLayer", *layer_kwargs(True, True, "module", True, True))
    tgt, mem = seq(rng, True, True, 2, 3), seq(rng, True, True, 2, 4)
    compare(ours, theirs, [tgt, mem], {"tgt_mask": make_mask(rng, "bool", (3, 3))}, {}, seed)
    ours_stack = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, activation=nn.GELU()), 2)
    theirs_stack = tnn.TransformerDecoder(tnn.TransformerDecoderLayer(D, H, activation=tnn.GELU().to(DEVICE)),
                                          2).to(DEVICE)
    assert isinstance(ours_stack.layers[1].activation, nn.GELU)
    assert theirs_stack.layers[1].activation is TF.relu   # torch's behaviour, not reproduced


def test_state_dict_names_match_torch_both_ways():
    ours = nn.Transformer(d_model=D, nhead=H, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=FF)
    theirs = tnn.Transformer(d_model=D, nhead=H, num_encoder_layers=2, num_decoder_layers=1,
                             dim_feedforward=FF).to(DEVICE)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    ours.load_state_dict({k: v.cpu() for k, v in theirs.state_dict().items()})
    assert np.array_equal(ours.state_dict()["decoder.layers.0.multihead_attn.in_proj_weight"],
                          theirs.state_dict()["decoder.layers.0.multihead_attn.in_proj_weight"].cpu().numpy())
    layer = nn.TransformerEncoderLayer(D, H, bias=False)
    assert list(layer.state_dict()) == list(tnn.TransformerEncoderLayer(D, H, bias=False).to(DEVICE).state_dict())
    # torch's init: every matrix Xavier-uniform, biases zero (MHA) and LayerNorms ones/zeros
    w = ours.state_dict()["encoder.layers.0.linear1.weight"]
    assert np.all(np.abs(w) <= np.sqrt(6 / (D + FF)))
    assert np.all(ours.state_dict()["encoder.norm.weight"] == 1)


def test_layers_are_deep_copies():
    layer = nn.TransformerEncoderLayer(D, H, FF)
    enc = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
    assert len(enc.layers) == 3 and enc.num_layers == 3
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    assert np.array_equal(enc.layers[0].linear1.weight.detach().numpy(), enc.layers[2].linear1.weight.detach().numpy())
    assert enc.layers[0] is not layer


def test_generate_square_subsequent_mask():
    for sz in (0, 1, 4):
        ours = nn.Transformer.generate_square_subsequent_mask(sz)
        ref = tnn.Transformer.generate_square_subsequent_mask(sz, device=DEVICE)
        assert ours.dtype == tg.float32
        assert np.array_equal(ours.numpy(), ref.cpu().numpy())
    ours = nn.Transformer.generate_square_subsequent_mask(3, dtype=tg.bool)
    ref = tnn.Transformer.generate_square_subsequent_mask(3, dtype=torch.bool, device=DEVICE)
    assert np.array_equal(ours.numpy(), ref.cpu().numpy())
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=tg.float64).dtype == tg.float64
    for bad in (-1, 2.5):
        with pytest.raises((RuntimeError, TypeError)):
            tnn.Transformer.generate_square_subsequent_mask(bad)
    with pytest.raises(RuntimeError, match="sz must be a non-negative int, got -1"):
        nn.Transformer.generate_square_subsequent_mask(-1)


def test_causal_mask_detected_and_is_causal_hint():
    """A causal src_mask is detected (is_causal=None); is_causal=True without a mask is torch's error."""
    rng = np.random.default_rng(7)
    ours, theirs = build("Encoder", *layer_kwargs(True, True, "relu", True, True))
    x = rng.standard_normal((2, 4, D))
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=tg.float64)
    tmask = tnn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64, device=DEVICE)
    out = ours(tg.tensor(x), mask=mask)
    ref = theirs(torch.tensor(x, device=DEVICE), mask=tmask)
    assert rel_err(out.detach().numpy(), ref.detach().cpu().numpy()) <= RTOL
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        ours(tg.tensor(x), is_causal=True)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        theirs(torch.tensor(x, device=DEVICE), is_causal=True)


def test_nested_tensor_fast_path_zeros_padding():
    """torch's eval, no-grad encoder runs a nested tensor when given a left-aligned padding mask:
    the padded positions come out 0 (then the final norm). Ours does the same; with grad enabled,
    they are computed normally, as torch."""
    rng = np.random.default_rng(8)
    kw, tkw = layer_kwargs(False, True, "relu", True, False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(**kw), 2).double().eval()
    theirs = tnn.TransformerEncoder(tnn.TransformerEncoderLayer(**tkw), 2).to(DEVICE).double().eval()
    assert ours.use_nested_tensor and theirs.use_nested_tensor
    theirs.load_state_dict(torch_state(ours))
    x = rng.standard_normal((2, 4, D))
    kpm = np.array([[False, False, True, True], [False, False, False, False]])
    tx, tkpm = torch.tensor(x, device=DEVICE), torch.tensor(kpm, device=DEVICE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch: nested tensors are a prototype
        with torch.no_grad():
            ref = theirs(tx, src_key_padding_mask=tkpm).cpu().numpy()
    with tg.no_grad():
        out = ours(tg.tensor(x), src_key_padding_mask=tg.tensor(kpm)).numpy()
    assert np.all(ref[0, 2:] == 0) and np.all(out[0, 2:] == 0)
    assert rel_err(out, ref) <= RTOL
    out = ours(tg.tensor(x), src_key_padding_mask=tg.tensor(kpm)).detach().numpy()
    ref = theirs(tx, src_key_padding_mask=tkpm).detach().cpu().numpy()
    assert np.all(ref[0, 2:] != 0) and rel_err(out, ref) <= RTOL


def test_enable_nested_tensor_warning_like_torch():
    with pytest.warns(UserWarning, match="batch_first was not True"):
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H), 1)
    assert enc.enable_nested_tensor and not enc.use_nested_tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H), 1, enable_nested_tensor=False)
    assert not enc.use_nested_tensor


def test_dropout_is_active_in_training():
    rng = np.random.default_rng(9)
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.5).double()
    x = tg.tensor(rng.standard_normal((3, 2, D)))
    a, b = layer(x), layer(x)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    layer.eval()
    assert np.array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())


def test_errors_like_torch():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(D, H, activation="tanh")
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(D, H, activation="tanh")
    with pytest.raises(TypeError, match="activation"):
        nn.TransformerEncoderLayer(D, H, activation=3)
    with pytest.raises(AssertionError, match="divisible"):
        nn.TransformerEncoderLayer(D, 4)
    with pytest.raises(ValueError, match="num_layers"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H), -1, enable_nested_tensor=False)
    t = nn.Transformer(D, H, 1, 1, FF, dropout=0.0)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        t(tg.randn(3, 2, D), tg.randn(3, 3, D))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        t(tg.randn(3, 2, D), tg.randn(3, 2, D + 1))
    layer = nn.TransformerEncoderLayer(D, H, FF)
    with pytest.raises(AssertionError, match="only bool and floating types of src_key_padding_mask"):
        layer(tg.randn(3, 2, D), src_key_padding_mask=tg.zeros(2, 3, dtype=tg.int64))
    with pytest.raises(TypeError, match="src must be a Tensor"):
        layer([[1.0] * D])


def test_unbatched_transformer_shape():
    t = nn.Transformer(D, H, 1, 1, FF, dropout=0.0)
    assert t(tg.randn(4, D), tg.randn(3, D)).shape == (3, D)
    assert t.d_model == D and t.nhead == H and t.batch_first is False


def test_all_combinations_run():
    """Every flag combination builds and runs forward and backward (parity is shown above)."""
    for norm_first, batch_first, bias in itertools.product([False, True], repeat=3):
        t = nn.Transformer(D, H, 1, 1, FF, dropout=0.0, norm_first=norm_first, batch_first=batch_first, bias=bias)
        x = tg.randn(2, 3, D)
        t(x, x).sum().backward()
        assert all(p.grad is not None for p in t.parameters())


def test_float32_transformer_close_to_torch():
    """In float32 (teaching code's default) the whole Transformer agrees with torch's to float32 rounding."""
    rng = np.random.default_rng(11)
    tg.manual_seed(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = nn.Transformer(D, H, 2, 2, FF, dropout=0.0, batch_first=True)
        theirs = tnn.Transformer(D, H, 2, 2, FF, dropout=0.0, batch_first=True).to(DEVICE)
    theirs.load_state_dict(torch_state(ours))
    src, tgt = rng.standard_normal((2, 5, D)).astype(np.float32), rng.standard_normal((2, 4, D)).astype(np.float32)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    out = ours(tg.tensor(src), tg.tensor(tgt), tgt_mask=mask, tgt_is_causal=True)
    ref = theirs(torch.tensor(src, device=DEVICE), torch.tensor(tgt, device=DEVICE),
                 tgt_mask=tnn.Transformer.generate_square_subsequent_mask(4, device=DEVICE), tgt_is_causal=True)
    assert out.dtype == tg.float32
    assert rel_err(out.detach().numpy(), ref.detach().cpu().numpy()) <= 1e-5


# ----------------------------------------------------------------------------------- teaching code

# PyTorch's "language modeling with nn.Transformer" tutorial, shrunk (positional encoding buffer,
# TransformerEncoder with a causal mask, CrossEntropyLoss, RMSprop + StepLR, clip_grad_norm_,
# a lazily drawing RandomSampler from torch.utils.data.sampler, torch.save / torch.load).
TUTORIAL = """
import math, os, tempfile
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.sampler import RandomSampler


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


class TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.1):
        super().__init__()
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src, src_mask=None):
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        output = self.transformer_encoder(src, src_mask)
        return self.linear(output)


torch.manual_seed(0)
ntokens, bptt = 11, 8
data = torch.arange(400) % ntokens                  # a periodic sequence: easy to learn
xs = torch.stack([data[i:i + bptt] for i in range(300)])
ys = torch.stack([data[i + 1:i + 1 + bptt] for i in range(300)])
ds = TensorDataset(xs, ys)
loader = DataLoader(ds, batch_size=16, sampler=RandomSampler(ds, replacement=True, num_samples=int(1e10)))
model = TransformerModel(ntokens, 16, 2, 32, 2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.RMSprop(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 20, gamma=0.9)
losses = []
model.train()
for step, (x, y) in enumerate(loader):
    x, y = x.t(), y.t()                                 # (seq, batch): batch_first=False
    output = model(x)
    loss = criterion(output.view(-1, ntokens), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    scheduler.step()
    losses.append(loss.item())
    if step == 29:
        break
path = os.path.join(tempfile.mkdtemp(), "model.pt")
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "losses": losses}, path)
ck = torch.load(path, weights_only=True)
model2 = TransformerModel(ntokens, 16, 2, 32, 2)
model2.load_state_dict(ck["model"])
model.eval(); model2.eval()
with torch.no_grad():
    same = torch.equal(model(xs[:4].t()), model2(xs[:4].t()))
result = (sum(losses[:5]) / 5, sum(losses[-5:]) / 5, bool(same))
"""


@pytest.mark.cpu_only(reason="the tutorial's script as written: it builds its tensors without a device")
def test_pytorch_transformer_tutorial_runs_unmodified():
    """The script runs under real torch and, unchanged, with ``torch`` meaning tinygrad_tx: both learn
    the periodic sequence and reload the saved model exactly."""
    from tinygrad_tx.torch_shim import torch_as_tinygrad_tx
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(TUTORIAL, "<tutorial>", "exec"), theirs := {})
        with torch_as_tinygrad_tx():
            exec(compile(TUTORIAL, "<tutorial>", "exec"), ours := {})
    for name, ns in (("torch", theirs), ("tinygrad_tx", ours)):
        first, last, reload_equal = results[name] = ns["result"]
        assert last < first / 2 and reload_equal, (name, results[name])
    assert type(ours["model"]).__mro__[1].__module__.startswith("tinygrad_tx")


@pytest.mark.parametrize("name", ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
                                  "TransformerDecoder", "Transformer"])
def test_signatures_are_torchs(name):
    """Constructor and forward: torch's parameter names, kinds and defaults (activation: F.relu, ours)."""
    import inspect

    def params(fn):
        return [(p.name, p.kind, "F.relu" if p.name == "activation" else p.default)
                for p in inspect.signature(fn).parameters.values()]
    assert params(getattr(nn, name)) == params(getattr(tnn, name))
    assert params(getattr(nn, name).forward) == params(getattr(tnn, name).forward)
    if "activation" in inspect.signature(getattr(nn, name)).parameters:
        assert inspect.signature(getattr(nn, name)).parameters["activation"].default is tg.nn.functional.relu
