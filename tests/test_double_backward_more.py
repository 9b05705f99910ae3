"""Gradients of gradients of the functional ops, losses and norms that issue 31 found refusing
``create_graph`` (silu, elu, softplus, the regression losses, nll, normalize, reflect padding,
interpolate, ...), against PyTorch.

Each case is checked with ``reference.testing.check_double_parity``:
``grad(⟨grad(out, x, v, create_graph=True), w⟩, (x, v))`` with random cotangents, float64 to
1e-10 relative and float32 against torch's own float32 error, torch's second derivative asserted
non-trivial; a subset again by finite differences of the gradient (``tinygrad_tx.autograd.gradgradcheck``).
Inputs are drawn away from kinks (0 for the piecewise ops, ±δ for Huber, ±3 for hardswish) where a
one-sided derivative would make the comparison a coin toss. Where torch refuses to differentiate twice
(ctc_loss), we refuse too, naming the op.
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
from reference.testing import DEVICE, check_double_parity

F64, F32 = np.float64, np.float32


def rnd(shape, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def away(shape, lo=0.3, hi=2.0, seed=0):
    """|x| in [lo, hi] with random signs: away from the kinks at 0."""
    r = np.random.default_rng(seed)
    return r.uniform(lo, hi, shape) * r.choice([-1.0, 1.0], shape)


def both(make):
    """``make(lib, F)`` -> f for ours (tinygrad_tx, its functional) and torch's."""
    return make(tg, F), make(torch, TF)


def const(lib, a):
    """A constant (no grad) of ``lib`` from a NumPy array."""
    return lib.from_numpy(np.asarray(a).copy())


def like(lib, a, x):
    """A constant of x's float dtype."""
    return const(lib, np.asarray(a)).to(x.dtype)


U = (3, 4)
IMG = (2, 3, 4, 5)
CLS = np.array([1, 3, 0])
CLS_IGN = np.array([1, -100, 2])
W4 = np.array([0.5, 2.0, 1.0, 1.5])
SIGNS = np.array([[1.0, -1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, 1.0], [1.0, 1.0, -1.0, 1.0]])
ML_TARGET = np.array([[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 0, 0]])

