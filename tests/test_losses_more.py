"""The torch.nn losses beyond cross-entropy and regression: KLDivLoss, the margin and hinge
losses, the triplet losses, PoissonNLLLoss, GaussianNLLLoss and CTCLoss.

For each loss and each reduction: a hypothesis parity property against torch (output and input
gradients under a random cotangent, the functional form or the module, float64 and float32 by
the kit's rule), inputs drawn away from the hinges' kinks — every hinge argument at least 0.1
from 0, and at least one hinge active, so the reference gradient is never all zero; a
finite-difference check; torch's errors for bad shapes and arguments.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
import tinygrad_tx.functional as F
import tinygrad_tx.nn as nn
from reference.testing import DEVICE, check_parity
from tinygrad_tx.testing.strategies import float_dtypes, seeds, shapes

REDUCTIONS = ["mean", "sum", "none"]
GAP = 0.1          # the least distance of a hinge argument from its kink


def _rng(seed):
    return np.random.default_rng(seed)


def _signs(rng, shape):
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def _weight_like(w, x):
    """A class weight (None stays None) as a tensor of x's engine and dtype."""
    if w is None:
        return None
    if isinstance(x, torch.Tensor):
        return torch.tensor(w, dtype=x.dtype, device=DEVICE)
    return tg.tensor(w).to(x.dtype)


def _loss(via_module, name, **kwargs):
    """(ours, theirs): the functional form, or the module built with the same options."""
    if via_module:
        module = {"kl_div": "KLDivLoss", "margin_ranking_loss": "MarginRankingLoss",
                  "hinge_embedding_loss": "HingeEmbeddingLoss", "soft_margin_loss": "SoftMarginLoss",
                  "multilabel_soft_margin_loss": "MultiLabelSoftMarginLoss", "multi_margin_loss": "MultiMarginLoss",
                  "multilabel_margin_loss": "MultiLabelMarginLoss", "cosine_embedding_loss": "CosineEmbeddingLoss",
                  "triplet_margin_loss": "TripletMarginLoss",
                  "triplet_margin_with_distance_loss": "TripletMarginWithDistanceLoss",
                  "poisson_nll_loss": "PoissonNLLLoss", "gaussian_nll_loss": "GaussianNLLLoss"}[name]
        ours = getattr(nn, module)(**kwargs)
        theirs = getattr(tnn, module)(**kwargs).to(DEVICE)
        return ours, theirs
    return (lambda *a: getattr(F, name)(*a, **kwargs)), (lambda *a: getattr(TF, name)(*a, **kwargs))


# ============================================================================ KLDivLoss

@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
@given(shape=shapes(1, 3, max_side=5), seed=seeds, dtype=float_dtypes, log_target=st.booleans())
def test_kl_div_loss_module_parity(reduction, shape, seed, dtype, log_target):
    rng = _rng(seed)
    x = np.log(rng.uniform(0.05, 1.0, shape))
    t = rng.uniform(0.05, 1.0, shape)
    ours, theirs = _loss(True, "kl_div", reduction=reduction, log_target=log_target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # 'mean' warns (in both)
        check_parity("nn.KLDivLoss", ours, theirs, [x, np.log(t) if log_target else t], dtype, seed=seed)


# ============================================================================ pointwise margins

@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(0, 3, max_side=5), seed=seeds, dtype=float_dtypes, margin=st.sampled_from([0.0, 0.5]),
       via_module=st.booleans())
def test_margin_ranking_loss_parity(reduction, shape, seed, dtype, margin, via_module):
    rng = _rng(seed)
    x1, x2, y = rng.standard_normal(shape), rng.standard_normal(shape), _signs(rng, shape)
    z = -y * (x1 - x2) + margin
    x1 = np.where(np.abs(z) < GAP, x1 + 0.3 * y, x1)                 # z - 0.3: in (-0.4, -0.2)
    x1.flat[0] = x2.flat[0] - y.flat[0] * 0.5                        # one active hinge: z = 0.5 + margin
    ours, theirs = _loss(via_module, "margin_ranking_loss", margin=margin, reduction=reduction)
    check_parity("margin_ranking_loss", ours, theirs, [np.asarray(x1), np.asarray(x2), np.asarray(y)], dtype,
                 seed=seed)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(0, 3, max_side=5), seed=seeds, dtype=float_dtypes, margin=st.sampled_from([1.0, 0.5]),
       via_module=st.booleans())
def test_hinge_embedding_loss_parity(reduction, shape, seed, dtype, margin, via_module):
    rng = _rng(seed)
    x, y = 2 * rng.standard_normal(shape), _signs(rng, shape)
    x = np.where(np.abs(margin - x) < GAP, x + 0.3, x)
    y.flat[0] = 1.0                                                  # gradient 1 there
    ours, theirs = _loss(via_module, "hinge_embedding_loss", margin=margin, reduction=reduction)
    check_parity("hinge_embedding_loss", ours, theirs, [np.asarray(x), np.asarray(y)], dtype, grad=(0,), seed=seed)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(0, 3, max_side=5), seed=seeds, dtype=float_dtypes, via_module=st.booleans())
