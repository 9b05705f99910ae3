"""Recurrent layers (RNNCell, GRUCell, LSTMCell, RNN, GRU, LSTM) and RMS normalization
(F.rms_norm's fused ``RMSNormFn`` and composite, nn.RMSNorm) against torch.

A module is compared by copying our parameters into torch's twin through ``load_state_dict``,
then comparing every output and the gradient of every input, initial state and parameter for
one random cotangent per output (``torch.autograd.grad(outputs, inputs, cotangents)``; ours:
the outputs flattened into one vector and back-propagated with the concatenated cotangent).
float64: relative error <= 1e-10; float32: our error against a float64 torch oracle at most
F32_RATIO x torch float32's own error (plus a floor of a few ulps), as in ``parity.py``.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import DEVICE, F32_FLOOR, F32_RATIO, F64_RTOL, check_parity, rel_err
from tinygrad_tx.testing.strategies import float_dtypes, non_contiguous, seeds, values
from tinygrad_tx import nn
from tinygrad_tx.functional.rms_norm import RMSNormFn, rms_norm, rms_norm_composite

tnn = torch.nn
TORCH_DTYPE = {np.dtype(np.float64): torch.float64, np.dtype(np.float32): torch.float32}


# ============================================================================ helpers

def torch_twin(ours, torch_module, dtype):
    """``torch_module`` in torch ``dtype`` holding our parameters (through load_state_dict)."""
    torch_module.load_state_dict({k: torch.from_numpy(np.array(v)).to(DEVICE) for k, v in ours.state_dict().items()})
    return torch_module.to(dtype)


def flatten_out(out):
    """(output, h) / (output, (h, c)) / h / (h, c) -> a flat list of tensors."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten_out(o)]
    return [out]


def leaves_of(inputs, make):
    """``inputs`` with every array replaced by ``make(array)`` (None passes through; nested pairs
    for LSTM states), and the list of the tensors made."""
    leaves = []

    def wrap(a):
        if a is None:
            return None
        if isinstance(a, tuple):
            return tuple(wrap(b) for b in a)
        leaves.append(make(a))
        return leaves[-1]

    return [wrap(a) for a in inputs], leaves


def run_ours(module, inputs, cotangents_for):
    """Forward on Tensors made from ``inputs``; backward with one random cotangent per output.
    Returns outputs, input grads, parameter grads (by name) and the cotangents."""
    args, leaves = leaves_of(inputs, lambda a: tg.Tensor(a, requires_grad=True))
    outs = flatten_out(module(*args))
    gs = cotangents_for(outs)
    flat = tg.cat([o.reshape(-1) for o in outs], 0)
    flat.backward(np.concatenate([g.reshape(-1) for g in gs]))
    params = {n: p.grad for n, p in module.named_parameters()}
    return ([o._data for o in outs], [np.asarray(t.grad) for t in leaves],
            {n: np.asarray(g) for n, g in params.items()}, gs)


def run_torch(module, inputs, gs, dtype):
    args, leaves = leaves_of(inputs, lambda a: torch.from_numpy(np.array(a)).to(dtype).requires_grad_(True))
    outs = flatten_out(module(*args))
    names = [n for n, _ in module.named_parameters()]
    params = [p for _, p in module.named_parameters()]
    grads = torch.autograd.grad(outs, leaves + params, [torch.from_numpy(g).to(dtype) for g in gs])
    grads = [g.detach().numpy() for g in grads]
    return ([o.detach().numpy() for o in outs], grads[:len(leaves)], dict(zip(names, grads[len(leaves):])))