CASES = {
    # ---------------------------------------------------------------- pointwise activations
    "silu": (*both(lambda lib, f: lambda x: f.silu(x)), (rnd(U, -4, 4),)),
    "softplus": (*both(lambda lib, f: lambda x: f.softplus(x)), (rnd(U, -4, 4),)),
    "softplus_beta_threshold": (*both(lambda lib, f: lambda x: f.softplus(x, beta=2.0, threshold=3.0) * x),
                                (away(U, 0.2, 3.0),)),
    "mish": (*both(lambda lib, f: lambda x: f.mish(x)), (rnd(U, -4, 4),)),
    "logsigmoid": (*both(lambda lib, f: lambda x: f.logsigmoid(x)), (rnd(U, -4, 4),)),
    "glu": (*both(lambda lib, f: lambda x: f.glu(x, 1)), (rnd((3, 6)),)),
    "glu_dim0": (*both(lambda lib, f: lambda x: f.glu(x, 0)), (rnd((4, 3)),)),
    "elu": (*both(lambda lib, f: lambda x: f.elu(x, 0.7)), (away(U),)),
    "selu": (*both(lambda lib, f: lambda x: f.selu(x)), (away(U),)),
    "celu": (*both(lambda lib, f: lambda x: f.celu(x, 1.5)), (away(U),)),   # 1.5: torch's celu backward uses 1/float32(alpha)
    "leaky_relu": (*both(lambda lib, f: lambda x: f.leaky_relu(x, 0.2) * x), (away(U),)),
    "hardtanh": (*both(lambda lib, f: lambda x: f.hardtanh(x, -1.0, 1.5) * x), (away(U, 0.1, 2.5),)),
    "relu6": (*both(lambda lib, f: lambda x: f.relu6(x * 4) * x), (away(U, 0.1, 2.5),)),
    "hardswish": (*both(lambda lib, f: lambda x: f.hardswish(x * 2.5)), (away(U, 0.2, 1.8),)),
    "softsign": (*both(lambda lib, f: lambda x: f.softsign(x)), (away(U),)),
    "tanhshrink": (*both(lambda lib, f: lambda x: f.tanhshrink(x)), (rnd(U),)),
    "prelu": (*both(lambda lib, f: lambda x, w: f.prelu(x, w) * x), (away((2, 3, 4)), rnd((3,), 0.1, 0.5, 1))),
    "prelu_scalar_weight": (*both(lambda lib, f: lambda x, w: f.prelu(x, w) * x), (away((2, 3)), rnd((1,), 0.1, 0.5, 1))),
    # ---------------------------------------------------------------- regression losses
    "mse_loss": (*both(lambda lib, f: lambda x, t: f.mse_loss(x, t)), (rnd(U), rnd(U, seed=1))),
    "mse_loss_none": (*both(lambda lib, f: lambda x, t: f.mse_loss(x * x, t, reduction="none")),
                      (rnd(U), rnd(U, seed=1))),
    "mse_loss_weighted": (*both(lambda lib, f: lambda x, t: f.mse_loss(x, t, weight=like(lib, rnd(U, 0.5, 2, 5), x))),
                          (rnd(U), rnd(U, seed=1))),
    "l1_loss": (*both(lambda lib, f: lambda x, t: f.l1_loss(x * x, t, reduction="sum")), (away(U), rnd(U, -0.2, 0.2, 1))),
    "smooth_l1_loss": (*both(lambda lib, f: lambda x, t: f.smooth_l1_loss(x, t, beta=0.8, reduction="none")),
                       (rnd(U, -2, 2), rnd(U, -2, 2, 1))),
    "smooth_l1_loss_beta0": (*both(lambda lib, f: lambda x, t: f.smooth_l1_loss(x * x, t, beta=0.0)),
                             (away(U), rnd(U, -0.2, 0.2, 1))),
    "huber_loss": (*both(lambda lib, f: lambda x, t: f.huber_loss(x, t, delta=0.9, reduction="none")),
                   (rnd(U, -2, 2), rnd(U, -2, 2, 1))),
    "huber_loss_weighted": (*both(lambda lib, f: lambda x, t: f.huber_loss(x, t, delta=0.9,
                                                                           weight=like(lib, rnd(U, 0.5, 2, 5), x))),
                            (rnd(U, -2, 2), rnd(U, -2, 2, 1))),
    # ---------------------------------------------------------------- likelihood losses
    "binary_cross_entropy": (*both(lambda lib, f: lambda p, t: f.binary_cross_entropy(p, t, reduction="none")),
                             (rnd(U, 0.05, 0.95), rnd(U, 0, 1, 1))),
    "binary_cross_entropy_weighted": (
        *both(lambda lib, f: lambda p, t: f.binary_cross_entropy(p, t, weight=like(lib, W4, p))),
        (rnd(U, 0.05, 0.95), rnd(U, 0, 1, 1))),
    "bce_with_logits": (*both(lambda lib, f: lambda x, t: f.binary_cross_entropy_with_logits(x, t, reduction="none")),
                        (rnd(U, -3, 3), rnd(U, 0, 1, 1))),
    "bce_with_logits_weights": (
        *both(lambda lib, f: lambda x, t: f.binary_cross_entropy_with_logits(
            x, t, weight=like(lib, rnd(U, 0.5, 2, 5), x), pos_weight=like(lib, W4, x))),
        (rnd(U, -3, 3), rnd(U, 0, 1, 1))),
    "kl_div": (*both(lambda lib, f: lambda x, t: f.kl_div(x, t, reduction="batchmean")), (rnd(U, -3, 0), rnd(U, 0.05, 1, 1))),
    "kl_div_log_target": (*both(lambda lib, f: lambda x, t: f.kl_div(x, t, reduction="none", log_target=True)),
                          (rnd(U, -3, 0), rnd(U, -3, 0, 1))),
    "soft_margin_loss": (*both(lambda lib, f: lambda x: f.soft_margin_loss(x, const(lib, SIGNS).to(x.dtype), reduction="none")),
                         (rnd(U, -3, 3),)),
    "nll_loss": (*both(lambda lib, f: lambda x: f.nll_loss(x * x, const(lib, CLS))), (rnd(U),)),
    "nll_loss_weighted_ignored": (
        *both(lambda lib, f: lambda x: f.nll_loss(x * x, const(lib, CLS_IGN), weight=like(lib, W4, x))), (rnd(U),)),
    "nll_loss_unbatched": (*both(lambda lib, f: lambda x: f.nll_loss(x * x, const(lib, np.array(2)))), (rnd((4,)),)),
    "nll_loss_none": (*both(lambda lib, f: lambda x: f.nll_loss(x * x, const(lib, CLS), reduction="none")), (rnd(U),)),
    "nll_loss_sum_2d": (*both(lambda lib, f: lambda x: f.nll_loss(x * x, const(lib, np.array([[0, 2], [1, 1]])),
                                                                   reduction="sum")), (rnd((2, 3, 2)),)),
    "poisson_nll_loss": (*both(lambda lib, f: lambda x, t: f.poisson_nll_loss(x, t)), (rnd(U, -1, 1), rnd(U, 0, 3, 1))),
    "poisson_nll_loss_full": (*both(lambda lib, f: lambda x, t: f.poisson_nll_loss(x, t, log_input=False, full=True)),
                              (rnd(U, 0.3, 2), rnd(U, 2, 4, 1))),
    "gaussian_nll_loss": (*both(lambda lib, f: lambda x, t, v: f.gaussian_nll_loss(x, t, v)),
                          (rnd(U), rnd(U, seed=1), rnd(U, 0.3, 2, 2))),
    # ---------------------------------------------------------------- margin and embedding losses
    "margin_ranking_loss": (*both(lambda lib, f: lambda a, b: f.margin_ranking_loss(a * a, b, const(lib, SIGNS[0]).to(a.dtype), 0.1)),
                            (away((4,)), rnd((4,), -0.2, 0.2, 1))),
    "hinge_embedding_loss": (*both(lambda lib, f: lambda x: f.hinge_embedding_loss(x * x, const(lib, SIGNS).to(x.dtype), 2.0)),
                             (rnd(U, 0.2, 1.2),)),
    "multilabel_soft_margin_loss": (*both(lambda lib, f: lambda x: f.multilabel_soft_margin_loss(x, const(lib, SIGNS > 0).to(x.dtype))),
                                    (rnd(U),)),
    "cosine_embedding_loss": (*both(lambda lib, f: lambda a, b: f.cosine_embedding_loss(a, b, const(lib, SIGNS[:, 0]), margin=-0.5)),
                              (rnd(U), rnd(U, seed=1))),
    "triplet_margin_loss": (*both(lambda lib, f: lambda a, p, n: f.triplet_margin_loss(a, p, n, margin=3.0)),
                            (rnd(U), rnd(U, seed=1), rnd(U, seed=2))),
    "triplet_margin_loss_p3_swap": (*both(lambda lib, f: lambda a, p, n: f.triplet_margin_loss(a, p, n, margin=3.0, p=3, swap=True)),
                                    (rnd(U), rnd(U, seed=1), rnd(U, seed=2))),
    # ---------------------------------------------------------------- norms and distances
    "normalize": (*both(lambda lib, f: lambda x: f.normalize(x, dim=1)), (rnd(U),)),
    "normalize_p1": (*both(lambda lib, f: lambda x: f.normalize(x, p=1.0, dim=0) * x), (away(U),)),
    "normalize_p3": (*both(lambda lib, f: lambda x: f.normalize(x, p=3.0, dim=-1)), (away(U),)),
    "normalize_inf": (*both(lambda lib, f: lambda x: f.normalize(x, p=float("inf"), dim=1)), (away(U),)),
    "pairwise_distance_keepdim_p3": (*both(lambda lib, f: lambda a, b: f.pairwise_distance(a, b, p=3.0, keepdim=True)),
                                     (rnd(U), rnd(U, seed=1))),
    "pairwise_distance": (*both(lambda lib, f: lambda a, b: f.pairwise_distance(a, b)), (rnd(U), rnd(U, seed=1))),
    "pairwise_distance_p1": (*both(lambda lib, f: lambda a, b: f.pairwise_distance(a, b, p=1.0) ** 2),
                             (away(U), rnd(U, -0.2, 0.2, 1))),
    "cosine_similarity": (*both(lambda lib, f: lambda a, b: f.cosine_similarity(a, b, dim=1)), (rnd(U), rnd(U, seed=1))),
    "norm": (*both(lambda lib, f: lambda x: x.norm()), (rnd(U),)),
    "norm_dim_p3": (*both(lambda lib, f: lambda x: x.norm(p=3, dim=1)), (away(U),)),
    "norm_p1": (*both(lambda lib, f: lambda x: x.norm(p=1, dim=0) ** 2), (away(U),)),
    "norm_inf": (*both(lambda lib, f: lambda x: x.norm(p=float("inf"), dim=1) ** 2), (away(U),)),
    "norm_p_half": (*both(lambda lib, f: lambda x: x.norm(p=0.5, dim=1)), (away(U),)),
    "vector_norm": (*both(lambda lib, f: lambda x: lib.linalg.vector_norm(x, 2, dim=(0, 1))), (rnd(U),)),
    "vector_norm_p3": (*both(lambda lib, f: lambda x: lib.linalg.vector_norm(x, 3.0, dim=0, keepdim=True)), (away(U),)),
    "vector_norm_ninf": (*both(lambda lib, f: lambda x: lib.linalg.vector_norm(x, float("-inf"), dim=1) ** 2), (away(U),)),
    "matrix_norm_fro": (*both(lambda lib, f: lambda x: lib.linalg.matrix_norm(x)), (rnd((2, 3, 4)),)),
    "linalg_norm": (*both(lambda lib, f: lambda x: lib.linalg.norm(x, dim=1)), (rnd(U),)),
    "dist": (*both(lambda lib, f: lambda a, b: lib.dist(a, b, 3)), (rnd(U), rnd(U, seed=1))),
    # ---------------------------------------------------------------- padding and resampling
    "pad_constant": (*both(lambda lib, f: lambda x: f.pad(x, (1, 2, 0, 1), value=0.5) ** 2), (rnd(U),)),
    "pad_constant_crop": (*both(lambda lib, f: lambda x: f.pad(x, (-1, 2, 1, -1)) ** 2), (rnd(U),)),
    "pad_reflect": (*both(lambda lib, f: lambda x: f.pad(x, (2, 1), mode="reflect") ** 2), (rnd((2, 3, 4)),)),
    "pad_reflect_2d": (*both(lambda lib, f: lambda x: f.pad(x, (2, 1, 1, 2), mode="reflect") ** 2), (rnd(IMG),)),
    "pad_replicate": (*both(lambda lib, f: lambda x: f.pad(x, (2, 1, 1, 3), mode="replicate") ** 2), (rnd(IMG),)),
    "pad_circular": (*both(lambda lib, f: lambda x: f.pad(x, (2, 1, 1, 1), mode="circular") ** 2), (rnd(IMG),)),
    "interpolate_nearest": (*both(lambda lib, f: lambda x: f.interpolate(x, scale_factor=2) ** 2), (rnd(IMG),)),
    "interpolate_nearest_1d": (*both(lambda lib, f: lambda x: f.interpolate(x, size=7) ** 2), (rnd((2, 3, 4)),)),
    "interpolate_bilinear": (*both(lambda lib, f: lambda x: f.interpolate(x, size=(5, 7), mode="bilinear") ** 2),
                             (rnd(IMG),)),
    "interpolate_bilinear_corners": (*both(lambda lib, f: lambda x: f.interpolate(x, scale_factor=1.5, mode="bilinear",
                                                                                   align_corners=True) ** 2), (rnd(IMG),)),
    "interpolate_linear": (*both(lambda lib, f: lambda x: f.interpolate(x, size=9, mode="linear") ** 2), (rnd((2, 3, 4)),)),
    "interpolate_trilinear": (*both(lambda lib, f: lambda x: f.interpolate(x, size=(3, 5, 2), mode="trilinear") ** 2),
                              (rnd((1, 2, 2, 3, 4)),)),
    "interpolate_nearest_exact": (*both(lambda lib, f: lambda x: f.interpolate(x, size=(7, 3), mode="nearest-exact") ** 2),
                                  (rnd(IMG),)),
    "interpolate_area": (*both(lambda lib, f: lambda x: f.interpolate(x, size=(3, 2), mode="area") ** 2), (rnd(IMG),)),
    "pad_reflect_3d": (*both(lambda lib, f: lambda x: f.pad(x, (1, 1, 2, 0, 1, 2), mode="reflect") ** 2),
                       (rnd((1, 2, 3, 4, 3)),)),
    "upsample_nearest": (*both(lambda lib, f: lambda x: f.upsample_nearest(x, scale_factor=2) ** 2), (rnd(IMG),)),
    "pixel_shuffle": (*both(lambda lib, f: lambda x: f.pixel_shuffle(x, 2) ** 2), (rnd((2, 8, 2, 3)),)),
    "pixel_unshuffle": (*both(lambda lib, f: lambda x: f.pixel_unshuffle(x, 2) ** 2), (rnd((2, 2, 4, 6)),)),
    # ---------------------------------------------------------------- normalisation, pooling, convolution
    "group_norm": (*both(lambda lib, f: lambda x, w, b: f.group_norm(x, 2, w, b)), (rnd((2, 4, 3)), rnd((4,), seed=1), rnd((4,), seed=2))),
    "instance_norm": (*both(lambda lib, f: lambda x: f.instance_norm(x)), (rnd((2, 3, 5)),)),
    "max_pool2d": (*both(lambda lib, f: lambda x: f.max_pool2d(x, 2) ** 2), (rnd(IMG),)),
    "avg_pool2d": (*both(lambda lib, f: lambda x: f.avg_pool2d(x, 2, padding=1) ** 2), (rnd(IMG),)),
    "adaptive_avg_pool2d": (*both(lambda lib, f: lambda x: f.adaptive_avg_pool2d(x, (3, 2)) ** 2), (rnd(IMG),)),
    "adaptive_max_pool1d": (*both(lambda lib, f: lambda x: f.adaptive_max_pool1d(x, 3) ** 2), (rnd((2, 3, 7)),)),
    "conv1d": (*both(lambda lib, f: lambda x, w: f.conv1d(x, w, padding=1) ** 2), (rnd((2, 3, 6)), rnd((4, 3, 3), seed=1))),
    "conv_transpose2d": (*both(lambda lib, f: lambda x, w: f.conv_transpose2d(x, w, stride=2) ** 2),
                         (rnd((1, 2, 3, 3)), rnd((2, 3, 2, 2), seed=1))),
    "fold_unfold": (*both(lambda lib, f: lambda x: f.fold(f.unfold(x, 2), (4, 5), 2) ** 2), (rnd(IMG),)),
    "softmin": (*both(lambda lib, f: lambda x: f.softmin(x, dim=1)), (rnd(U),)),
    "gelu_tanh": (*both(lambda lib, f: lambda x: f.gelu(x, approximate="tanh")), (rnd(U),)),
}