def test_soft_margin_loss_parity(reduction, shape, seed, dtype, via_module):
    rng = _rng(seed)
    x, y = 3 * rng.standard_normal(shape), _signs(rng, shape)
    ours, theirs = _loss(via_module, "soft_margin_loss", reduction=reduction)
    check_parity("soft_margin_loss", ours, theirs, [np.asarray(x), np.asarray(y)], dtype, grad=(0,), seed=seed)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(1, 3, max_side=5), seed=seeds, dtype=float_dtypes, weighted=st.booleans(),
       binary=st.booleans(), via_module=st.booleans())
def test_multilabel_soft_margin_loss_parity(reduction, shape, seed, dtype, weighted, binary, via_module):
    rng = _rng(seed)
    x = 2 * rng.standard_normal(shape)
    y = (rng.random(shape) < 0.5).astype(np.float64) if binary else rng.uniform(0, 1, shape)
    w = rng.uniform(0.2, 2.0, shape[-1:]) if weighted else None
    if via_module:      # built per call: torch's float64 oracle run needs a float64 weight
        def ours(a, b):
            return nn.MultiLabelSoftMarginLoss(weight=_weight_like(w, a), reduction=reduction)(a, b)

        def theirs(a, b):
            return tnn.MultiLabelSoftMarginLoss(weight=_weight_like(w, a), reduction=reduction).to(DEVICE)(a, b)
        inputs, grad = [x, y], (0, 1)
    else:
        def ours(a, b, w=None):
            return F.multilabel_soft_margin_loss(a, b, weight=w, reduction=reduction)

        def theirs(a, b, w=None):
            return TF.multilabel_soft_margin_loss(a, b, weight=w, reduction=reduction)
        inputs, grad = [x, y] + ([w] if weighted else []), (0, 1)
    check_parity("multilabel_soft_margin_loss", ours, theirs, inputs, dtype, grad=grad, seed=seed)


# ============================================================================ class-index margins

def _class_scores(rng, batched, n, c):
    shape = (n, c) if batched else (c,)
    return 2 * rng.standard_normal(shape), shape


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(seed=seeds, dtype=float_dtypes, batched=st.booleans(), n=st.integers(1, 4), c=st.integers(2, 5),
       p=st.sampled_from([1, 2]), margin=st.sampled_from([1.0, 0.3]), weighted=st.booleans(),
       via_module=st.booleans())
def test_multi_margin_loss_parity(reduction, seed, dtype, batched, n, c, p, margin, weighted, via_module):
    rng = _rng(seed)
    x, shape = _class_scores(rng, batched, n, c)
    rows = x.reshape(-1, c)
    t = rng.integers(0, c, rows.shape[0])
    x_y = rows[np.arange(len(t)), t][:, None]
    z = margin - x_y + rows
    others = np.arange(c)[None, :] != t[:, None]
    rows = np.where(others & (np.abs(z) < GAP), rows - 0.3, rows)    # z - 0.3 (x_y itself unchanged)
    j0 = (t[0] + 1) % c
    rows[0, j0] = rows[0, t[0]] - margin + 0.5                       # one active hinge: z = 0.5
    x = rows.reshape(shape)
    target = t if batched else t.reshape(())
    w = rng.uniform(0.2, 2.0, c) if weighted else None
    kwargs = dict(p=p, margin=margin, reduction=reduction)
    if via_module:      # built per call: torch's float64 oracle run needs a float64 weight
        def ours(a, b):
            return nn.MultiMarginLoss(weight=_weight_like(w, a), **kwargs)(a, b)

        def theirs(a, b):
            return tnn.MultiMarginLoss(weight=_weight_like(w, a), **kwargs).to(DEVICE)(a, b)
        inputs = [x, target]
    else:
        def ours(a, b, w=None):
            return F.multi_margin_loss(a, b, weight=w, **kwargs)

        def theirs(a, b, w=None):
            return TF.multi_margin_loss(a, b, weight=w, **kwargs)
        inputs = [x, target] + ([w] if weighted else [])
    check_parity("multi_margin_loss", ours, theirs, inputs, dtype, grad=(0,), seed=seed)


def _multilabel_case(rng, batched, n, c):
    """Scores on a grid of step 0.37 with ±0.02 noise (every difference x_j - x_k stays ≥ 0.07 from
    the kink at 1), and per row 1..c-1 listed classes (repeats allowed), a -1, then anything."""
    shape = (n, c) if batched else (c,)
    rows = 0.37 * rng.integers(-6, 7, (n if batched else 1, c)) + rng.uniform(-0.02, 0.02, (n if batched else 1, c))
    t = rng.integers(-1, c, rows.shape)
    for i in range(rows.shape[0]):
        k = rng.integers(1, c)
        listed = rng.choice(c, k, replace=False)
        if k > 1 and rng.random() < 0.3:
            listed[-1] = listed[0]                                  # a class listed twice
        t[i, :k] = listed
        if k < c:
            t[i, k] = -1
    j0, k0 = t[0, 0], [k for k in range(c) if k not in t[0, :list(t[0]).index(-1) if -1 in t[0] else c]][0]
    rows[0, k0] = rows[0, j0] + 0.37 * rng.integers(-2, 3) + rng.uniform(-0.02, 0.02)   # an active pair
    return rows.reshape(shape), t.reshape(shape)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(seed=seeds, dtype=float_dtypes, batched=st.booleans(), n=st.integers(1, 4), c=st.integers(2, 6),
       via_module=st.booleans())
