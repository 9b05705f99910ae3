"""Convolution and pooling against torch: ``F.conv1d/conv2d`` (three rungs), ``F.unfold/fold``,
max / average / adaptive pools (indices exact), finite differences, torch's errors; the modules
(parameter names, init, state dicts both ways) and two small CNNs (LeNet-style, CIFAR-style)
forward + backward equal to torch.

Every parity check is ``reference.testing.check_parity``: random cotangent, outputs and every
input (and parameter) gradient, float64 ≤ 1e-10, float32 against torch's own float32 error.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
import tinygrad_tx.nn.functional as F
from reference.testing import DEVICE, check_double_parity, check_parity
from tinygrad_tx.functional import conv as conv_mod
from tinygrad_tx.testing import gradcheck, values
from tinygrad_tx.testing.strategies import float_dtypes, seeds

# ============================================================================ strategies


@st.composite
def conv_cases(draw, nd):
    """(x shape, weight shape, bias?, kwargs) of a valid convolution with nd spatial dims."""
    groups = draw(st.integers(1, 2))
    cg, og = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    k = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    kind = draw(st.sampled_from(["int", "tuple", "same", "valid"]))
    # a stride at most the dilated window, so that some window reads a pixel of x (not only padding)
    stride = (1,) * nd if kind == "same" else tuple(draw(st.integers(1, min(3, d * (kk - 1) + 1)))
                                                   for d, kk in zip(dilation, k))
    if kind == "int":
        padding = draw(st.integers(0, 2))
    elif kind == "tuple":
        padding = tuple(draw(st.integers(0, 2)) for _ in range(nd))
    else:
        padding = kind
    eff = [d * (kk - 1) + 1 for d, kk in zip(dilation, k)]
    spatial = tuple(e + draw(st.integers(0, 4)) for e in eff)
    batch = draw(st.sampled_from([(), (1,), (2,)]))
    if len(set(stride)) == 1 and draw(st.booleans()):
        stride = stride[0]                      # an int for every axis
    kwargs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    return batch + (groups * cg,) + spatial, (groups * og, cg) + k, draw(st.booleans()), kwargs


def _conv_fns(fn, tfn, kwargs, bias):
    if bias:
        return (lambda x, w, b: fn(x, w, b, **kwargs)), (lambda x, w, b: tfn(x, w, b, **kwargs))
    return (lambda x, w: fn(x, w, None, **kwargs)), (lambda x, w: tfn(x, w, None, **kwargs))


def _arrays(seed, *shapes):
    return [values(s, seed + 101 * i) for i, s in enumerate(shapes)]


# ============================================================================ convolution


@given(case=conv_cases(2), dtype=float_dtypes, seed=seeds,
       rung=st.sampled_from(["conv2d", "conv2d_closed_form", "conv2d_composite"]))
def test_conv2d_parity(case, dtype, seed, rung):
    """conv2d, its closed form and its composite: values and gradients of x, W, b equal torch's."""
    xs, ws, bias, kwargs = case
    ours, theirs = _conv_fns(getattr(F, rung), TF.conv2d, kwargs, bias)
    check_parity(ours, theirs, *_arrays(seed, xs, ws, ws[:1])[:3 if bias else 2], dtype=dtype, seed=seed, name=rung)