@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_double_backward_parity(name, dtype):
    ours, theirs, inputs = CASES[name]
    check_double_parity(ours, theirs, *inputs, dtype=dtype, name=name, seed=3)


# one case per Function made twice differentiable, checked again by finite differences of the gradient
GRADGRAD = ["silu", "softplus", "mish", "logsigmoid", "glu", "elu", "leaky_relu", "hardswish", "softsign",
            "tanhshrink", "prelu", "mse_loss_weighted", "l1_loss", "smooth_l1_loss", "huber_loss",
            "binary_cross_entropy_weighted", "bce_with_logits_weights", "kl_div", "kl_div_log_target",
            "soft_margin_loss", "norm_dim_p3", "norm_inf", "vector_norm_p3", "normalize", "pairwise_distance",
            "nll_loss_weighted_ignored", "pad_constant_crop", "pad_reflect_2d", "pad_circular", "interpolate_bilinear",
            "interpolate_nearest_1d"]


@pytest.mark.parametrize("name", GRADGRAD)
def test_second_derivative_by_finite_differences(name):
    ours, _, inputs = CASES[name]
    leaves = [tg.from_numpy(a.copy()).requires_grad_() for a in inputs]
    assert tg.autograd.gradgradcheck(ours, tuple(leaves))


def test_hardsigmoid_refuses_as_torch():
    """torch: 'derivative for aten::hardsigmoid_backward is not implemented'; ours names the op."""
    x = tg.from_numpy(away(U)).requires_grad_()
    (g,) = tg.autograd.grad(F.hardsigmoid(x * 3) * x, x, tg.from_numpy(rnd(U, seed=4)), create_graph=True)
    with pytest.raises(RuntimeError, match="HardsigmoidFn"):
        tg.autograd.grad((g * g).sum(), x)