def test_multilabel_margin_loss_parity(reduction, seed, dtype, batched, n, c, via_module):
    x, t = _multilabel_case(_rng(seed), batched, n, c)
    ours, theirs = _loss(via_module, "multilabel_margin_loss", reduction=reduction)
    check_parity("multilabel_margin_loss", ours, theirs, [x, t], dtype, grad=(0,), seed=seed)


# ============================================================================ cosine embedding

@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(seed=seeds, dtype=float_dtypes, batched=st.booleans(), n=st.integers(1, 4), d=st.integers(2, 5),
       margin=st.sampled_from([0.0, 0.3, -0.2]), via_module=st.booleans())
def test_cosine_embedding_loss_parity(reduction, seed, dtype, batched, n, d, margin, via_module):
    rng = _rng(seed)
    shape = (n, d) if batched else (d,)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    y = _signs(rng, shape[:-1])
    cos = np.sum(a * b, -1) / np.sqrt(np.sum(a * a, -1) * np.sum(b * b, -1))
    y = np.where(np.abs(cos - margin) < GAP, 1.0, y)                 # y = 1 has no kink
    y.flat[0] = 1.0                  # 1 - cos: a nonzero gradient (d = 1 is left out: cos = ±1, flat)
    ours, theirs = _loss(via_module, "cosine_embedding_loss", margin=margin, reduction=reduction)
    check_parity("cosine_embedding_loss", ours, theirs, [a, b, np.asarray(y)], dtype, grad=(0, 1), seed=seed)


# ============================================================================ triplet losses

def _pnorm(u, p, eps):
    return np.sum(np.abs(u + eps) ** p, -1) ** (1 / p)


def _hinge_argument(distance, margin, swap):
    def z(a, p, n):
        d_neg, d_swap = distance(a, n), distance(p, n)
        return margin + distance(a, p) - (min(d_neg, d_swap) if swap else d_neg)
    return z


def _least_slope(z, a, p, n, h=1e-5):
    """The least over anchor, positive and negative of |∂z/∂input| (central differences): 0 where
    two distances' slopes cancel (a 1-D anchor outside [p, n]; equal sign patterns of the
    differences under the 1-norm; the swapped distance's)."""
    steps = np.eye(a.size) * h
    slopes = []
    for k in range(3):
        def moved(e):
            args = [a, p, n]
            args[k] = args[k] + e
            return z(*args)
        slopes.append(np.linalg.norm([(moved(e) - moved(-e)) / (2 * h) for e in steps]))
    return min(slopes)


def _triplet_case(rng, shape, margin, distance, swap):
    """Rows (anchor, positive, negative) redrawn one by one until the hinge is at least GAP from 0
    (and, with swap, the two negative distances GAP apart); row 0 until it is active with a
    nonzero gradient for each of the three, so that no reference gradient is all zero."""
    z = _hinge_argument(distance, margin, swap)
    a, p, n = (rng.standard_normal(shape) for _ in range(3))
    a2, p2, n2 = (v.reshape(-1, shape[-1]) for v in (a, p, n))
    for i in range(a2.shape[0]):
        for _ in range(1000):
            zi = z(a2[i], p2[i], n2[i])
            apart = not swap or abs(distance(a2[i], n2[i]) - distance(p2[i], n2[i])) >= GAP
            if abs(zi) >= GAP and apart and (i > 0 or (zi > 0 and _least_slope(z, a2[i], p2[i], n2[i]) > GAP)):
                break
            a2[i], p2[i], n2[i] = (rng.standard_normal(shape[-1]) for _ in range(3))
        else:
            raise AssertionError("no triplet away from the kinks in 1000 draws")
    return a2.reshape(shape), p2.reshape(shape), n2.reshape(shape)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(1, 3, min_side=1, max_side=4), seed=seeds, dtype=float_dtypes, p=st.sampled_from([1, 2, 3]),
       margin=st.sampled_from([1.0, 0.5]), swap=st.booleans(), via_module=st.booleans())
def test_triplet_margin_loss_parity(reduction, shape, seed, dtype, p, margin, swap, via_module):
    eps = 1e-6
    a, pos, neg = _triplet_case(_rng(seed), shape, margin, lambda u, v: _pnorm(u - v, p, eps), swap)
    ours, theirs = _loss(via_module, "triplet_margin_loss", margin=margin, p=p, swap=swap, reduction=reduction)
    check_parity("triplet_margin_loss", ours, theirs, [a, pos, neg], dtype, seed=seed)