def module_parity(name, ours, make_torch, inputs, dtype, seed, allow_zero=(), relu=False):
    """Compare ``ours(*inputs)`` with torch's twin: outputs, input/state grads, parameter grads.
    ``allow_zero``: parameter names whose reference gradient may be zero (e.g. weight_hh
    when h_0 = 0 and the sequence has one step); ``relu=True``: any one gradient may be zero (a
    tiny relu layer's units can all be inactive); see ``relu_active`` for the guard."""
    dtype = np.dtype(dtype)
    ours.to(dtype)
    rng = np.random.default_rng([seed, 1])      # a stream apart from values(..., seed)'s
    o_out, o_in, o_par, gs = run_ours(ours, inputs, lambda outs: [rng.standard_normal(o.shape).astype(dtype)
                                                                  for o in outs])
    theirs = torch_twin(ours, make_torch(), TORCH_DTYPE[dtype])
    t_out, t_in, t_par = run_torch(theirs, inputs, gs, TORCH_DTYPE[dtype])
    assert list(o_par) == list(t_par), f"{name}: parameter names {list(o_par)} vs torch {list(t_par)}"
    pairs = ([(f"output[{i}]", a, b) for i, (a, b) in enumerate(zip(o_out, t_out))]
             + [(f"input grad[{i}]", a, b) for i, (a, b) in enumerate(zip(o_in, t_in))]
             + [(f"grad {n}", o_par[n], t_par[n]) for n in o_par])
    for label, a, b in pairs:
        assert a.shape == b.shape, f"{name} {label}: shape {a.shape} vs torch {b.shape}"
        assert a.dtype == b.dtype, f"{name} {label}: dtype {a.dtype} vs torch {b.dtype}"
    for n, g in t_par.items():
        if n not in allow_zero and not relu:
            assert np.any(g != 0), f"{name}: torch's gradient of {n} is all zero: the test is blind"
    for i, g in enumerate(t_in):
        assert relu or np.any(g != 0), f"{name}: torch's gradient of input {i} is all zero: the test is blind"
    if not relu or getattr(ours, "bias", False):
        assert any(np.any(g != 0) for g in t_in + list(t_par.values())), f"{name}: every gradient is zero"
    if dtype == np.float64:
        for label, a, b in pairs:
            e = rel_err(a, b)
            assert e <= F64_RTOL, f"{name} float64 {label}: relative error {e:.3g} > {F64_RTOL:g}"
        return
    oracle = torch_twin(ours, make_torch(), torch.float64)
    r_out, r_in, r_par = run_torch(oracle, inputs, [g.astype(np.float64) for g in gs], torch.float64)
    refs = r_out + r_in + [r_par[n] for n in o_par]
    for (label, a, b), ref in zip(pairs, refs):
        e_ours, e_torch = rel_err(a, ref), rel_err(b, ref)
        assert e_ours <= F32_RATIO * e_torch + F32_FLOOR, (
            f"{name} float32 {label}: our error {e_ours:.3g} vs torch float32's {e_torch:.3g}")


def relu_active(module):
    """Scale a relu layer's parameters by 1/4 and shift its ``bias_ih*`` by +3: then
    W_ih x + b_ih + W_hh h + b_hh > 0 for all but astronomically unlikely draws, so the
    gradients are not all zero (``module_parity`` checks that when the layer has biases)."""
    for n, p in module.named_parameters():
        p._data *= 0.25
        if n.startswith("bias_ih"):
            p._data += 3.0
    return module


def raises_like_torch(ours_call, torch_call, ours_exc):
    """torch raises (any exception) and we raise ``ours_exc``."""
    with pytest.raises(Exception):
        torch_call()
    with pytest.raises(ours_exc):
        ours_call()


def arr(shape, seed, dtype=np.float64):
    return values(shape, seed).astype(dtype)


# ============================================================================ cells

CELLS = [
    ("RNNCell", lambda i, h, b: nn.RNNCell(i, h, bias=b), lambda i, h, b: tnn.RNNCell(i, h, bias=b).to(DEVICE)),
    ("RNNCell(relu)", lambda i, h, b: nn.RNNCell(i, h, b, "relu"), lambda i, h, b: tnn.RNNCell(i, h, b, "relu").to(DEVICE)),
    ("GRUCell", lambda i, h, b: nn.GRUCell(i, h, b), lambda i, h, b: tnn.GRUCell(i, h, b).to(DEVICE)),
    ("LSTMCell", lambda i, h, b: nn.LSTMCell(i, h, b), lambda i, h, b: tnn.LSTMCell(i, h, b).to(DEVICE)),
]


@pytest.mark.parametrize("case", CELLS, ids=[c[0] for c in CELLS])
@given(n=st.integers(1, 3), input_size=st.integers(1, 4), hidden=st.integers(1, 4), bias=st.booleans(),
       unbatched=st.booleans(), give_hx=st.booleans(), non_contig=st.booleans(), dtype=float_dtypes, seed=seeds)
