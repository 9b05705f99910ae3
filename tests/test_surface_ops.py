"""Names teaching code uses (tools/surface/table.md) that tinygrad_tx lacked, against torch:
F.interpolate / nn.Upsample, F.prelu / nn.PReLU, F.instance_norm / nn.InstanceNorm1d-3d, the
padding layers, nn.LazyLinear. Values and gradients with a random cotangent (reference.testing:
float64 ≤ 1e-10, float32 by the kit's rule), finite differences, torch's errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import DEVICE, check_module_parity, check_parity
from tinygrad_tx import gradcheck
from tinygrad_tx.testing.strategies import seeds, values

F = tg.nn.functional
TF = torch.nn.functional
DTYPES = st.sampled_from([np.float64, np.float32])
LINEAR = {1: "linear", 2: "bilinear", 3: "trilinear"}


# ============================================================================ interpolate

@st.composite
def resamplings(draw):
    """(input shape, interpolate keywords) over every mode, size or scale factor, align_corners."""
    k = draw(st.integers(1, 3))
    spatial = tuple(draw(st.lists(st.integers(1, 6 if k < 3 else 4), min_size=k, max_size=k)))
    mode = draw(st.sampled_from(["nearest", "nearest-exact", LINEAR[k]] + (["area"] if k < 3 else [])))
    kw = {"mode": mode}
    if draw(st.booleans()):
        kw["size"] = tuple(draw(st.lists(st.integers(1, 8 if k < 3 else 5), min_size=k, max_size=k)))
        if draw(st.booleans()) and len(set(kw["size"])) == 1:
            kw["size"] = kw["size"][0]
    else:
        factor = draw(st.sampled_from([0.5, 0.7, 1.3, 1.5, 2.0, 2.5, 3.0]))
        spatial = tuple(max(s, 2) for s in spatial)   # floor(s · factor) >= 1
        kw["scale_factor"] = factor
        if mode != "area" and draw(st.booleans()):
            kw["recompute_scale_factor"] = True
    if mode == LINEAR[k]:
        kw["align_corners"] = draw(st.booleans())
    return (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + spatial, kw


def _torchs_nearest_backward_disagrees(shape, kw) -> bool:
    """torch's quirk: 'nearest' with a scale_factor can send an output's gradient to another
    source than its forward read (1-D, n = 2 or 3, scale 1.3: the forward reads [x0, x0], the
    backward gives [1, 1] — its own torch.autograd.gradcheck fails), so such a draw has no torch
    answer to compare with. Found by asking torch: each output's source from the forward of
    arange, against the backward of ones."""
    if kw["mode"] != "nearest" or "scale_factor" not in kw:
        return False
    n = int(np.prod(shape[2:]))
    x = torch.arange(n, dtype=torch.float64, device=DEVICE).reshape((1, 1) + tuple(shape[2:])).requires_grad_()
    y = TF.interpolate(x, **kw)
    y.backward(torch.ones_like(y))
    reads = torch.bincount(y.detach().reshape(-1).long().cpu(), minlength=n).double()
    return not torch.equal(reads, x.grad.reshape(-1).cpu())


@given(case=resamplings(), seed=seeds, dtype=DTYPES)
def test_interpolate_parity(case, seed, dtype):
    """values and input gradient equal torch's for every mode (the resampling weights and source
    indices computed as torch's kernels do)."""
    shape, kw = case
    assume(not _torchs_nearest_backward_disagrees(shape, kw))
    check_parity(lambda x: F.interpolate(x, **kw), lambda x: TF.interpolate(x, **kw), values(shape, seed + 1),
                 dtype=dtype, seed=seed, name=f"interpolate {kw['mode']}")


@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(size=(5, 3), mode="bilinear"),
                                dict(scale_factor=1.5, mode="bilinear", align_corners=True),
                                dict(size=(4, 7), mode="nearest-exact")])
def test_interpolate_finite_differences(kw):
    assert gradcheck(lambda x: F.interpolate(x, **kw), [values((1, 2, 3, 4), 5)])


def test_upsample_modules_parity():
    x = values((2, 3, 4, 5), 1)
    for make in (lambda T: T.nn.Upsample(scale_factor=2), lambda T: T.nn.Upsample(size=(3, 7), mode="bilinear"),
                 lambda T: T.nn.UpsamplingNearest2d(scale_factor=3), lambda T: T.nn.UpsamplingBilinear2d(size=6),
                 lambda T: T.nn.Sequential(T.nn.Upsample(scale_factor=2), T.nn.Conv2d(3, 2, 3, padding=1))):
        check_module_parity(make, x)
        assert repr(make(tg)) == repr(make(torch))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, kw in (("upsample", {"scale_factor": 2}), ("upsample_nearest", {"size": 7}),
                         ("upsample_bilinear", {"scale_factor": 2})):
            check_parity(lambda t: getattr(F, name)(t, **kw), lambda t: getattr(TF, name)(t, **kw), x,
                         name=f"F.{name}")
    with pytest.warns(UserWarning, match="upsample is deprecated"):
        F.upsample(tg.tensor(x), scale_factor=2)