def _cosine_distance(engine_f):
    return lambda u, v: 1 - engine_f.cosine_similarity(u, v, dim=-1)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(1, 3, min_side=2, max_side=4), seed=seeds, dtype=float_dtypes, cosine=st.booleans(),
       margin=st.sampled_from([1.0, 0.5]), swap=st.booleans(), via_module=st.booleans())
def test_triplet_margin_with_distance_loss_parity(reduction, shape, seed, dtype, cosine, margin, swap, via_module):
    if cosine:
        distance = lambda u, v: 1 - np.dot(u, v) / max(np.linalg.norm(u) * np.linalg.norm(v), 1e-8)  # noqa: E731
    else:
        distance = lambda u, v: _pnorm(u - v, 2, 1e-6)  # noqa: E731
    a, pos, neg = _triplet_case(_rng(seed), shape, margin, distance, swap)
    kwargs = dict(margin=margin, swap=swap, reduction=reduction)
    if via_module:
        ours = nn.TripletMarginWithDistanceLoss(distance_function=_cosine_distance(F) if cosine else None, **kwargs)
        theirs = tnn.TripletMarginWithDistanceLoss(distance_function=_cosine_distance(TF) if cosine else None,
                                                   **kwargs).to(DEVICE)
    else:
        def ours(*t):
            return F.triplet_margin_with_distance_loss(*t, distance_function=_cosine_distance(F) if cosine else None,
                                                       **kwargs)

        def theirs(*t):
            return TF.triplet_margin_with_distance_loss(*t, distance_function=_cosine_distance(TF) if cosine else None,
                                                        **kwargs)
    check_parity("triplet_margin_with_distance_loss", ours, theirs, [a, pos, neg], dtype, seed=seed)


# ============================================================================ Poisson, Gaussian NLL

@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(0, 3, max_side=5), seed=seeds, dtype=float_dtypes, log_input=st.booleans(),
       full=st.booleans(), eps=st.sampled_from([1e-8, 0.1]), via_module=st.booleans())
def test_poisson_nll_loss_parity(reduction, shape, seed, dtype, log_input, full, eps, via_module):
    rng = _rng(seed)
    x = rng.standard_normal(shape) if log_input else rng.uniform(0.1, 3.0, shape)
    # counts away from t = 1, where the Stirling term (full=True) switches on with a jump
    t = np.where(rng.random(shape) < 0.5, rng.uniform(0.05, 0.9, shape), rng.uniform(1.1, 5.0, shape))
    ours, theirs = _loss(via_module, "poisson_nll_loss", log_input=log_input, full=full, eps=eps,
                         reduction=reduction)
    check_parity("poisson_nll_loss", ours, theirs, [np.asarray(x), np.asarray(t)], dtype, seed=seed)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(1, 3, max_side=4), seed=seeds, dtype=float_dtypes, var_kind=st.sampled_from(
    ["same", "one_less", "one_dim_1", "float"]), full=st.booleans(), below_eps=st.booleans(),
       via_module=st.booleans())
def test_gaussian_nll_loss_parity(reduction, shape, seed, dtype, var_kind, full, below_eps, via_module):
    rng = _rng(seed)
    x, t = rng.standard_normal(shape), rng.standard_normal(shape)
    if var_kind == "same":
        vshape = shape
    elif var_kind == "one_less":
        vshape = shape[:-1]
    else:
        k = rng.integers(len(shape))
        vshape = shape[:k] + (1,) + shape[k + 1:]
    var = rng.uniform(0.2, 2.0, vshape)
    if below_eps and var.size > 1:
        var.flat[-1] = 1e-7                     # clamped to eps = 1e-6, the gradient passing through as torch
    ours, theirs = _loss(via_module, "gaussian_nll_loss", full=full, reduction=reduction)
    if var_kind == "float":
        v = float(rng.uniform(0.2, 2.0))
        check_parity("gaussian_nll_loss", lambda a, b: ours(a, b, v), lambda a, b: theirs(a, b, v), [x, t], dtype,
                     seed=seed)
    else:
        check_parity("gaussian_nll_loss", ours, theirs, [x, t, np.asarray(var)], dtype, seed=seed)


# ============================================================================ finite differences