def test_cell_parity(case, n, input_size, hidden, bias, unbatched, give_hx, non_contig, dtype, seed):
    name, ours_cls, torch_cls = case
    lead = () if unbatched else (n,)
    x = arr(lead + (input_size,), seed, dtype)
    if non_contig:
        x = non_contiguous(x)
    hx = None
    if give_hx:
        h = arr(lead + (hidden,), seed + 1, dtype)
        hx = (h, arr(lead + (hidden,), seed + 2, dtype)) if name == "LSTMCell" else h
    if "relu" in name:   # keep pre-activations away from relu's kink
        x = x + np.sign(x) * 0.05
    tg.manual_seed(seed % 1000)
    ours = ours_cls(input_size, hidden, bias)
    if "relu" in name:
        relu_active(ours)
    module_parity(name, ours, lambda: torch_cls(input_size, hidden, bias), [x, hx], dtype, seed,
                  allow_zero=() if give_hx else ("weight_hh",), relu="relu" in name)


# ============================================================================ sequence modules

SEQ = [
    ("RNN", nn.RNN, tnn.RNN),
    ("RNN(relu)", lambda *a, **k: nn.RNN(*a, nonlinearity="relu", **k),
     lambda *a, **k: tnn.RNN(*a, nonlinearity="relu", **k).to(DEVICE)),
    ("GRU", nn.GRU, tnn.GRU),
    ("LSTM", nn.LSTM, tnn.LSTM),
]


@pytest.mark.parametrize("case", SEQ, ids=[c[0] for c in SEQ])
@given(steps=st.integers(1, 4), n=st.integers(1, 3), input_size=st.integers(1, 3), hidden=st.integers(1, 3),
       layers=st.integers(1, 2), bidirectional=st.booleans(), batch_first=st.booleans(), bias=st.booleans(),
       unbatched=st.booleans(), give_hx=st.booleans(), dtype=float_dtypes, seed=seeds)
def test_sequence_parity(case, steps, n, input_size, hidden, layers, bidirectional, batch_first, bias, unbatched,
                         give_hx, dtype, seed):
    name, ours_cls, torch_cls = case
    kw = dict(num_layers=layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional)
    d = 2 if bidirectional else 1
    if unbatched:
        shape, state = (steps, input_size), (d * layers, hidden)
    else:
        shape = (n, steps, input_size) if batch_first else (steps, n, input_size)
        state = (d * layers, n, hidden)
    x = arr(shape, seed, dtype)
    hx = None
    if give_hx:
        hx = arr(state, seed + 1, dtype)
        if name == "LSTM":
            hx = (hx, arr(state, seed + 2, dtype))
    allow = () if give_hx or steps > 1 else tuple(
        f"weight_hh_l{k}{s}" for k in range(layers) for s in ("", "_reverse"))
    if "relu" in name:
        x = x + np.sign(x) * 0.05
    tg.manual_seed(seed % 1000)
    ours = ours_cls(input_size, hidden, **kw)
    if "relu" in name:
        relu_active(ours)
    module_parity(name, ours, lambda: torch_cls(input_size, hidden, **kw), [x, hx], dtype, seed, allow,
                  relu="relu" in name)


def test_sequence_shapes_and_names_match_torch():
    for ours, theirs in [(nn.LSTM(3, 5, 3, bidirectional=True), tnn.LSTM(3, 5, 3, bidirectional=True).to(DEVICE)),
                         (nn.GRU(2, 4, 2, bias=False), tnn.GRU(2, 4, 2, bias=False).to(DEVICE)),
                         (nn.RNN(2, 4, nonlinearity="relu"), tnn.RNN(2, 4, nonlinearity="relu").to(DEVICE)),
                         (nn.GRUCell(3, 2), tnn.GRUCell(3, 2).to(DEVICE)), (nn.LSTMCell(3, 2, bias=False),
                                                                  tnn.LSTMCell(3, 2, bias=False).to(DEVICE))]:
        ours_sd = {k: tuple(np.array(v).shape) for k, v in ours.state_dict().items()}
        torch_sd = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
        assert ours_sd == torch_sd
        assert repr(ours) == repr(theirs)
        assert all(np.array(v).dtype == np.float32 for v in ours.state_dict().values())
    assert nn.RNNCell(3, 2, bias=False).bias_ih is None
    lstm = nn.LSTM(2, 3)
    before = {k: np.array(v) for k, v in lstm.state_dict().items()}
    lstm.flatten_parameters()          # teaching code calls it (cuDNN); a no-op here
    assert all(np.array_equal(before[k], np.array(v)) for k, v in lstm.state_dict().items())