@pytest.mark.parametrize("args, kw, exc, pattern", [
    ((3, 5), dict(size=3, mode="nearest", align_corners=True), ValueError, "align_corners option can only be set"),
    ((1, 1, 5), dict(mode="nearest"), ValueError, "either size or scale_factor should be defined"),
    ((1, 1, 5), dict(size=3, scale_factor=2.0), ValueError, "only one of size or scale_factor"),
    ((1, 1, 5), dict(size=3, mode="bilinear"), NotImplementedError, "Got 3D input, but bilinear mode needs 4D"),
    ((1, 1, 5), dict(size=0), RuntimeError, "sizes should be greater than 0"),
    ((3, 5), dict(scale_factor=2), NotImplementedError, "Only 3D, 4D and 5D input"),
    ((1, 1, 5), dict(size=(2, 3)), ValueError, "same number of spatial dimensions"),
])
@pytest.mark.cpu_only(reason="argument errors, no tensor computed")
def test_interpolate_errors_as_torch(args, kw, exc, pattern):
    """``args``: the input's shape."""
    with pytest.raises(exc, match=pattern):
        F.interpolate(tg.zeros(*args), **kw)
    with pytest.raises(exc, match=pattern):
        TF.interpolate(torch.zeros(*args), **kw)


def test_interpolate_refusals_name_the_argument():
    with pytest.raises(NotImplementedError, match="mode='bicubic' is not implemented"):
        F.interpolate(tg.zeros(1, 1, 4, 4), size=3, mode="bicubic")
    with pytest.raises(NotImplementedError, match="antialias=True"):
        F.interpolate(tg.zeros(1, 1, 4, 4), size=3, mode="bilinear", antialias=True)
    with pytest.raises(TypeError, match=r"size must be an int .*got 2.5"):
        F.interpolate(tg.zeros(1, 1, 4), size=2.5)
    with pytest.raises(NotImplementedError, match="mode='cubic' is not one of"):
        F.interpolate(tg.zeros(1, 1, 4), size=2, mode="cubic")


# ============================================================================ prelu

def _checkerboard(a):
    """|a| with the sign (−1)^(sum of the indices): every channel has both signs (the slope's
    gradient Σ g·x over the negative positions is never trivially 0), and no x is 0."""
    signs = (-1.0) ** np.indices(a.shape).sum(0)
    return np.abs(a) * signs


@given(shape=st.sampled_from([(5,), (3, 4), (2, 3, 4), (2, 3, 2, 2)]), per_channel=st.booleans(), seed=seeds,
       dtype=DTYPES)
def test_prelu_parity(shape, per_channel, seed, dtype):
    """dL/dx = g·(1 or w), dL/dw = Σ g·x over the negative positions, as torch's."""
    channels = shape[1] if len(shape) >= 2 and per_channel else 1
    x = _checkerboard(values(shape, seed + 1, "away_from_zero"))
    w = values((channels,), seed + 2)
    check_parity(F.prelu, TF.prelu, x, w, dtype=dtype, seed=seed, name="prelu")


@pytest.mark.cpu_only(reason="argument errors and reprs; the parity goes through check_parity/check_module_parity on DEVICE")
def test_prelu_module_and_finite_differences():
    x = _checkerboard(values((2, 3, 4), 2, "away_from_zero"))
    check_module_parity(lambda T: T.nn.PReLU(3, init=0.1), x)
    check_module_parity(lambda T: T.nn.PReLU(), x)
    assert repr(tg.nn.PReLU(3)) == repr(torch.nn.PReLU(3))
    assert gradcheck(F.prelu, [x, values((3,), 3)])
    assert tg.prelu is F.prelu
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        F.prelu(tg.zeros(2, 3), tg.zeros(2))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        TF.prelu(torch.zeros(2, 3), torch.zeros(2))
    with pytest.raises(TypeError, match="weight has dtype float32 but input has dtype float64"):
        F.prelu(tg.zeros(2, 3, dtype=tg.float64), tg.zeros(3))


# ============================================================================ instance norm

@given(shape=st.sampled_from([(2, 3, 4), (1, 2, 3, 3), (2, 2, 2, 3, 2)]), affine=st.booleans(), seed=seeds,
       dtype=DTYPES)
def test_instance_norm_module_parity(shape, affine, seed, dtype):
    """output, input and affine-parameter gradients equal torch's (training: each plane's own
    statistics)."""
    name = f"InstanceNorm{len(shape) - 2}d"
    check_module_parity(lambda T: getattr(T.nn, name)(shape[1], affine=affine), values(shape, seed + 1), dtype=dtype,
                        seed=seed, name=name)