@given(case=conv_cases(1), dtype=float_dtypes, seed=seeds, rung=st.sampled_from(["conv1d", "conv1d_closed_form"]))
def test_conv1d_parity(case, dtype, seed, rung):
    """conv1d (the 2-D convolution on (N, C, 1, L)) and its closed form against torch."""
    xs, ws, bias, kwargs = case
    ours, theirs = _conv_fns(getattr(F, rung), TF.conv1d, kwargs, bias)
    check_parity(ours, theirs, *_arrays(seed, xs, ws, ws[:1])[:3 if bias else 2], dtype=dtype, seed=seed, name=rung)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv2d_patch_fast_path_equals_general_path(dtype, monkeypatch):
    """The patch case (stride = kernel, no padding: the ViT's projection) takes the reshape tricks;
    the general strided im2col/col2im gives bit-for-bit the same output and gradients."""
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in [(2, 3, 8, 12), (5, 3, 4, 4), (5,)])
    g = rng.standard_normal((2, 5, 2, 3)).astype(dtype)

    def run():   # the Conv op itself (F.conv2d sends the patch case to F.patch_embed: test below)
        ts = [tg.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = conv_mod.Conv.apply(*ts, stride=(4, 4), padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1)
        out.backward(g)
        return [out.detach().numpy()] + [t.grad.numpy() for t in ts]

    via_patch_embed = [tg.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = F.conv2d(*via_patch_embed, stride=4)
    out.backward(g)
    assert out.grad_fn.fn.__name__ != "Conv"
    fast = run()
    for a, c in zip([out.detach().numpy()] + [t.grad.numpy() for t in via_patch_embed], fast):
        np.testing.assert_allclose(a, c, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-5 if dtype == np.float32 else 1e-12)
    monkeypatch.setattr(conv_mod, "_is_patch_case", lambda *a: False)
    general = run()
    for a, c in zip(fast, general):
        assert np.array_equal(a, c)
    assert np.array_equal(conv_mod._patch_cols(x, (4, 4)),
                          conv_mod._cols_channel_major(x, (4, 4), (4, 4), (1, 1)))


def test_conv_closed_form_is_short_and_explained():
    """Rung 2 fits the closed-form budget (≤ 15 lines of NumPy for forward and for backward), and
    ``tinygrad-tx explain conv2d`` shows the three rungs with their live check."""
    from tinygrad_tx.viz.explain import closed_form_lines, op_spec
    fw, bw = closed_form_lines(F.ConvClosedForm)
    assert 1 <= fw <= 15 and 1 <= bw <= 15, (fw, bw)
    spec = op_spec("conv")
    assert spec.closed_function is F.ConvClosedForm and spec.function is F.Conv


@pytest.mark.parametrize("fn,shapes,kwargs", [
    (F.conv2d, [(1, 2, 5, 4), (4, 1, 2, 3), (4,)], dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)),
    (F.conv2d_closed_form, [(2, 2, 4, 4), (2, 2, 3, 3), (2,)], dict(padding="same")),
    (F.conv1d, [(2, 3, 7), (2, 3, 3), (2,)], dict(stride=2, padding=2, dilation=2)),
])
def test_conv_finite_differences(fn, shapes, kwargs):
    """float64 central differences of output w.r.t. x, W and b."""
    assert gradcheck(lambda x, w, b: fn(x, w, b, **kwargs), _arrays(3, *shapes))


@given(data=st.data(), dtype=float_dtypes, seed=seeds)
def test_unfold_fold_parity(data, dtype, seed):
    """unfold (im2col) and fold (col2im), each the other's backward, against torch."""
    k = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    d = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    # stride at most the dilated window: some window reads a pixel (else the gradient is truly 0)
    s = tuple(data.draw(st.integers(1, dd * (kk - 1) + 1)) for dd, kk in zip(d, k))
    p = data.draw(st.integers(0, 1))
    hw = tuple(dd * (kk - 1) + 1 + data.draw(st.integers(0, 4)) for dd, kk in zip(d, k))
    n, c = data.draw(st.sampled_from([(), (2,)])), data.draw(st.integers(1, 3))
    kw = dict(kernel_size=k, dilation=d, padding=p, stride=s)
    check_parity(lambda x: F.unfold(x, **kw), lambda x: TF.unfold(x, **kw), values(n + (c,) + hw, seed),
                 dtype=dtype, seed=seed, name="unfold")
    blocks = int(np.prod([(n + 2 * p - dd * (kk - 1) - 1) // ss + 1 for n, kk, dd, ss in zip(hw, k, d, s)]))
    check_parity(lambda u: F.fold(u, hw, **kw), lambda u: TF.fold(u, hw, **kw),
                 values(n + (c * k[0] * k[1], blocks), seed + 1), dtype=dtype, seed=seed, name="fold")


# ============================================================================ pooling


@st.composite
def pool_cases(draw, nd, dilation=True):
    square = draw(st.booleans())
    k = (draw(st.integers(1, 3)),) * nd if square else tuple(draw(st.integers(1, 3)) for _ in range(nd))
    d = tuple(draw(st.integers(1, 2)) for _ in range(nd)) if dilation else (1,) * nd
    s = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    p = tuple(draw(st.integers(0, kk // 2)) for kk in k)
    spatial = tuple(dd * (kk - 1) + 1 + draw(st.integers(0, 5)) for kk, dd in zip(k, d))
    shape = draw(st.sampled_from([(), (2,)])) + (draw(st.integers(1, 3)),) + spatial
    kw = dict(kernel_size=k[0] if square else k, stride=None if draw(st.booleans()) else s,
              padding=p, ceil_mode=draw(st.booleans()))
    if dilation:
        kw["dilation"] = d
    return shape, kw


@given(case=pool_cases(2), dtype=float_dtypes, seed=seeds, nd=st.sampled_from([2]))
def test_max_pool2d_parity_and_indices(case, dtype, seed, nd):
    """max_pool2d: values, the scattered gradient, and indices equal to torch's (exact int64)."""
    shape, kw = case
    x = values(shape, seed, "distinct")
    check_parity(lambda t: F.max_pool2d(t, **kw), lambda t: TF.max_pool2d(t, **kw), x, dtype=dtype, seed=seed)
    _, ours = F.max_pool2d(tg.tensor(x), return_indices=True, **kw)
    _, theirs = TF.max_pool2d(torch.tensor(x, device=DEVICE), return_indices=True, **kw)
    assert ours.dtype == np.int64 and np.array_equal(ours.numpy(), theirs.cpu().numpy())


@given(case=pool_cases(1), dtype=float_dtypes, seed=seeds)
def test_max_pool1d_parity_and_indices(case, dtype, seed):
    shape, kw = case
    x = values(shape, seed, "distinct")
    check_parity(lambda t: F.max_pool1d(t, **kw), lambda t: TF.max_pool1d(t, **kw), x, dtype=dtype, seed=seed)
    _, ours = F.max_pool1d(tg.tensor(x), return_indices=True, **kw)
    _, theirs = TF.max_pool1d(torch.tensor(x, device=DEVICE), return_indices=True, **kw)
    assert np.array_equal(ours.numpy(), theirs.cpu().numpy())


def test_max_pool_ties_pick_torchs_index():
    """Ties (integer-valued input): the first maximum in window order, as torch's kernel."""
    x = np.random.default_rng(1).integers(0, 3, (2, 3, 9, 9)).astype(np.float64)
    for kw in [dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), dict(kernel_size=3, stride=1, dilation=2)]:
        _, ours = F.max_pool2d(tg.tensor(x), return_indices=True, **kw)
        _, theirs = TF.max_pool2d(torch.tensor(x, device=DEVICE), return_indices=True, **kw)
        assert np.array_equal(ours.numpy(), theirs.cpu().numpy())
    _, ours = F.adaptive_max_pool2d(tg.tensor(x), (4, 5), return_indices=True)
    _, theirs = TF.adaptive_max_pool2d(torch.tensor(x, device=DEVICE), (4, 5), return_indices=True)
    assert np.array_equal(ours.numpy(), theirs.cpu().numpy())


@given(case=pool_cases(2, dilation=False), dtype=float_dtypes, seed=seeds, cip=st.booleans(),
       div=st.sampled_from([None, None, 3, -2]))
def test_avg_pool2d_parity(case, dtype, seed, cip, div):
    """avg_pool2d with count_include_pad, ceil_mode and divisor_override."""
    shape, kw = case
    kw = dict(kw, count_include_pad=cip, divisor_override=div)
    check_parity(lambda t: F.avg_pool2d(t, **kw), lambda t: TF.avg_pool2d(t, **kw), values(shape, seed),
                 dtype=dtype, seed=seed)


@given(case=pool_cases(1, dilation=False), dtype=float_dtypes, seed=seeds, cip=st.booleans())
def test_avg_pool1d_parity(case, dtype, seed, cip):
    shape, kw = case
    kw = dict(kw, count_include_pad=cip)
    check_parity(lambda t: F.avg_pool1d(t, **kw), lambda t: TF.avg_pool1d(t, **kw), values(shape, seed),
                 dtype=dtype, seed=seed)


@given(data=st.data(), dtype=float_dtypes, seed=seeds)
def test_adaptive_pools_parity(data, dtype, seed):
    """adaptive_avg_pool1d/2d and adaptive_max_pool1d/2d (indices exact), output sizes smaller and
    larger than the input and None."""
    h, w = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    lead = data.draw(st.sampled_from([(), (2,)])) + (data.draw(st.integers(1, 3)),)
    size = data.draw(st.one_of(st.integers(1, 6), st.tuples(st.one_of(st.none(), st.integers(1, 6)),
                                                             st.integers(1, 6))))
    x2, x1 = values(lead + (h, w), seed, "distinct"), values(lead + (w,), seed + 1, "distinct")
    size1 = size if isinstance(size, int) else size[1]
    for ours, theirs, x, s in [(F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, x2, size),
                               (F.adaptive_max_pool2d, TF.adaptive_max_pool2d, x2, size),
                               (F.adaptive_avg_pool1d, TF.adaptive_avg_pool1d, x1, size1),
                               (F.adaptive_max_pool1d, TF.adaptive_max_pool1d, x1, size1)]:
        check_parity(lambda t: ours(t, s), lambda t: theirs(t, s), x, dtype=dtype, seed=seed, name=ours.__name__)
    for ours, theirs, x, s in [(F.adaptive_max_pool2d, TF.adaptive_max_pool2d, x2, size),
                               (F.adaptive_max_pool1d, TF.adaptive_max_pool1d, x1, size1)]:
        _, i = ours(tg.tensor(x), s, return_indices=True)
        _, ti = theirs(torch.tensor(x, device=DEVICE), s, return_indices=True)
        assert np.array_equal(i.numpy(), ti.cpu().numpy())


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
    lambda x: F.avg_pool2d(x, (3, 2), stride=(2, 1), padding=1, ceil_mode=True, count_include_pad=False),
    lambda x: F.adaptive_avg_pool2d(x, (3, 4)),
    lambda x: F.adaptive_max_pool2d(x, (2, 3)),
])
def test_pool_finite_differences(fn):
    assert gradcheck(fn, [values((2, 2, 5, 6), 4, "distinct")])


# ============================================================================ errors


def _raises_like_torch(ours, theirs, match):
    """torch refuses; ours refuses with an error of a type torch's is (or a subclass of both),
    whose message names the argument and its value."""
    with pytest.raises(Exception) as ref:
        theirs()
    with pytest.raises(Exception, match=match) as got:
        ours()
    assert isinstance(got.value, type(ref.value)), (type(got.value), type(ref.value))


X4 = np.zeros((2, 3, 8, 8))

ERRORS = [
    ("conv2d channels", lambda m: m.conv2d(m.tensor(X4), m.zeros(4, 2, 3, 3)),
     r"expected input\[2, 3, 8, 8\] to have 2"),
    ("conv2d kernel too big", lambda m: m.conv2d(m.zeros(1, 3, 2, 2), m.zeros(4, 3, 3, 3)), r"\(2 x 2\).*\(3 x 3\)"),
    ("conv2d same strided", lambda m: m.conv2d(m.tensor(X4), m.zeros(4, 3, 3, 3), padding="same", stride=2),
     r"same.*stride=\(2, 2\)"),
    ("conv2d bad padding string", lambda m: m.conv2d(m.tensor(X4), m.zeros(4, 3, 3, 3), padding="foo"), "'foo'"),
    ("conv2d 2-D input", lambda m: m.conv2d(m.zeros(3, 8), m.zeros(4, 3, 3, 3)), r"\[3, 8\]"),
    ("conv2d groups", lambda m: m.conv2d(m.tensor(X4), m.zeros(4, 1, 3, 3), groups=3), "groups=3"),
    ("conv2d stride 0", lambda m: m.conv2d(m.tensor(X4), m.zeros(4, 3, 3, 3), stride=0), r"stride=\(0, 0\)"),
    ("conv2d negative padding", lambda m: m.conv2d(m.tensor(X4), m.zeros(4, 3, 3, 3), padding=-1), r"padding=\(-1"),
    ("conv2d bias", lambda m: m.conv2d(m.tensor(X4), m.zeros(4, 3, 3, 3), m.zeros(5)), r"bias of size \[5\]"),
    ("conv2d stride of 3", lambda m: m.conv2d(m.tensor(X4), m.zeros(4, 3, 3, 3), stride=(1, 1, 1)),
     r"stride=\[1, 1, 1\]"),
    ("conv1d 4-D input", lambda m: m.conv1d(m.tensor(X4), m.zeros(4, 3, 3)), r"\[2, 3, 8, 8\]"),
    ("max_pool2d pad", lambda m: m.max_pool2d(m.tensor(X4), 3, padding=2), "pad=2, kernel_size=3"),
    ("max_pool2d stride 0", lambda m: m.max_pool2d(m.tensor(X4), 2, stride=0), r"stride=\(0, 0\)"),
    ("max_pool2d dilation 0", lambda m: m.max_pool2d(m.tensor(X4), 2, dilation=0), r"dilation=\(0, 0\)"),
    ("max_pool2d 2-D", lambda m: m.max_pool2d(m.zeros(8, 8), 2), r"\[8, 8\]"),
    ("max_pool2d too small", lambda m: m.max_pool2d(m.zeros(1, 1, 2, 2), 3), r"\(1x0x0\)"),
    ("max_pool2d negative pad", lambda m: m.max_pool2d(m.tensor(X4), 2, padding=-1), "pad: -1"),
    ("max_pool2d 3 kernel sizes", lambda m: m.max_pool2d(m.tensor(X4), (2, 2, 2)), r"kernel_size=\[2, 2, 2\]"),
    ("max_pool1d 1-D", lambda m: m.max_pool1d(m.zeros(8), 3), r"\[8\]"),
    ("avg_pool2d pad", lambda m: m.avg_pool2d(m.tensor(X4), 3, padding=2), "pad=2, kernel_size=3"),
    ("avg_pool2d divisor 0", lambda m: m.avg_pool2d(m.tensor(X4), 2, divisor_override=0), "divisor_override=0"),
    ("avg_pool1d pad", lambda m: m.avg_pool1d(m.zeros(2, 3, 8), 3, padding=2), "pad=2, kernel_size=3"),
    ("adaptive negative", lambda m: m.adaptive_avg_pool2d(m.tensor(X4), (-1, 2)), r"\(-1, 2\)"),
    ("adaptive 3 sizes", lambda m: m.adaptive_avg_pool2d(m.tensor(X4), (2, 2, 2)), r"output_size=\(2, 2, 2\)"),
    ("conv_transpose2d channels", lambda m: m.conv_transpose2d(m.tensor(X4), m.zeros(5, 3, 3, 3)),
     r"expected input\[2, 3, 8, 8\] to have 5 channels"),
    ("conv_transpose2d output_padding", lambda m: m.conv_transpose2d(m.tensor(X4), m.zeros(3, 3, 3, 3),
                                                                     output_padding=2), r"output_padding=\(2, 2\)"),
    ("conv_transpose2d too small", lambda m: m.conv_transpose2d(m.zeros(1, 3, 1, 1), m.zeros(3, 3, 1, 1), padding=1),
     r"\(-1 x -1\)"),
    ("conv_transpose2d bias", lambda m: m.conv_transpose2d(m.tensor(X4), m.zeros(3, 2, 3, 3), m.zeros(3)),
     r"bias of size \[3\]"),
    ("conv_transpose2d padding string", lambda m: m.conv_transpose2d(m.tensor(X4), m.zeros(3, 2, 3, 3),
                                                                    padding="same"), "'same'"),
    ("unfold too small", lambda m: m.unfold(m.zeros(2, 3, 2, 2), 3), r"\(0, 0\)"),
    ("fold blocks", lambda m: m.fold(m.zeros(2, 12, 10), (4, 5), 2), "3 \\* 4 = 12.*10"),
]


class _Lib:
    """The functional namespace of one engine plus its tensor factories (``m.conv2d``, ``m.zeros``)."""

    def __init__(self, lib, functional):
        self.lib, self.f = lib, functional

    def __getattr__(self, name):
        return getattr(self.f, name) if hasattr(self.f, name) else getattr(self.lib, name)

    def zeros(self, *shape):
        return self.lib.zeros(*shape, dtype=self.lib.float64)

    def tensor(self, a):
        return self.lib.tensor(a)


@pytest.mark.cpu_only(reason="compares torch's argument errors (the same on every device)")
@pytest.mark.parametrize("label,call,match", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_like_torch(label, call, match):
    _raises_like_torch(lambda: call(_Lib(tg, F)), lambda: call(_Lib(torch, TF)), match)


# ============================================================================ transposed convolution


@st.composite
def conv_transpose_cases(draw, nd):
    groups = draw(st.integers(1, 2))
    cg, og = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    k = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    output_padding = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
    spatial = tuple(draw(st.integers(1, 4)) for _ in range(nd))
    # padding ≤ d·⌊(k−1)/2⌋: the kernel's middle tap of every input pixel survives the crop (else the
    # gradient of x can be truly 0), and the output has at least one pixel
    padding = tuple(draw(st.integers(0, d * ((kk - 1) // 2))) for d, kk in zip(dilation, k))
    batch = draw(st.sampled_from([(), (2,)]))
    kwargs = dict(stride=stride, padding=padding, output_padding=output_padding, groups=groups, dilation=dilation)
    return batch + (groups * cg,) + spatial, (groups * cg, og) + k, draw(st.booleans()), kwargs


@given(data=st.data(), nd=st.sampled_from([1, 2]), dtype=float_dtypes, seed=seeds)
def test_conv_transpose_parity(data, nd, dtype, seed):
    """conv_transpose1d/2d (stride, padding, output_padding, groups, dilation, bias) against torch."""
    xs, ws, bias, kwargs = data.draw(conv_transpose_cases(nd), label="case")
    name = f"conv_transpose{nd}d"
    ours, theirs = _conv_fns(getattr(F, name), getattr(TF, name), kwargs, bias)
    check_parity(ours, theirs, *_arrays(seed, xs, ws, (ws[1] * kwargs["groups"],))[:3 if bias else 2],
                 dtype=dtype, seed=seed, name=name)


def test_conv_transpose_finite_differences():
    kw = dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1)
    assert gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), _arrays(5, (1, 4, 3, 2), (4, 1, 3, 2), (2,)))


# ============================================================================ modules

from reference.testing import check_module_parity  # noqa: E402

CONV_MODULES = [
    lambda m: m.nn.Conv2d(3, 4, 3, padding=1),
    lambda m: m.nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2, bias=False),
    lambda m: m.nn.Conv2d(2, 4, 3, padding="same", padding_mode="reflect"),
    lambda m: m.nn.Conv2d(2, 3, (2, 3), padding=(1, 2), padding_mode="replicate"),
    lambda m: m.nn.Conv2d(2, 3, 3, stride=2, padding=2, padding_mode="circular"),
    lambda m: m.nn.Conv2d(2, 5, 2, stride=2),                      # the patch case
    lambda m: m.nn.Conv1d(4, 6, 3, padding=2, dilation=2, groups=2),
    lambda m: m.nn.Conv1d(2, 3, 4, padding="same", padding_mode="circular"),
    lambda m: m.nn.Conv1d(2, 3, 3, stride=2, padding="valid", padding_mode="reflect"),
    lambda m: m.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
    lambda m: m.nn.ConvTranspose2d(2, 3, (2, 3), dilation=2, bias=False),
    lambda m: m.nn.ConvTranspose1d(2, 4, 3, stride=3, padding=1, output_padding=2),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("i", range(len(CONV_MODULES)))
def test_conv_module_parity(i, dtype):
    """Conv1d/Conv2d (groups, dilation, 'same', every padding_mode): output, input and parameter
    gradients equal torch's with the weights moved through the state dict."""
    make = CONV_MODULES[i]
    ours = make(tg)
    two_d = isinstance(ours, (tg.nn.Conv2d, tg.nn.ConvTranspose2d))
    shape = (2, ours.in_channels) + ((6, 7) if two_d else (9,))
    check_module_parity((ours, make(torch).to(DEVICE)), values(shape, i), dtype=dtype, seed=i)
    assert repr(ours) == repr(make(torch))


@pytest.mark.cpu_only(reason="state dicts are moved as CPU tensors (torch.from_numpy), as a checkpoint is")
def test_conv_modules_init_and_state_dict_both_ways():
    """kaiming_uniform(a=√5): weight and bias in U(±1/√fan_in) with fan_in = in/groups·∏kernel,
    torch's keys and shapes; torch → ours → torch round trip exact."""
    for ours, theirs in [(tg.nn.Conv2d(8, 64, 3, groups=2), torch.nn.Conv2d(8, 64, 3, groups=2)),
                         (tg.nn.Conv1d(6, 40, 5), torch.nn.Conv1d(6, 40, 5))]:
        fan_in = ours.weight.shape[1] * int(np.prod(ours.kernel_size))
        bound = 1 / np.sqrt(fan_in)
        w = ours.weight.detach().numpy()
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound and abs(w.mean()) < 0.1 * bound
        assert np.abs(ours.bias.detach().numpy()).max() <= bound
        sd = ours.state_dict()
        assert list(sd) == list(theirs.state_dict()) == ["weight", "bias"]
        assert all(tuple(sd[k].shape) == tuple(v.shape) for k, v in theirs.state_dict().items())
        ours.load_state_dict(theirs.state_dict())
        assert all(np.array_equal(np.asarray(ours.state_dict()[k]), v.numpy()) for k, v in theirs.state_dict().items())
        again = type(theirs)(theirs.in_channels, theirs.out_channels, theirs.kernel_size, groups=theirs.groups)
        again.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in ours.state_dict().items()})
        assert all(torch.equal(again.state_dict()[k], v) for k, v in theirs.state_dict().items())


def test_conv_transpose_output_size():
    """forward(x, output_size=...) picks the output_padding, as torch; an unreachable size is a ValueError."""
    x = values((1, 2, 4, 5), 9)
    ours = tg.nn.ConvTranspose2d(2, 3, 3, stride=2).double()
    theirs = torch.nn.ConvTranspose2d(2, 3, 3, stride=2).to(DEVICE, torch.float64)
    theirs.load_state_dict({k: torch.from_numpy(np.asarray(v)).to(DEVICE) for k, v in ours.state_dict().items()})
    tx = torch.tensor(x, device=DEVICE)
    for size in [(9, 11), (10, 12), [1, 3, 10, 11]]:
        out = ours(tg.tensor(x), output_size=size)
        np.testing.assert_allclose(out.detach().numpy(), theirs(tx, output_size=size).detach().cpu().numpy(),
                                   rtol=1e-12)
    with pytest.raises(ValueError):
        theirs(tx, output_size=(12, 11))
    with pytest.raises(ValueError, match=r"\[12, 11\].*\[9, 11\] to \[10, 12\]"):
        ours(tg.tensor(x), output_size=(12, 11))


@pytest.mark.cpu_only(reason="constructor argument errors, no tensor computed")
def test_conv_module_errors_like_torch():
    for kwargs, match in [(dict(groups=2), "in_channels must be divisible by groups"),
                          (dict(groups=0), "groups must be a positive integer"),
                          (dict(padding_mode="foo"), "padding_mode='foo'"),
                          (dict(padding="same", stride=2), "strided convolutions"),
                          (dict(padding="full"), "'full'")]:
        with pytest.raises(ValueError):
            torch.nn.Conv2d(3, 4, 3, **kwargs)
        with pytest.raises(ValueError, match=match):
            tg.nn.Conv2d(3, 4, 3, **kwargs)


POOL_MODULES = [
    lambda m: m.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
    lambda m: m.nn.MaxPool1d(2, dilation=2),
    lambda m: m.nn.AvgPool2d((2, 3), stride=1, padding=1, count_include_pad=False),
    lambda m: m.nn.AvgPool2d(2, divisor_override=3),
    lambda m: m.nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True),
    lambda m: m.nn.AdaptiveAvgPool2d((3, None)),
    lambda m: m.nn.AdaptiveAvgPool1d(4),
    lambda m: m.nn.AdaptiveMaxPool2d(2),
    lambda m: m.nn.AdaptiveMaxPool1d(3),
]


@pytest.mark.parametrize("i", range(len(POOL_MODULES)))
def test_pool_module_parity(i):
    make = POOL_MODULES[i]
    ours = make(tg)
    one_d = "1d" in type(ours).__name__
    x = values((2, 3, 9) if one_d else (2, 3, 7, 8), i, "distinct")
    for dtype in (np.float64, np.float32):
        check_module_parity((ours, make(torch)), x, dtype=dtype, seed=i)
    assert repr(ours) == repr(make(torch)) and ours.state_dict() == {} or len(ours.state_dict()) == 0


def test_pool_modules_return_indices():
    x = values((2, 3, 7, 8), 5, "distinct")
    for make in [lambda m: m.nn.MaxPool2d(2, return_indices=True), lambda m: m.nn.AdaptiveMaxPool2d(3, True)]:
        (y, i), (ty, ti) = make(tg)(tg.tensor(x)), make(torch)(torch.tensor(x, device=DEVICE))
        assert np.array_equal(i.numpy(), ti.cpu().numpy()) and np.array_equal(y.numpy(), ty.cpu().numpy())


@pytest.mark.cpu_only(reason="torch's module is only built for its repr")
def test_dropout2d_zeros_whole_channels():
    """Training: every (n, c) plane kept (scaled by 1/(1-p)) or zeroed; gradient = the same mask;
    eval: identity. Mask frequencies as torch's Bernoulli(1 - p)."""
    tg.manual_seed(0)
    m = tg.nn.Dropout2d(0.25)
    x = tg.tensor(np.ones((64, 32, 3, 4)), requires_grad=True)
    y = m(x)
    planes = y.detach().numpy().reshape(64, 32, -1)
    assert set(np.unique(planes)) <= {0.0, 1 / 0.75}
    assert (planes.min(-1) == planes.max(-1)).all()
    assert abs((planes[:, :, 0] == 0).mean() - 0.25) < 0.03
    y.backward(np.ones(y.shape))
    assert np.array_equal(x.grad.numpy(), y.detach().numpy())
    m.eval()
    assert m(x) is x or np.array_equal(m(x).detach().numpy(), x.detach().numpy())
    assert repr(m) == repr(torch.nn.Dropout2d(0.25))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_batchnorm2d_parity_and_running_stats(dtype):
    """BatchNorm2d: training forward/backward, running statistics after the step, then eval mode."""
    ours, theirs = tg.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3).to(DEVICE)
    ours.weight._data[...] = np.linspace(0.5, 1.5, 3)
    ours.bias._data[...] = np.linspace(-1, 1, 3)
    x = values((4, 3, 5, 6), 7)
    check_module_parity((ours, theirs), x, dtype=dtype, seed=1)
    fresh = tg.nn.BatchNorm2d(3).to(dtype)
    tfresh = torch.nn.BatchNorm2d(3).to(DEVICE, getattr(torch, np.dtype(dtype).name))
    fresh(tg.tensor(x.astype(dtype)))            # one training step each: the same running statistics
    tfresh(torch.tensor(x.astype(dtype), device=DEVICE))
    for k, v in tfresh.state_dict().items():
        np.testing.assert_allclose(np.asarray(fresh.state_dict()[k]), v.cpu().numpy(),
                                   rtol=1e-6 if dtype == np.float32 else 1e-12)
    ours.eval()
    theirs.eval()
    check_module_parity((ours, theirs), x, dtype=dtype, seed=2)
    with pytest.raises(ValueError, match="4D"):
        ours(tg.zeros(2, 3, 4))


# ============================================================================ small CNNs


def lenet(m):
    nn = m.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 120), nn.ReLU(), nn.Linear(120, 84),
                         nn.ReLU(), nn.Linear(84, 10))