def test_init_is_uniform_in_plus_minus_one_over_sqrt_hidden():
    tg.manual_seed(0)
    for module in (nn.LSTM(6, 16, 2, bidirectional=True), nn.GRUCell(5, 25)):
        k = 1 / math.sqrt(module.hidden_size)
        vals = np.concatenate([np.array(v).ravel() for v in module.state_dict().values()])
        assert np.all(np.abs(vals) <= k)
        assert np.max(vals) > 0.95 * k and np.min(vals) < -0.95 * k
        assert abs(np.mean(vals)) < 0.1 * k and abs(np.std(vals) - k / math.sqrt(3)) < 0.1 * k


def test_dropout_between_layers():
    x = arr((4, 2, 3), 1)
    with pytest.warns(UserWarning, match="dropout"):
        nn.GRU(3, 4, dropout=0.5)
    # p = 1 zeroes every layer's output but the last: deterministic, so torch's result is exact
    ours = nn.LSTM(3, 4, num_layers=3, dropout=1.0).to(np.float64)
    module_parity("LSTM(dropout=1)", ours, lambda: tnn.LSTM(3, 4, num_layers=3, dropout=1.0).to(DEVICE), [x, None],
                  np.float64, 0, allow_zero=("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                             "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
                                             "weight_ih_l2"))
    # eval mode: no dropout, torch's eval result
    ours = nn.GRU(3, 4, num_layers=2, dropout=0.5).to(np.float64).eval()
    module_parity("GRU(dropout=.5).eval()", ours, lambda: tnn.GRU(3, 4, num_layers=2, dropout=0.5).to(DEVICE).eval(),
                  [x, None], np.float64, 0)
    # training mode with 0 < p < 1: a random mask, reproducible from the seed, not the eval result
    ours = nn.GRU(3, 4, num_layers=2, dropout=0.5).to(np.float64)
    tg.manual_seed(3)
    a = ours(tg.Tensor(x))[0]._data
    tg.manual_seed(3)
    b = ours(tg.Tensor(x))[0]._data
    assert np.array_equal(a, b)
    assert not np.allclose(a, ours.eval()(tg.Tensor(x))[0]._data)


def test_gradcheck_cells():
    rng = np.random.default_rng(0)
    for cell in (nn.GRUCell(3, 2).to(np.float64), nn.LSTMCell(2, 2).to(np.float64)):
        names = [n for n, _ in cell.named_parameters()]
        params = [np.array(cell.state_dict()[n]) for n in names]
        h = rng.standard_normal((2, cell.hidden_size))

        def fn(x, h, *ps, cell=cell, names=names):
            hx = (h, h * 0.5) if isinstance(cell, nn.LSTMCell) else h
            out = flatten_out(nn.functional_call(cell, dict(zip(names, ps)), (x, hx)))
            return tg.cat([o.reshape(-1) for o in out], 0)

        assert tg.gradcheck(fn, [rng.standard_normal((2, cell.input_size)), h] + params)


def test_gradcheck_lstm_sequence():
    rng = np.random.default_rng(1)
    lstm = nn.LSTM(2, 2, bidirectional=True).to(np.float64)
    names = [n for n, _ in lstm.named_parameters()]
    params = [np.array(lstm.state_dict()[n]) for n in names]

    def fn(x, *ps):
        out, (h, c) = nn.functional_call(lstm, dict(zip(names, ps)), (x,))
        return tg.cat([out.reshape(-1), h.reshape(-1), c.reshape(-1)], 0)

    assert tg.gradcheck(fn, [rng.standard_normal((3, 1, 2))] + params)