@pytest.mark.cpu_only(reason="running statistics compared after CPU steps; the eval parity goes through check_module_parity, which moves torch's module to DEVICE")
def test_instance_norm_running_stats_and_eval():
    x = values((2, 3, 4, 5), 4)
    ours = tg.nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.2).double()
    ref = torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.2).double()
    assert list(ours.state_dict()) == list(ref.state_dict()) and repr(ours) == repr(ref)
    for _ in range(2):
        ours(tg.tensor(x))
        ref(torch.tensor(x))
    for key in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(np.asarray(ours.state_dict()[key]), ref.state_dict()[key].numpy(), rtol=1e-12)
    ours.eval()
    ref.eval()
    check_module_parity((ours, ref), x)
    # unbatched input, and the functional form with use_input_stats=False
    np.testing.assert_allclose(tg.nn.InstanceNorm1d(3)(tg.tensor(x[0, :, 0])).numpy(),
                               torch.nn.InstanceNorm1d(3)(torch.tensor(x[0, :, 0])).numpy(), rtol=1e-12)
    rm, rv = values((3,), 5), values((3,), 6, "positive")
    check_parity(lambda t: F.instance_norm(t, tg.tensor(rm), tg.tensor(rv), use_input_stats=False),
                 lambda t: TF.instance_norm(t, torch.tensor(rm, device=t.device), torch.tensor(rv, device=t.device),
                                            use_input_stats=False), x, name="instance_norm eval")
    assert gradcheck(lambda t, w, b: F.instance_norm(t, weight=w, bias=b), [x, values((3,), 7), values((3,), 8)])


def test_instance_norm_errors_as_torch():
    for lib in (tg, torch):
        with pytest.raises(ValueError, match="expected input's size at dim=1 to match num_features"):
            lib.nn.InstanceNorm2d(3, affine=True)(lib.zeros(2, 4, 3, 3))
        with pytest.warns(UserWarning, match="does not match num_features"):
            lib.nn.InstanceNorm2d(3)(lib.ones(2, 4, 3, 3))
        with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
            lib.nn.functional.instance_norm(lib.zeros(2, 3, 1, 1))
        with pytest.raises(ValueError, match="expected 3D or 4D input"):
            lib.nn.InstanceNorm2d(3)(lib.zeros(3, 3))


# ============================================================================ padding layers

@pytest.mark.parametrize("kind", ["Reflection", "Replication", "Zero", "Constant", "Circular"])
@pytest.mark.parametrize("dims", [1, 2])
def test_padding_layers_parity(kind, dims):
    padding = (1, 2, 2, 0)[:2 * dims]
    x = values((2, 3) + (4, 5)[:dims], 9)
    args = (padding, 1.5) if kind == "Constant" else (padding,)
    name = f"{kind}Pad{dims}d"
    check_module_parity(lambda T: getattr(T.nn, name)(*args), x, name=name)
    assert repr(getattr(tg.nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))
    assert repr(getattr(tg.nn, name)(*((2,) + args[1:]))) == repr(getattr(torch.nn, name)(*((2,) + args[1:])))


def test_padding_layer_errors():
    with pytest.raises(TypeError, match=r"ReflectionPad2d: padding must be an int or a tuple of 4 ints, got \(1, 2\)"):
        tg.nn.ReflectionPad2d((1, 2))


# ============================================================================ LazyLinear

@pytest.mark.cpu_only(reason="a lazy module's class change and shapes; the parity goes through check_module_parity, which moves torch's module to DEVICE")
def test_lazy_linear_becomes_linear():
    ours, ref = tg.nn.LazyLinear(4), torch.nn.LazyLinear(4)
    assert repr(ours) == repr(ref) and repr(tg.nn.LazyLinear(2, bias=False)) == repr(torch.nn.LazyLinear(2, bias=False))
    assert ours.has_uninitialized_params() and list(ours.parameters()) == []
    x = values((2, 5), 10)
    ours(tg.tensor(x.astype(np.float32)))
    ref(torch.tensor(x.astype(np.float32)))
    assert type(ours) is tg.nn.Linear and type(ref) is torch.nn.Linear and repr(ours) == repr(ref)
    assert [tuple(p.shape) for p in ours.parameters()] == [tuple(p.shape) for p in ref.parameters()]
    w = ours.weight.detach().numpy()
    bound = 1 / np.sqrt(5)               # torch's Linear init: U(-1/sqrt(in), 1/sqrt(in))
    assert np.all(np.abs(w) <= bound) and w.std() > 0
    check_module_parity((ours, ref.double()), x)
    with pytest.raises(ValueError, match="at least one dimension"):
        tg.nn.LazyLinear(3)(tg.tensor(1.0))