def test_ctc_loss_refuses_as_torch():
    """torch: 'derivative for aten::_ctc_loss_backward is not implemented'; ours names CTCLossFn."""
    r = np.random.default_rng(0)
    logits = r.standard_normal((6, 2, 5))
    targets, in_len, tg_len = np.array([[1, 2, 2], [3, 1, 0]]), np.array([6, 5]), np.array([3, 2])
    for lib, f in ((tg, F), (torch, TF)):
        x = const(lib, logits).requires_grad_()
        loss = f.ctc_loss(f.log_softmax(x, 2), const(lib, targets), const(lib, in_len), const(lib, tg_len))
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        with pytest.raises(RuntimeError, match="CTCLossFn" if lib is tg else "_ctc_loss_backward"):
            lib.autograd.grad((g * g).sum(), x)


@pytest.mark.parametrize("sample", ["bernoulli", "normal", "poisson"])
def test_random_samples_have_a_constant_zero_gradient_as_torch(sample):
    """torch's derivatives of a sample w.r.t. its parameters are ``zeros_like``: a gradient that
    does not require grad, so differentiating through it gives zeros, not an error."""
    p = np.full((3,), 0.5)
    for lib in (tg, torch):
        x = const(lib, p).requires_grad_()
        draw = {"bernoulli": lambda: lib.bernoulli(x), "normal": lambda: lib.normal(x, x * 2),
                "poisson": lambda: lib.poisson(x)}[sample]
        (g,) = lib.autograd.grad((draw() * x).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad((g * x).sum(), x)   # g = the draw; h = g + x · d(draw)/dx = g
        np.testing.assert_array_equal(h.detach().numpy(), g.detach().numpy())


# drawn inputs: the smooth ones (no kink to land near), float64, any shape and seed
DRAWN = {
    "silu": (lambda f: lambda x: f.silu(x), (-6, 6)), "softplus": (lambda f: lambda x: f.softplus(x, beta=1.5), (-6, 6)),
    "mish": (lambda f: lambda x: f.mish(x), (-6, 6)), "logsigmoid": (lambda f: lambda x: f.logsigmoid(x), (-6, 6)),
    "tanhshrink": (lambda f: lambda x: f.tanhshrink(x), (-3, 3)), "glu": (lambda f: lambda x: f.glu(x, 0), (-4, 4)),
    "normalize": (lambda f: lambda x: f.normalize(x, dim=-1), (-2, 2)),
    "mse_loss": (lambda f: lambda x: f.mse_loss(x * x, x.detach() * 0.5), (-2, 2)),
    "bce_with_logits": (lambda f: lambda x: f.binary_cross_entropy_with_logits(x, (x.detach() * 0.3).sigmoid()), (-4, 4)),
    "interpolate_linear": (lambda f: lambda x: f.interpolate(x.reshape(1, 1, -1), scale_factor=1.7, mode="linear") ** 2,
                           (-2, 2)),
}


@given(name=st.sampled_from(sorted(DRAWN)), seed=st.integers(0, 2**31 - 1),
       shape=st.sampled_from([(4,), (2, 4), (2, 3, 2)]))
def test_drawn_double_backward(name, seed, shape):
    make, (lo, hi) = DRAWN[name]
    check_double_parity(make(F), make(TF), rnd(shape, lo, hi, seed), dtype=F64, name=name, seed=seed)


@pytest.mark.parametrize("name", ["multi_margin_loss", "multilabel_margin_loss"])
def test_margin_losses_torch_cannot_differentiate_twice_are_checked_by_finite_differences(name):
    """torch's fused kernels have no double backward ('derivative for aten::<op>_backward is not
    implemented'); ours are composites of differentiable primitives, so their second derivative
    exists, and is checked against finite differences of the gradient instead of torch."""
    target = {"multi_margin_loss": CLS, "multilabel_margin_loss": ML_TARGET}[name]
    kwargs = {"multi_margin_loss": {"p": 2, "margin": 1.5}, "multilabel_margin_loss": {}}[name]
    x = rnd(U, 0.2, 1.2)
    xt = torch.from_numpy(x.copy()).to(DEVICE).requires_grad_()
    (g,) = torch.autograd.grad(getattr(TF, name)(xt * xt, torch.from_numpy(target).to(DEVICE), **kwargs), xt, create_graph=True)
    with pytest.raises(RuntimeError, match=f"derivative for aten::{name}_backward is not implemented"):
        torch.autograd.grad((g * g).sum(), xt)
    assert tg.autograd.gradgradcheck(lambda a: getattr(F, name)(a * a, const(tg, target), **kwargs),
                                     (tg.from_numpy(x.copy()).requires_grad_(),))


# Functions whose gradient is deliberately not differentiable, each with torch's reason
ONCE_DIFFERENTIABLE = {
    "HardsigmoidFn": "torch: derivative for aten::hardsigmoid_backward is not implemented",
    "CTCLossFn": "torch: derivative for aten::_ctc_loss_backward is not implemented",
    "FlashAttention": "torch's CPU flash kernel has no double backward; F.scaled_dot_product_attention "
                      "differentiates twice through its closed form",
    "NotTwiceDifferentiable": "the engine's marker of such a gradient", "DelayedError": "@once_differentiable's marker",
}


def test_every_op_differentiates_twice_or_says_why_not():
    """Every engine Function (the package's ArrayFunction subclasses, less the exercises' reference
    answers, which learners write) runs its backward on Tensors, or names a closed form to be
    differentiated through, or is listed above with torch's reason: a new op that refuses
    create_graph fails here. Left out: the rung-2 ``*ClosedForm`` classes, which the engine runs on
    Tensors to differentiate their fused op twice, but which, called directly (``softmax_closed_form``),
    still refuse a second derivative (not yet made twice differentiable on their own)."""
    import importlib
    import pkgutil

    from tinygrad_tx.core.function import ArrayFunction
    for m in pkgutil.walk_packages(tg.__path__, "tinygrad_tx."):
        if not m.name.startswith(("tinygrad_tx.exercises", "tinygrad_tx.cli", "tinygrad_tx.__main__")):
            importlib.import_module(m.name)
    seen, todo = set(), [ArrayFunction]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    refusing = sorted(c.__name__ for c in seen if c.__module__.startswith("tinygrad_tx.")
                      and not c.__module__.startswith("tinygrad_tx.exercises")
                      and not c.differentiable_backward and c.twice_differentiable_via is None
                      and not c.__name__.endswith("ClosedForm"))
    assert refusing == sorted(ONCE_DIFFERENTIABLE)