def cifar_net(m):
    nn = m.nn
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AvgPool2d(2), nn.Dropout2d(0.0), nn.Conv2d(32, 32, 3, padding="same"), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


@pytest.mark.parametrize("net,shape", [(lenet, (3, 1, 28, 28)), (cifar_net, (2, 3, 32, 32))], ids=["lenet", "cifar"])
def test_small_cnns_equal_torch(net, shape):
    """A LeNet (conv-pool-conv-pool-linear on 28×28) and a CIFAR-style conv-BN-ReLU-pool stack (no conv
    bias before a BatchNorm: its gradient is 0 up to rounding, which cannot be compared):
    output, input gradient and every parameter gradient equal torch's (float64 ≤ 1e-10), and a
    cross-entropy training step's loss and gradients too."""
    torch.manual_seed(0)
    tg.manual_seed(0)
    check_module_parity(lambda m: net(m).to(DEVICE) if m is torch else net(m), values(shape, 11), seed=3)
    ours, theirs = net(tg).double(), net(torch).double().to(DEVICE)
    theirs.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)).to(DEVICE)
                            for k, v in ours.state_dict().items()})
    x, y = values(shape, 12), np.arange(shape[0]) % 10
    loss = F.cross_entropy(ours(tg.tensor(x)), tg.tensor(y))
    tloss = TF.cross_entropy(theirs(torch.tensor(x, device=DEVICE)), torch.tensor(y, device=DEVICE))
    loss.backward()
    tloss.backward()
    assert abs(loss.item() - tloss.item()) <= 1e-10 * abs(tloss.item())
    for (name, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.cpu().numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("size", [(3, 4), (2, 5), 1])
def test_adaptive_avg_pool_double_backward(size, dtype):
    """AdaptiveAvgPool's backward (A_hᵀ g A_w) runs on Tensors: Hessian-vector and J·w products
    of a nonlinear function of the pool equal torch's."""
    from reference.testing import check_double_parity
    check_double_parity(lambda t: F.adaptive_avg_pool2d(t, size) ** 3, lambda t: TF.adaptive_avg_pool2d(t, size) ** 3,
                        values((2, 3, 7, 9), 4), dtype=dtype, name="adaptive_avg_pool2d")
    check_double_parity(lambda t: F.adaptive_avg_pool1d(t, 3).tanh(), lambda t: TF.adaptive_avg_pool1d(t, 3).tanh(),
                        values((2, 3, 7), 5), dtype=dtype, name="adaptive_avg_pool1d")


@pytest.mark.parametrize("name,args", [("conv2d", (np.ones((4, 3, 3, 3)), None, 1, 1)), ("max_pool2d", (2,)),
                                       ("avg_pool2d", (2,)), ("adaptive_avg_pool2d", (3,)),
                                       ("adaptive_max_pool2d", (3,)), ("unfold", (2,))])
def test_empty_batch_like_torch(name, args):
    """A batch of 0 images: shapes of the output and of the (empty) gradient as torch's."""
    x = np.zeros((0, 3, 8, 8))
    t, tt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True, device=DEVICE)
    y = getattr(F, name)(t, *[tg.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
    ty = getattr(TF, name)(tt, *[torch.tensor(a, device=DEVICE) if isinstance(a, np.ndarray) else a for a in args])
    y.sum().backward()
    ty.sum().backward()
    assert y.shape == tuple(ty.shape) and t.grad.shape == tuple(tt.grad.shape)


@given(case=conv_cases(2), dtype=float_dtypes, seed=seeds, rung=st.sampled_from(["conv2d", "conv2d_closed_form"]))
def test_conv2d_double_backward_parity(case, dtype, seed, rung):
    """Gradients of gradients of conv2d (the default differentiated through its closed form, whose
    im2col/col2im are the recorded Unfold/Fold there) equal torch's: Hessian-vector products in
    x, W, b and the J·w product in the cotangent."""
    xs, ws, bias, kwargs = case
    ours, theirs = _conv_fns(getattr(F, rung), TF.conv2d, kwargs, bias)
    check_double_parity(ours, theirs, *_arrays(seed, xs, ws, ws[:1])[:3 if bias else 2], dtype=dtype, seed=seed,
                        name=f"{rung} (2nd order)")


@given(case=conv_cases(1), dtype=float_dtypes, seed=seeds)
def test_conv1d_and_transpose_double_backward_parity(case, dtype, seed):
    xs, ws, bias, kwargs = case
    check_double_parity(*_conv_fns(F.conv1d, TF.conv1d, kwargs, bias),
                        *_arrays(seed, xs, ws, ws[:1])[:3 if bias else 2], dtype=dtype, seed=seed, name="conv1d")
    kw = dict(stride=kwargs["stride"], dilation=kwargs["dilation"], groups=kwargs["groups"],
              padding=0 if isinstance(kwargs["padding"], str) else kwargs["padding"])
    x_t = xs[:-2] + (ws[0],) + xs[-1:]             # conv_transpose1d: the conv's output channels in
    w_t = (ws[0], ws[1]) + ws[2:]                   # weight (Cin, Cout/groups, k)
    try:
        TF.conv_transpose1d(torch.zeros(x_t, dtype=torch.float64, device=DEVICE),
                            torch.zeros(w_t, dtype=torch.float64, device=DEVICE), **kw)
    except RuntimeError:
        return                                      # a padding torch refuses for the transposed form
    check_double_parity(lambda x, w: F.conv_transpose1d(x, w, **kw), lambda x, w: TF.conv_transpose1d(x, w, **kw),
                        *_arrays(seed, x_t, w_t), dtype=dtype, seed=seed, name="conv_transpose1d")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unfold_fold_double_backward_parity(dtype):
    """unfold and fold are linear and each other's adjoint: the second derivative of a product
    through them is torch's."""
    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    x = values((2, 3, 5, 6), 7)
    check_double_parity(lambda t: F.unfold(t, **kw) * F.unfold(t, **kw), lambda t: TF.unfold(t, **kw) * TF.unfold(t, **kw),
                        x, dtype=dtype, name="unfold")
    cols = values((2, 3 * 6, 12), 8)
    check_double_parity(lambda t: F.fold(t * t, (5, 6), **kw), lambda t: TF.fold(t * t, (5, 6), **kw),
                        cols, dtype=dtype, name="fold")


@given(case=pool_cases(2), dtype=float_dtypes, seed=seeds)
def test_max_pool2d_double_backward_parity(case, dtype, seed):
    """Gradients of gradients through max_pool2d (its backward, a scatter-add to the argmax, is
    the recorded index_add on Tensors) equal torch's; the pool of t² makes the second derivative
    in x non-zero."""
    shape, kw = case
    check_double_parity(lambda t: F.max_pool2d(t * t, **kw), lambda t: TF.max_pool2d(t * t, **kw),
                        values(shape, seed, "distinct") + 3.0, dtype=dtype, seed=seed, name="max_pool2d")


@given(case=pool_cases(2, dilation=False), dtype=float_dtypes, seed=seeds, cip=st.booleans(),
       div=st.sampled_from([None, None, 3]))
def test_avg_pool2d_double_backward_parity(case, dtype, seed, cip, div):
    shape, kw = case
    kw = dict(kw, count_include_pad=cip, divisor_override=div)
    check_double_parity(lambda t: F.avg_pool2d(t * t, **kw), lambda t: TF.avg_pool2d(t * t, **kw),
                        values(shape, seed), dtype=dtype, seed=seed, name="avg_pool2d")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_adaptive_max_pool_and_pool1d_double_backward_parity(dtype):
    x = values((2, 3, 7, 8), 5, "distinct") + 3.0
    check_double_parity(lambda t: F.adaptive_max_pool2d(t * t, (3, 5)), lambda t: TF.adaptive_max_pool2d(t * t, (3, 5)),
                        x, dtype=dtype, name="adaptive_max_pool2d")
    check_double_parity(lambda t: F.max_pool1d(t * t, 3, 2, 1), lambda t: TF.max_pool1d(t * t, 3, 2, 1),
                        x[:, :, 0], dtype=dtype, name="max_pool1d")
    check_double_parity(lambda t: F.avg_pool1d(t * t, 3, 2, 1), lambda t: TF.avg_pool1d(t * t, 3, 2, 1),
                        x[:, :, 0], dtype=dtype, name="avg_pool1d")


def test_torch_top_level_spellings():
    """torch.conv2d, torch.max_pool2d, torch.avg_pool1d... are the functional ops (torch's top level)."""
    x = values((2, 3, 8, 8), 1)
    for name, args in [("conv2d", (values((4, 3, 3, 3), 2), None, 1, 1)), ("max_pool2d", (2,)),
                       ("conv1d", ()), ("avg_pool1d", (3, 2)), ("adaptive_avg_pool1d", (3,)), ("max_pool1d", (2,))]:
        one_d = name.endswith("1d")
        xi = x[:, :, 0] if one_d else x
        if name == "conv1d":
            args = (values((4, 3, 3), 3),)
        ours = getattr(tg, name)(tg.tensor(xi), *[tg.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
        theirs = getattr(torch, name)(torch.tensor(xi, device=DEVICE),
                                      *[torch.tensor(a, device=DEVICE) if isinstance(a, np.ndarray) else a for a in args])
        np.testing.assert_allclose(ours.numpy(), theirs.cpu().numpy(), rtol=1e-12, err_msg=name)
