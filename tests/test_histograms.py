"""bincount, histc and histogram against torch: counts and edges exactly (float dtypes as torch's),
values drawn away from bin edges (a value on an edge may land on either side of it in float32),
and torch's errors. None of the three is differentiable in torch: the results carry no history."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import DEVICE
from tinygrad_tx.testing.strategies import seeds


def _same(ours, theirs):
    assert str(ours.dtype).rsplit(".", 1)[-1] == str(theirs.dtype).rsplit(".", 1)[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.cpu().numpy())


def _away_from_edges(rng, n, lo, hi, bins):
    """n values in [lo, hi], each at least 5% of a bin from every bin edge."""
    width = (hi - lo) / bins
    k = rng.integers(0, bins, n)
    return lo + width * (k + rng.uniform(0.05, 0.95, n))


@given(seed=seeds, n=st.integers(0, 12), length=st.integers(0, 3), weighted=st.sampled_from([None, "f32", "f64", "int"]))
def test_bincount_as_torchs(seed, n, length, weighted):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, n)
    kw_ours, kw_torch = {"minlength": length}, {"minlength": length}
    if weighted:
        w = {"f32": rng.standard_normal(n).astype(np.float32), "f64": rng.standard_normal(n),
             "int": rng.integers(-3, 4, n)}[weighted]
        kw_ours["weights"], kw_torch["weights"] = tg.tensor(w), torch.tensor(w, device=DEVICE)
    _same(tg.bincount(tg.tensor(x), **kw_ours), torch.bincount(torch.tensor(x, device=DEVICE), **kw_torch))
    _same(tg.tensor(x).bincount(**kw_ours), torch.tensor(x, device=DEVICE).bincount(**kw_torch))


@given(seed=seeds, n=st.integers(1, 30), bins=st.integers(1, 7), dtype=st.sampled_from([np.float32, np.float64]),
       given_range=st.booleans())
def test_histc_as_torchs(seed, n, bins, dtype, given_range):
    rng = np.random.default_rng(seed)
    if given_range:
        lo, hi = -1.5, 2.5
        x = _away_from_edges(rng, n, lo, hi, bins)
        x[: n // 4] += 5.0                                    # some values outside the range
        kw = dict(bins=bins, min=lo, max=hi)
    else:                                                     # the data's own range: its ends are edges
        x = np.concatenate([[-2.0, 3.0], _away_from_edges(rng, n, -2.0, 3.0, bins)])
        kw = dict(bins=bins)
    x = x.astype(dtype)
    _same(tg.histc(tg.tensor(x), **kw), torch.histc(torch.tensor(x, device=DEVICE), **kw))
    _same(tg.tensor(x).histc(**kw), torch.tensor(x, device=DEVICE).histc(**kw))


def test_histc_special_cases_as_torchs():
    for x, kw in [([2.0, 2.0], dict(bins=4)), ([1.0, 2.0, float("nan")], dict(bins=2, min=0, max=3)),
                  ([0.0, 3.0, 3.5, -1.0], dict(bins=3, min=0, max=3)), ([], dict(bins=3, min=0, max=1))]:
        a = np.array(x, dtype=np.float32)
        _same(tg.histc(tg.tensor(a), **kw), torch.histc(torch.tensor(a, device=DEVICE), **kw))


@given(seed=seeds, n=st.integers(1, 30), bins=st.integers(1, 6), weighted=st.booleans(), density=st.booleans())
def test_histogram_as_torchs(seed, n, bins, weighted, density):
    rng = np.random.default_rng(seed)
    x = np.concatenate([[0.0, 4.0], _away_from_edges(rng, n, 0.0, 4.0, bins)])
    w = rng.uniform(0.5, 2.0, x.shape) if weighted else None
    ours = tg.histogram(tg.tensor(x), bins, weight=None if w is None else tg.tensor(w), density=density)
    theirs = torch.histogram(torch.tensor(x, device=DEVICE), bins,
                             weight=None if w is None else torch.tensor(w, device=DEVICE), density=density)
    np.testing.assert_allclose(ours.hist.numpy(), theirs.hist.cpu().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.bin_edges.numpy(), theirs.bin_edges.cpu().numpy(), rtol=1e-12)
    edges = np.array([0.0, 0.5, 2.25, 4.0])                       # explicit edges, a range
    x2 = np.array([0.1, 0.7, 1.0, 3.0, 4.0, 5.0])
    o2 = tg.histogram(tg.tensor(x2), bins=tg.tensor(edges))
    t2 = torch.histogram(torch.tensor(x2, device=DEVICE), bins=torch.tensor(edges, device=DEVICE))
    _same(o2.hist, t2.hist)
    o3 = tg.tensor(x2).histogram(3, range=(0.0, 3.0))
    t3 = torch.tensor(x2, device=DEVICE).histogram(3, range=(0.0, 3.0))
    _same(o3.hist, t3.hist)
    _same(o3.bin_edges, t3.bin_edges)


def test_counting_ops_refuse_as_torch_and_carry_no_history():
    for ours, theirs, kind in [
        (lambda: tg.bincount(tg.tensor([-1, 2])), lambda: torch.bincount(torch.tensor([-1, 2], device=DEVICE)),
         RuntimeError),
        (lambda: tg.bincount(tg.tensor([[1]])), lambda: torch.bincount(torch.tensor([[1]], device=DEVICE)), RuntimeError),
        (lambda: tg.bincount(tg.tensor([1.0, 2.0])), lambda: torch.bincount(torch.tensor([1.0, 2.0], device=DEVICE)),
         NotImplementedError),
        (lambda: tg.histc(tg.tensor([1, 2])), lambda: torch.histc(torch.tensor([1, 2], device=DEVICE)), NotImplementedError),
        (lambda: tg.histc(tg.tensor([1.0]), bins=0), lambda: torch.histc(torch.tensor([1.0], device=DEVICE), bins=0),
         RuntimeError),
        (lambda: tg.histc(tg.tensor([1.0]), bins=2, min=3, max=1),
         lambda: torch.histc(torch.tensor([1.0], device=DEVICE), bins=2, min=3, max=1), RuntimeError),
    ]:
        with pytest.raises(kind):
            theirs()
        with pytest.raises(kind):
            ours()
    x = tg.tensor([1.0, 2.0, 2.5], requires_grad=True)
    assert not tg.histc(x, bins=3).requires_grad and not tg.histogram(x, 2).hist.requires_grad