def test_losses_gradcheck():
    rng = _rng(7)
    x1, x2, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), _signs(rng, (3, 4))
    z = -y * (x1 - x2)
    x1 = np.where(np.abs(z) < GAP, x1 + 0.3 * y, x1)
    assert tg.gradcheck(lambda a, b, c: F.margin_ranking_loss(a, b, c, reduction="sum"), [x1, x2, y])
    h = np.where(np.abs(1 - 2 * x1) < GAP, 2 * x1 + 0.3, 2 * x1)
    assert tg.gradcheck(lambda a: F.hinge_embedding_loss(a, tg.tensor(y)), [h])
    assert tg.gradcheck(lambda a: F.soft_margin_loss(a, tg.tensor(y), reduction="none"), [3 * x1])
    assert tg.gradcheck(lambda a, b: F.multilabel_soft_margin_loss(a, b, weight=tg.tensor(np.arange(1.0, 5.0))),
                        [x1, rng.uniform(0, 1, (3, 4))])
    rows = np.array([[0.3, -1.2, 2.0, 0.6], [1.5, 0.1, -0.4, 0.9], [-0.2, 0.45, 0.8, -1.7]])
    t = np.array([2, 0, 1])
    for p in (1, 2):                                  # hinges: 1 - x_t + x_j, none within 0.1 of 0
        assert tg.gradcheck(lambda a: F.multi_margin_loss(a, t, p=p, weight=tg.tensor(np.array([1., 2., .5, 1.]))),
                            [rows])
    x, lt = _multilabel_case(_rng(3), True, 3, 5)
    assert tg.gradcheck(lambda a: F.multilabel_margin_loss(a, lt), [x])
    assert tg.gradcheck(lambda a, b: F.cosine_embedding_loss(a, b, tg.tensor(np.array([1.0, -1.0, 1.0])),
                                                             margin=-0.5), [rows, x1])
    a, pos, neg = _triplet_case(_rng(5), (4, 3), 1.0, lambda u, v: _pnorm(u - v, 2, 1e-6), True)
    assert tg.gradcheck(lambda *v: F.triplet_margin_loss(*v, swap=True, reduction="sum"), [a, pos, neg])
    assert tg.gradcheck(lambda *v: F.triplet_margin_with_distance_loss(
        *v, distance_function=lambda u, w: (u - w).abs().sum(-1)), [a, pos, neg])
    counts = rng.uniform(1.2, 4.0, (3, 4))
    assert tg.gradcheck(lambda a, b: F.poisson_nll_loss(a, b, full=True), [x1, counts])
    assert tg.gradcheck(lambda a, b: F.poisson_nll_loss(a, b, log_input=False, full=True), [counts, counts + 1])
    assert tg.gradcheck(lambda a, b, v: F.gaussian_nll_loss(a, b, v, full=True), [x1, x2, counts[:, :1]])
    assert tg.gradcheck(lambda a, b, v: F.gaussian_nll_loss(a, b, v), [x1, x2, counts[:, 0]])


# ============================================================================ legacy reductions

LEGACY = {   # name: (inputs builder, options)
    "margin_ranking_loss": (lambda r: [r.standard_normal(4), r.standard_normal(4), _signs(r, 4)], {}),
    "hinge_embedding_loss": (lambda r: [r.standard_normal(4), _signs(r, 4)], {}),
    "soft_margin_loss": (lambda r: [r.standard_normal(4), _signs(r, 4)], {}),
    "multilabel_soft_margin_loss": (lambda r: [r.standard_normal((2, 3)), r.uniform(0, 1, (2, 3))], {}),
    "multi_margin_loss": (lambda r: [r.standard_normal((2, 3)), np.array([0, 2])], {}),
    "multilabel_margin_loss": (lambda r: [r.standard_normal((2, 3)), np.array([[0, -1, 1], [2, 1, -1]])], {}),
    "cosine_embedding_loss": (lambda r: [r.standard_normal((2, 3)), r.standard_normal((2, 3)),
                                         np.array([1.0, -1.0])], {"margin": -0.5}),
    "triplet_margin_loss": (lambda r: [r.standard_normal((2, 3)) for _ in range(3)], {"margin": 2.0}),
    "poisson_nll_loss": (lambda r: [r.standard_normal(4), r.uniform(0, 3, 4)], {}),
    "kl_div": (lambda r: [np.log(r.uniform(0.1, 1, 4)), r.uniform(0.1, 1, 4)], {}),
}


