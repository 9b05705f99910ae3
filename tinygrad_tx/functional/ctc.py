"""Connectionist temporal classification: ``ctc_loss`` (``torch.nn.functional.ctc_loss``).

One Function, :class:`CTCLossFn`: the alpha-beta (forward-backward) recursion of Graves
et al. (2006) in log space, forward and backward by hand; the reduction is a composite.

Notation. For one sample: log-probabilities x_t(k) = log y_t(k) over T frames and C classes
(``log_probs``, normally a log_softmax), a target l of S labels, blank b. The extended target
l' = (b, l_1, b, l_2, ..., l_S, b) has L = 2S + 1 states. A path π (one class per frame)
collapses to l by removing repeats then blanks; p(l) = Σ_π Π_t y_t(π_t) over those paths, and
the loss is -log p(l). In the lattice a path at state s at frame t moves on to s, s + 1, or
s + 2 when l'_{s+2} is a label different from l'_s (a blank may only be skipped between two
different labels).

Forward variables, in log space (logsumexp written ⊕):

    α_0(0) = x_0(b),  α_0(1) = x_0(l_1),  α_0(s) = -inf otherwise;
    α_t(s) = x_t(l'_s) + [α_{t-1}(s) ⊕ α_{t-1}(s-1) ⊕ α_{t-1}(s-2) if the skip is allowed];
    log p(l) = α_{T-1}(L-1) ⊕ α_{T-1}(L-2).

Backward variables, the same from the end:

    β_{T-1}(L-1) = x_{T-1}(b),  β_{T-1}(L-2) = x_{T-1}(l_S);
    β_t(s) = x_t(l'_s) + [β_{t+1}(s) ⊕ β_{t+1}(s+1) ⊕ β_{t+1}(s+2) if allowed].

Both include frame t's own factor, so α_t(s) + β_t(s) - x_t(l'_s) is the log of the total
probability of the paths through state s at frame t. Differentiating p(l) = Σ_π Π_t y_t(π_t)
with respect to x_t(k) = log y_t(k) picks the paths with π_t = k, each once:

    ∂p/∂x_t(k) = Σ_{s: l'_s = k} exp(α_t(s) + β_t(s) - x_t(k)),
    ∂(-log p)/∂x_t(k) = -γ_t(k),   γ_t(k) = Σ_{s: l'_s = k} exp(α_t(s) + β_t(s) - x_t(k) - log p),

γ_t being the posterior occupation of class k at frame t (Σ_k γ_t(k) = 1). Frames past the
sample's input length get 0.

What backward returns, as torch's kernel does, is y_t(k) - γ_t(k) = exp(x_t(k)) - γ_t(k): the
derivative -γ plus exp(x_t), a vector that log_softmax's backward maps to 0 (it subtracts
y Σ_k g_k, and Σ_k y_t(k) = 1). Through the intended ``log_softmax(logits)`` the logits' gradient
is y - γ either way; returning it already formed avoids the cancellation -γ + y Σγ in
float32 log_softmax backward on a confident frame (measured: relative error 5e-5 against
torch's 8e-7). Off the simplex (log_probs that are not normalised) it is not the derivative,
in torch as here; the finite-difference check goes through log_softmax. An impossible alignment
(input shorter than the target needs) has loss inf and a nan gradient on its own frames (0 past
its input length, as torch's), or 0 and a zero gradient when ``zero_infinity``.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from ._util import as_tensor, check_float, loss_reduction

_NEG_INF = -np.inf


def _lse(*arrays):
    """Elementwise log(Σ e^a) of same-shape arrays, -inf where all are -inf."""
    m = np.maximum.reduce(arrays)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(sum(np.exp(a - safe) for a in arrays))


def _shift(a, k):
    """a moved k states to the right along the last axis, -inf filling (k > 0) or to the left (k < 0)."""
    out = np.full_like(a, _NEG_INF)
    if k > 0:
        out[..., k:] = a[..., :-k]
    else:
        out[..., :k] = a[..., -k:]
    return out


class CTCLossFn(ArrayFunction):
    """Per-sample CTC negative log-likelihood -log p(l) of ``x`` (T, N, C) log-probabilities,
    by the alpha-beta recursion in log space; backward g (e^x - γ) on each sample's frames
    (see the module docstring for the derivation and torch's convention). Saved: e^x - γ
    (T, N, C), formed in the forward from α and β. Computed in the input's dtype, as torch's
    kernel: float32 log-probabilities from a float32 log_softmax are normalized only to their own
    rounding, and a float32 ⊕ over a frame reproduces that rounding where float64 exposes it (for
    a loss near 0, p ≈ 1, float64 on float32 inputs was 6x torch's float32 error).
    """

    @staticmethod
    def forward(ctx, x, *, ext, ext_len, in_len, zero_infinity):
        dtype = x.dtype   # computed in the input's dtype, as torch's kernel (see the class docstring)
        t_max, n, _ = x.shape
        l_max = ext.shape[1]
        rows = np.arange(n)[:, None]
        x_ext = x[:, rows, ext]                                            # (T, N, L): x_t(l'_s)
        states = np.arange(l_max)[None, :]
        inside = states < ext_len[:, None]
        skip = np.zeros((n, l_max), bool)                                  # s - 2 -> s allowed
        skip[:, 2:] = (ext[:, 2:] != ext[:, :1]) & (ext[:, 2:] != ext[:, :-2])   # ext[:, 0] is the blank
        skip &= inside
        alpha = np.full((t_max, n, l_max), _NEG_INF, dtype)
        alpha[0, :, :2] = x_ext[0, :, :2]
        alpha[0] = np.where(inside, alpha[0], _NEG_INF)
        for t in range(1, t_max):
            prev = alpha[t - 1]
            two = np.where(skip, _shift(prev, 2), _NEG_INF)
            alpha[t] = np.where(inside, x_ext[t] + _lse(prev, _shift(prev, 1), two), _NEG_INF)
        last = np.maximum(in_len - 1, 0)
        batch = np.arange(n)
        end = alpha[last, batch]                                           # (N, L) at each sample's last frame
        before_end = np.where(ext_len > 1, end[batch, np.maximum(ext_len - 2, 0)], _NEG_INF)
        log_p = _lse(end[batch, ext_len - 1], before_end)
        log_p = np.where(in_len == 0, np.where(ext_len == 1, 0.0, _NEG_INF), log_p).astype(dtype)

        beta = np.full((t_max, n, l_max), _NEG_INF, dtype)
        final = np.full((n, l_max), _NEG_INF, dtype)
        final[batch, ext_len - 1] = 0.0
        final[batch, np.maximum(ext_len - 2, 0)] = 0.0
        skip_from = np.zeros((n, l_max), bool)                             # s -> s + 2 allowed
        skip_from[:, :-2] = skip[:, 2:]
        for t in range(t_max - 1, -1, -1):
            if t + 1 < t_max:
                nxt = beta[t + 1]
                two = np.where(skip_from, _shift(nxt, -2), _NEG_INF)
                rec = x_ext[t] + _lse(nxt, _shift(nxt, -1), two)
            else:
                rec = np.full((n, l_max), _NEG_INF, dtype)
            at_end = (t == in_len - 1)[:, None]
            before = (t < in_len - 1)[:, None]
            beta[t] = np.where(inside & at_end, x_ext[t] + final, np.where(inside & before, rec, _NEG_INF))

        with np.errstate(invalid="ignore"):
            occupancy = np.exp(alpha + beta - x_ext - log_p[None, :, None])   # (T, N, L), nan if p = 0
        gamma = np.zeros(x.shape, dtype)
        t_idx, n_idx, _ = np.indices(occupancy.shape)
        np.add.at(gamma, (t_idx, n_idx, np.broadcast_to(ext, occupancy.shape)), np.nan_to_num(occupancy, nan=0.0))
        loss = -log_p
        impossible = ~np.isfinite(loss)
        frames = np.arange(t_max)[:, None] < in_len[None, :]             # (T, N): the sample's own frames
        slope = np.where(frames[:, :, None], np.exp(x), 0.0) - gamma
        # an impossible sample: zero_infinity zeroes its gradient; otherwise it is nan on the
        # sample's own frames and 0 past its input length (those frames never enter the loss), as torch's
        slope[:, impossible] = 0.0
        if not zero_infinity:
            slope[:, impossible] = np.where(frames[:, impossible, None], np.nan, 0.0)
        if zero_infinity:
            loss = np.where(impossible, 0.0, loss)
        ctx.save_for_backward(slope)
        ctx.dtype = dtype
        return loss.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        (slope,) = ctx.saved_tensors
        return (slope * np.asarray(g, ctx.dtype)[None, :, None]).astype(ctx.dtype)


def _lengths(value, op, name, n):
    a = value._data if isinstance(value, Tensor) else np.asarray(value)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op}: {name} must be integers (a tuple of ints or a long tensor), got dtype {a.dtype}")
    a = a.reshape(-1).astype(np.int64)
    if a.size != n:
        raise InvalidArgumentError(f"{op}: {name} must be of size batch_size ({n}), got {a.size} values")
    if np.any(a < 0):
        raise InvalidArgumentError(f"{op}: {name} must be non-negative, got {a.tolist()}")
    return a


def _extended_targets(op, targets, target_lengths, blank, n):
    """(l' as an (N, 2 S_max + 1) int array, each sample's L = 2 S + 1)."""
    t = targets._data if isinstance(targets, Tensor) else np.asarray(targets)
    if t.dtype.kind not in "iuf":
        raise TypeError(f"{op}: targets must be a tensor of class indices, got dtype {t.dtype}")
    t = t.astype(np.int64)
    if t.ndim == 2:
        if t.shape[0] != n:
            raise InvalidArgumentError(f"{op}: targets of shape {tuple(t.shape)} must have batch_size ({n}) rows")
        if target_lengths.size and target_lengths.max() > t.shape[1]:
            raise InvalidArgumentError(f"{op}: targets: expected size at least {target_lengths.max()} at "
                                       f"dimension 1, but got size {t.shape[1]}")
        rows = [t[b, :target_lengths[b]] for b in range(n)]
    elif t.ndim == 1:
        if target_lengths.sum() > t.size:
            raise InvalidArgumentError(f"{op}: targets of {t.size} labels are fewer than the sum of "
                                       f"target_lengths ({target_lengths.sum()})")
        starts = np.concatenate([[0], np.cumsum(target_lengths)[:-1]]).astype(int)
        rows = [t[s:s + k] for s, k in zip(starts, target_lengths)]
    else:
        raise InvalidArgumentError(f"{op}: targets must be 1-D (concatenated) or 2-D (N, S), got shape {tuple(t.shape)}")
    s_max = int(target_lengths.max()) if n else 0
    ext = np.full((n, 2 * s_max + 1), blank, np.int64)
    for b, r in enumerate(rows):
        ext[b, 1:2 * len(r):2] = r
    return ext, 2 * target_lengths + 1


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """CTC loss of ``log_probs`` (T, N, C) or unbatched (T, C) — log_softmax outputs — against
    ``targets`` (N, S) padded or 1-D concatenated, with per-sample ``input_lengths`` and
    ``target_lengths`` (``torch.nn.functional.ctc_loss``). 'mean' divides each sample's loss by
    its target length (at least 1) and then averages over the batch; 'sum' adds; 'none' keeps
    them. :class:`CTCLossFn` gives -log p(l) and its gradient (derivation in the module
    docstring)."""
    op = "ctc_loss"
    reduction = loss_reduction(op, reduction)
    x = as_tensor(log_probs, op, "log_probs")
    check_float(op, log_probs=x)
    if x.ndim not in (2, 3):
        raise InvalidArgumentError(f"{op}: log_probs must be (T, N, C) or unbatched (T, C), got shape {tuple(x.shape)}")
    unbatched = x.ndim == 2
    if unbatched:
        x = x.unsqueeze(1)
        targets = np.asarray(targets._data if isinstance(targets, Tensor) else targets).reshape(1, -1)
    t_max, n, c = x.shape
    if isinstance(blank, bool) or not isinstance(blank, (int, np.integer)) or not 0 <= blank < c:
        raise InvalidArgumentError(f"{op}: blank must be in label range [0, {c}), got {blank!r}")
    in_len = _lengths(input_lengths, op, "input_lengths", n)
    tgt_len = _lengths(target_lengths, op, "target_lengths", n)
    if in_len.size and in_len.max() > t_max:
        raise InvalidArgumentError(f"{op}: expected input_lengths to have value at most {t_max}, but got value "
                                   f"{in_len.max()}")
    ext, ext_len = _extended_targets(op, targets, tgt_len, blank, n)
    if np.any((ext < 0) | (ext >= c)):
        raise InvalidArgumentError(f"{op}: targets must be class indices in [0, {c})")
    loss = CTCLossFn.apply(x, ext=ext, ext_len=ext_len, in_len=in_len, zero_infinity=bool(zero_infinity))
    if reduction == "none":
        return loss.reshape(()) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    return (loss / Tensor(np.maximum(tgt_len, 1).astype(loss.dtype))).mean()