def test_recurrent_errors_like_torch():
    x = torch.randn(2, 4, device=DEVICE)
    cell, tcell = nn.RNNCell(4, 3), tnn.RNNCell(4, 3).to(DEVICE)
    raises_like_torch(lambda: cell(tg.randn(2, 5)), lambda: tcell(torch.randn(2, 5, device=DEVICE)), ValueError)
    raises_like_torch(lambda: cell(tg.randn(2, 3, 4)), lambda: tcell(torch.randn(2, 3, 4, device=DEVICE)), ValueError)
    raises_like_torch(lambda: cell(tg.randn(2, 4), tg.randn(3, 3)), lambda: tcell(x, torch.randn(3, 3, device=DEVICE)),
                      ValueError)
    raises_like_torch(lambda: cell(tg.randn(2, 4), tg.randn(2, 2)), lambda: tcell(x, torch.randn(2, 2, device=DEVICE)),
                      ValueError)
    raises_like_torch(lambda: cell(tg.randn(4), tg.randn(1, 3)), lambda: tcell(torch.randn(4, device=DEVICE), torch.randn(1, 3, device=DEVICE)),
                      ValueError)
    gru, tgru = nn.GRU(4, 3, 2), tnn.GRU(4, 3, 2).to(DEVICE)
    raises_like_torch(lambda: gru(tg.randn(2, 5)), lambda: tgru(torch.randn(2, 5, device=DEVICE)), ValueError)
    raises_like_torch(lambda: gru(tg.randn(2, 3, 4, 1)), lambda: tgru(torch.randn(2, 3, 4, 1, device=DEVICE)), ValueError)
    raises_like_torch(lambda: gru(tg.randn(5, 2, 4), tg.randn(2, 3, 3)),
                      lambda: tgru(torch.randn(5, 2, 4, device=DEVICE), torch.randn(2, 3, 3, device=DEVICE)), ValueError)
    raises_like_torch(lambda: gru(tg.randn(5, 4), tg.randn(2, 1, 3)),
                      lambda: tgru(torch.randn(5, 4, device=DEVICE), torch.randn(2, 1, 3, device=DEVICE)), ValueError)
    lstm, tlstm = nn.LSTM(4, 3), tnn.LSTM(4, 3).to(DEVICE)
    raises_like_torch(lambda: lstm(tg.randn(5, 2, 4), (tg.randn(1, 2, 3), tg.randn(1, 2, 2))),
                      lambda: tlstm(torch.randn(5, 2, 4, device=DEVICE), (torch.randn(1, 2, 3, device=DEVICE), torch.randn(1, 2, 2, device=DEVICE))), ValueError)
    for kw, exc in [(dict(dropout=1.5), ValueError), (dict(hidden_size=0), ValueError),
                    (dict(num_layers=0), ValueError), (dict(hidden_size=2.0), TypeError),
                    (dict(nonlinearity="x"), ValueError)]:
        args = dict(input_size=4, hidden_size=3)
        args.update(kw)
        raises_like_torch(lambda: nn.RNN(**args), lambda: tnn.RNN(**args).to(DEVICE), exc)
    raises_like_torch(lambda: gru(tg.randn(5, 2, 4).double()), lambda: tgru(torch.randn(5, 2, 4, device=DEVICE).double()),
                      TypeError)
    raises_like_torch(lambda: cell(tg.randn(2, 4), tg.randn(2, 3).double()),
                      lambda: tcell(x, torch.randn(2, 3, device=DEVICE).double()), TypeError)
    with pytest.raises(TypeError, match="pair"):
        nn.LSTMCell(4, 3)(tg.randn(2, 4), tg.randn(2, 3))
    # torch accepts RNNCell(nonlinearity='x') and fails at the first forward; we refuse it at once
    with pytest.raises(RuntimeError):
        tnn.RNNCell(4, 3, nonlinearity="x").to(DEVICE)(x)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNNCell(4, 3, nonlinearity="x")
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(4, 3, proj_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LSTM(4, 3)          # no warning without dropout


# ============================================================================ RMSNorm

@given(lead=st.lists(st.integers(1, 3), min_size=0, max_size=2), norm=st.lists(st.integers(2, 4), min_size=1,
       max_size=2), weight=st.booleans(), eps=st.sampled_from([None, 1e-5, 0.5]), composite=st.booleans(),
       non_contig=st.booleans(), dtype=float_dtypes, seed=seeds)
def test_rms_norm_parity(lead, norm, weight, eps, composite, non_contig, dtype, seed):
    norm = tuple(norm)
    x = values(tuple(lead) + norm, seed)
    if non_contig:
        x = non_contiguous(x)
    inputs = [x] + ([values(norm, seed + 1)] if weight else [])
    # torch's oracle runs in float64, where eps=None would mean float64's eps: pass ours explicitly
    torch_eps = float(np.finfo(dtype).eps) if eps is None else eps
    fn = rms_norm_composite if composite else rms_norm
    check_parity("rms_norm_composite" if composite else "rms_norm",
                 lambda *a: fn(a[0], norm, a[1] if weight else None, eps=eps),
                 lambda *a: torch.nn.functional.rms_norm(a[0], norm, a[1] if weight else None, eps=torch_eps),
                 inputs, dtype, seed=seed + 1)


@given(norm=st.lists(st.integers(2, 4), min_size=1, max_size=2), affine=st.booleans(), dtype=float_dtypes,
       seed=seeds)
def test_rms_norm_module_parity(norm, affine, dtype, seed):
    ours = nn.RMSNorm(tuple(norm), elementwise_affine=affine)
    if affine:
        ours.weight._data[...] = values(tuple(norm), seed + 5)    # not all ones: a blind weight test otherwise
    module_parity("RMSNorm", ours, lambda: tnn.RMSNorm(tuple(norm), elementwise_affine=affine).to(DEVICE),
                  [values((3,) + tuple(norm), seed).astype(dtype)], dtype, seed)


def test_rms_norm_module_defaults():
    ours, theirs = nn.RMSNorm([3, 4]), tnn.RMSNorm([3, 4]).to(DEVICE)
    assert repr(ours) == repr(theirs)
    assert np.array_equal(np.array(ours.state_dict()["weight"]), np.ones((3, 4), np.float32))
    assert nn.RMSNorm(4, elementwise_affine=False).weight is None
    x = values((2, 4), 0).astype(np.float32) * 1e-4     # mean(x²) ~ eps: float32's eps matters
    out = nn.RMSNorm(4, elementwise_affine=False)(tg.Tensor(x))._data
    ref = tnn.RMSNorm(4, elementwise_affine=False).to(DEVICE)(torch.from_numpy(x).to(DEVICE)).cpu().numpy()
    assert rel_err(out, ref) < 1e-6


def test_gradcheck_rms_norm():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((3, 2, 4)), rng.standard_normal((2, 4))
    assert tg.gradcheck(lambda a, b: RMSNormFn.apply(a, b, ndim_normalized=2, eps=1e-3), [x, w])
    assert tg.gradcheck(lambda a: rms_norm(a, 4, eps=0.1), [x])
    assert tg.gradcheck(lambda a, b: rms_norm_composite(a, (2, 4), b), [x, w])


def test_rms_norm_errors_like_torch():
    TF = torch.nn.functional
    x = torch.randn(3, 4, device=DEVICE)
    raises_like_torch(lambda: rms_norm(tg.randn(3, 4), (3,)), lambda: TF.rms_norm(x, (3,)), ValueError)
    raises_like_torch(lambda: rms_norm(tg.randn(3, 4), (4,), tg.randn(3)),
                      lambda: TF.rms_norm(x, (4,), torch.randn(3, device=DEVICE)), ValueError)
    raises_like_torch(lambda: rms_norm(tg.randn(4), (2, 4)), lambda: TF.rms_norm(torch.randn(4, device=DEVICE), (2, 4)),
                      ValueError)
    raises_like_torch(lambda: nn.RMSNorm(4)(tg.randn(2, 3)), lambda: tnn.RMSNorm(4).to(DEVICE)(torch.randn(2, 3, device=DEVICE)),
                      ValueError)
    with pytest.raises(TypeError):
        rms_norm(tg.Tensor(np.ones((2, 4), np.int64)), (4,))