@pytest.mark.parametrize("name", sorted(LEGACY))
@pytest.mark.parametrize("size_average,reduce", [(None, False), (False, None), (True, True), (False, True)])
def test_legacy_size_average_reduce(name, size_average, reduce):
    build, options = LEGACY[name]
    arrays = build(_rng(1))
    ours_in = [tg.tensor(a) for a in arrays]
    theirs_in = [torch.tensor(a, device=DEVICE) for a in arrays]
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        ours = getattr(F, name)(*ours_in, size_average=size_average, reduce=reduce, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(TF, name)(*theirs_in, size_average=size_average, reduce=reduce, **options)
    np.testing.assert_allclose(ours.numpy(), theirs.cpu().numpy(), rtol=1e-12, atol=1e-15)


def test_module_defaults_and_legacy_like_torch():
    for name in ("KLDivLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
                 "MultiMarginLoss", "MultiLabelMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
                 "TripletMarginWithDistanceLoss", "PoissonNLLLoss", "GaussianNLLLoss", "CTCLoss"):
        ours, theirs = getattr(nn, name)(), getattr(tnn, name)().to(DEVICE)
        for attr in ("reduction", "margin", "p", "eps", "swap", "log_input", "full", "log_target", "blank",
                     "zero_infinity"):
            assert getattr(ours, attr, None) == getattr(theirs, attr, None), (name, attr)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.PoissonNLLLoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.TripletMarginLoss(reduce=False).reduction == "none"
    for name in ("TripletMarginWithDistanceLoss", "GaussianNLLLoss"):      # keyword-only, no legacy pair
        for module in (nn, tnn):
            with pytest.raises(TypeError):
                getattr(module, name)(size_average=False)


# ============================================================================ errors like torch

def _both(name, arrays, kwargs=None, module=None, module_kwargs=None):
    """Call torch's and our loss (functional, or a module) on the same arrays: the two outcomes."""
    outcomes = []
    for engine, fmod, nnmod, tensor in ((torch, TF, tnn, lambda a: torch.tensor(a, device=DEVICE)),
                                        (tg, F, nn, tg.tensor)):
        try:
            if module is not None:
                layer = getattr(nnmod, module)(**(module_kwargs or {}))
                outcomes.append(layer(*[tensor(a) for a in arrays]))
            else:
                options = {k: tensor(v) if isinstance(v, np.ndarray) else v for k, v in (kwargs or {}).items()}
                outcomes.append(getattr(fmod, name)(*[tensor(a) for a in arrays], **options))
        except Exception as e:      # noqa: BLE001 - the exception is the outcome compared
            outcomes.append(e)
    return outcomes


X = np.random.default_rng(0).standard_normal((3, 4))
ERRORS = [   # (id, name, arrays, kwargs, module, module kwargs, what our message names)
    ("ranking dims", "margin_ranking_loss", [X, X, X[0]], {}, None, None, "target"),
    ("ranking shapes", "margin_ranking_loss", [X, X[:, :3], X], {}, None, None, "input2"),
    ("hinge shapes", "hinge_embedding_loss", [X, X[:, :3]], {}, None, None, "target"),
    ("hinge reduction", "hinge_embedding_loss", [X, X], {"reduction": "avg"}, None, None, "reduction"),
    ("soft margin shapes", "soft_margin_loss", [X, X[:, :3]], {}, None, None, "target"),
    ("multilabel soft shapes", "multilabel_soft_margin_loss", [X, X[:, :3]], {}, None, None, "target"),
    ("multilabel soft reduction", "multilabel_soft_margin_loss", [X, X], {"reduction": "avg"}, None, None,
     "reduction"),
    ("multi margin p", "multi_margin_loss", [X, np.array([0, 1, 2])], {"p": 3}, None, None, "p"),
    ("multi margin range", "multi_margin_loss", [X, np.array([0, 1, 5])], {}, None, None, "target"),
    ("multi margin target size", "multi_margin_loss", [X, np.array([0, 1])], {}, None, None, "target"),
    ("multi margin target dtype", "multi_margin_loss", [X, np.array([0.0, 1.0, 2.0])], {}, None, None, "target"),
    ("multi margin 3d", "multi_margin_loss", [X.reshape(3, 2, 2), np.array([1, 1, 1])], {}, None, None, "input"),
    ("multi margin weight size", "multi_margin_loss", [X, np.array([0, 1, 2])], {"weight": np.ones(3)}, None,
     None, "weight"),
    ("multi margin weight 2d", "multi_margin_loss", [X, np.array([0, 1, 2])], {"weight": np.ones((2, 2))}, None,
     None, "weight"),
    ("multi margin module p", None, [], {}, "MultiMarginLoss", {"p": 3}, "p"),
    ("multilabel margin target size", "multilabel_margin_loss", [X, np.array([0, 1, 2])], {}, None, None,
     "target"),
    ("multilabel margin range", "multilabel_margin_loss", [X, np.array([[0, 5, -1, 2]] * 3)], {}, None, None,
     "target"),
    ("multilabel margin dtype", "multilabel_margin_loss", [X, np.array([[0.0, 1, -1, 2]] * 3)], {}, None, None,
     "target"),
    ("cosine 2d target", "cosine_embedding_loss", [X, X, X], {}, None, None, "target"),
    ("cosine dims", "cosine_embedding_loss", [X.reshape(3, 2, 2), X.reshape(3, 2, 2), X[:, 0]], {}, None, None,
     "input"),
    ("cosine 1d target, 1d inputs", "cosine_embedding_loss", [X[0], X[1], X[0]], {}, None, None, "input"),
    ("triplet dims", "triplet_margin_loss", [X, X, X[0]], {}, None, None, "negative"),
    ("triplet margin", "triplet_margin_loss", [X, X, X], {"margin": 0.0}, None, None, "margin"),
    ("triplet module margin", None, [], {}, "TripletMarginLoss", {"margin": -1.0}, "margin"),
    ("triplet distance dims", "triplet_margin_with_distance_loss", [X, X, X[0]], {}, None, None, "negative"),
    ("triplet distance margin", "triplet_margin_with_distance_loss", [X, X, X], {"margin": -1.0}, None, None,
     "margin"),
    ("triplet distance reduction", "triplet_margin_with_distance_loss", [X, X, X], {"reduction": "avg"}, None,
     None, "reduction"),
    ("triplet distance module margin", None, [], {}, "TripletMarginWithDistanceLoss", {"margin": 0.0}, "margin"),
    ("poisson shapes", "poisson_nll_loss", [X, X[:, :3]], {}, None, None, "target"),
    ("poisson reduction", "poisson_nll_loss", [X, X], {"reduction": "avg"}, None, None, "reduction"),
    ("gaussian var size", "gaussian_nll_loss", [X, X, np.ones(4)], {}, None, None, "var"),
    ("gaussian var two dims of 1", "gaussian_nll_loss", [X, X, np.ones((1, 1))], {}, None, None, "var"),
    ("gaussian negative var", "gaussian_nll_loss", [X, X, -np.ones((3, 4))], {}, None, None, "var"),
    ("gaussian reduction", "gaussian_nll_loss", [X, X, np.ones((3, 4))], {"reduction": "avg"}, None, None,
     "not valid"),
    ("kl reduction", "kl_div", [X, X], {"reduction": "avg"}, None, None, "reduction"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_like_torch(case):
    _, name, arrays, kwargs, module, module_kwargs, names = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, ours = _both(name, arrays, kwargs, module, module_kwargs)
    assert isinstance(theirs, Exception), f"torch accepted {case[0]}"
    assert isinstance(ours, type(theirs)), f"{case[0]}: ours {ours!r}, torch {theirs!r}"
    assert names in str(ours), f"{case[0]}: {ours} does not name {names}"


def test_errors_on_grad_requiring_constants():
    """torch refuses a soft_margin target or a multi_margin weight that requires grad."""
    x = tg.tensor(X)
    with pytest.raises(RuntimeError, match="target"):
        F.soft_margin_loss(x, tg.tensor(np.sign(X), requires_grad=True))
    with pytest.raises(ValueError, match="weight"):
        F.multi_margin_loss(x, np.array([0, 1, 2]), weight=tg.tensor(np.ones(4), requires_grad=True))
    with pytest.raises(RuntimeError):
        TF.soft_margin_loss(torch.tensor(X, device=DEVICE),
                            torch.tensor(np.sign(X), device=DEVICE, requires_grad=True))


def _ctc_case(rng, t_max, n, c, blank, concatenated, feasible_only):
    """Logits (T, N, C), targets (padded or concatenated), input and target lengths. Sample 0 is
    always feasible (T_b ≥ S_b + its repeated neighbours); the others too unless not
    ``feasible_only`` (then an impossible one has loss inf, zeroed by zero_infinity)."""
    logits = 2 * rng.standard_normal((t_max, n, c))
    labels = [k for k in range(c) if k != blank]
    rows, in_len = [], []
    for b in range(n):
        s = int(rng.integers(0, t_max + 1))
        row = rng.choice(labels, s)
        need = s + int(np.sum(row[1:] == row[:-1]))
        while need > t_max:                                   # shorten until the sample fits
            row = row[:-1]
            need = len(row) + int(np.sum(row[1:] == row[:-1]))
        low = need if (feasible_only or b == 0) else 1
        in_len.append(int(rng.integers(max(low, 1), t_max + 1)))
        rows.append(row)
    tgt_len = np.array([len(r) for r in rows])
    if concatenated:
        targets = np.concatenate(rows + [np.zeros(0, np.int64)]).astype(np.int64)
    else:
        targets = np.full((n, max(tgt_len.max(), 1)), blank, np.int64)
        for b, r in enumerate(rows):
            targets[b, :len(r)] = r
    return logits, targets, np.array(in_len), tgt_len


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(seed=seeds, dtype=float_dtypes, t_max=st.integers(1, 7), n=st.integers(1, 3), c=st.integers(2, 5),
       blank_last=st.booleans(), concatenated=st.booleans(), zero_infinity=st.booleans(), unbatched=st.booleans(),
       via_module=st.booleans())
def test_ctc_loss_parity(reduction, seed, dtype, t_max, n, c, blank_last, concatenated, zero_infinity, unbatched,
                         via_module):
    """Through log_softmax of logits (torch's documented use; see functional/ctc.py for why the
    gradient with respect to the log-probabilities themselves differs from torch's kernel)."""
    blank = c - 1 if blank_last else 0
    n = 1 if unbatched else n
    logits, targets, in_len, tgt_len = _ctc_case(_rng(seed), t_max, n, c, blank, concatenated,
                                                 feasible_only=not zero_infinity)
    if unbatched:       # torch's unbatched targets hold exactly the target's labels
        logits, targets = logits[:, 0], targets.reshape(-1)[:tgt_len[0]]
    kwargs = dict(blank=blank, reduction=reduction, zero_infinity=zero_infinity)
    if via_module:
        ours_loss, theirs_loss = nn.CTCLoss(**kwargs), tnn.CTCLoss(**kwargs).to(DEVICE)
    else:
        ours_loss = lambda *a: F.ctc_loss(*a, **kwargs)     # noqa: E731
        theirs_loss = lambda *a: TF.ctc_loss(*a, **kwargs)  # noqa: E731
    in_len, tgt_len = tuple(int(v) for v in in_len), tuple(int(v) for v in tgt_len)

    def ours(z, t):
        return ours_loss(F.log_softmax(z, -1), t, in_len, tgt_len)

    def theirs(z, t):
        return theirs_loss(z.log_softmax(-1), t, in_len, tgt_len)
    check_parity("ctc_loss", ours, theirs, [logits, targets], dtype, seed=seed)


def test_ctc_loss_gradcheck_and_log_probs_gradient():
    """Finite differences through log_softmax (the gradient returned for the log-probabilities is
    torch's convention, exp(log_probs) - γ: see functional/ctc.py); and with respect to the
    log-probabilities themselves, torch's values, 0 on the frames past each input length."""
    logits, targets, in_len, tgt_len = _ctc_case(_rng(4), 6, 3, 4, 0, False, True)
    assert tg.gradcheck(lambda z: F.ctc_loss(F.log_softmax(z, -1), targets, in_len, tgt_len), [logits])
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    check_parity("ctc_loss(log_probs)", lambda x: F.ctc_loss(x, targets, in_len, tgt_len, reduction="none"),
                 lambda x: TF.ctc_loss(x, torch.tensor(targets, device=DEVICE), tuple(in_len), tuple(tgt_len),
                                       reduction="none"), [lp])


def test_ctc_loss_errors_like_torch():
    lp = np.log(np.full((5, 2, 4), 0.25))
    targets = np.array([[1, 2, 2], [3, 1, 0]])
    cases = [((lp, targets, (6, 4), (3, 2)), {}, "input_lengths"),
             ((lp, targets, (5, 4), (4, 2)), {}, "targets"),
             ((lp, targets, (5, 4), (3, 2)), {"blank": 4}, "blank"),
             ((lp, targets, (5,), (3, 2)), {}, "input_lengths"),
             ((lp, targets, (5, 4), (3, 2)), {"reduction": "avg"}, "reduction")]
    for (x, t, il, tl), kwargs, names in cases:
        with pytest.raises(Exception) as theirs:
            TF.ctc_loss(torch.tensor(x, device=DEVICE), torch.tensor(t, device=DEVICE), il, tl, **kwargs)
        with pytest.raises(theirs.type, match=names):
            F.ctc_loss(tg.tensor(x), t, il, tl, **kwargs)


def test_broadcast_and_label_edges_like_torch():
    """Broadcast targets, labels other than ±1 (hinge: both terms), a float var, 1-D inputs."""
    rng = _rng(11)
    x = rng.standard_normal((3, 4))
    cases = [("hinge_embedding_loss", [x, np.array([1.0, -1.0, 0.0, 2.0])], {"reduction": "none"}),
             ("margin_ranking_loss", [x, x[:1], np.array([[1.0, -1.0, 1.0, -1.0]])], {"reduction": "none"}),
             ("poisson_nll_loss", [x, np.array([0.5, 2.0, 3.0, 1.5])], {"reduction": "none", "full": True}),
             ("cosine_embedding_loss", [x[0], x[1], np.array(-1.0)], {"reduction": "none", "margin": -0.9}),
             ("multi_margin_loss", [x[0], np.array([2])], {"reduction": "none"}),
             ("multilabel_margin_loss", [x[0], np.array([3, -1, 0, 0])], {"reduction": "none"}),
             ("triplet_margin_loss", [x[0], x[1], x[2]], {"reduction": "none", "margin": 3.0}),
             ("gaussian_nll_loss", [x, x[::-1].copy(), 0.5], {"reduction": "none"})]
    for name, arrays, kwargs in cases:
        ours_in = [tg.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]
        theirs_in = [torch.tensor(a, device=DEVICE) if isinstance(a, np.ndarray) else a for a in arrays]
        ours, theirs = getattr(F, name)(*ours_in, **kwargs), getattr(TF, name)(*theirs_in, **kwargs)
        assert ours.shape == tuple(theirs.shape), name
        np.testing.assert_allclose(ours.numpy(), theirs.cpu().numpy(), rtol=1e-13, atol=1e-15, err_msg=name)
    assert math.isfinite(F.poisson_nll_loss(tg.tensor(x), tg.tensor(np.zeros((3, 4))), full=True).item())


@pytest.mark.cpu_only(reason="compares float32 results of torch's CPU kernel with ours")
def test_ctc_loss_near_zero_float32_within_torch_error():
    """A loss near 0 (p ≈ 1) from a float32 log_softmax: CTC computed in float64 on the float32
    log-probabilities exposed their normalization error (6x torch's float32 error, a fresh clone's
    dev draw); computed in the input's dtype, as torch's kernel, the rounding cancels as in torch."""
    z = np.array([[[-3.39041829, 0.14639373]], [[0.16346218, 5.49375963]]])
    target = np.array([[1]])

    def loss(lib, logits):
        return lib.nn.functional.ctc_loss(logits.log_softmax(-1), lib.tensor(target), (2,), (1,),
                                          reduction="sum").item()
    oracle = loss(torch, torch.tensor(z))
    ours = abs(loss(tg, tg.tensor(z.astype(np.float32))) - oracle) / oracle
    theirs = abs(loss(torch, torch.tensor(z, dtype=torch.float32)) - oracle) / oracle
    assert ours <= 4 * theirs + 9.5e-7, (ours, theirs)
