"""One sampling step: next-token logits (B, V) -> token ids (B,) (tutorial section 9.2).

The rules, applied in this order to each row ``z`` of the logits (all arithmetic in float64):

1. **Temperature.** ``z = z / max(temperature, 1e-5)``, the tutorial's clamp, so
   ``temperature=0`` is allowed and means "almost greedy". ``T < 1`` sharpens, ``T > 1``
   flattens ``softmax(z)``.
2. **Top-k** (``top_k``): keep every token whose logit is ``>=`` the k-th largest logit,
   the tutorial's ``logits[logits < v[:, [-1]]] = -inf``. Ties with the k-th logit are
   *kept*, so more than k tokens can survive. ``top_k > V`` keeps everything.
3. **Top-p / nucleus** (``top_p``): with ``p = softmax(z)`` sort the tokens by descending
   probability -- a *stable* sort, so equal probabilities stay in ascending token-id
   order -- and keep the shortest prefix of that order whose cumulative probability
   reaches ``top_p``. Exactly: the token at sorted position j is kept iff the cumulative
   probability of the tokens *before* it, ``c_{j-1} = p_(0) + ... + p_(j-1)`` (a running
   ``cumsum``, ``c_{-1} = 0``), is ``< top_p``. The most probable token is therefore always
   kept, and of several tokens tied at the boundary the lower ids win.
4. The survivors' logits stay, the others become ``-inf``, and ``softmax`` renormalises:
   that is the distribution we sample from (``next_token_probs``).
5. **Inverse-CDF sampling.** With ``P`` the running ``cumsum`` of those probabilities in
   token-id order and ``u`` in [0, 1) a uniform draw, the token is the first index i with
   ``P_i > u * P_{V-1}`` (``torch.searchsorted(P, u * P[-1], right=True)``), capped at the
   last token of non-zero probability (should rounding put ``u * P_{V-1}`` at the very
   top). A token of probability 0 is never chosen, and token i is chosen for exactly a
   fraction ``p_i`` of the interval [0, 1) -- the same distribution as
   ``torch.multinomial(probs, 1)``, but a deterministic function of ``u``: given the same
   uniforms, ``reference.generation.sample_next`` (the same rule in torch ops) picks the
   same tokens.
6. **Greedy** (``greedy=True``): ``argmax`` of the raw logits, the first index on ties;
   no uniform is drawn. (Temperature, top-k and top-p never change the argmax.)

Arguments are checked by ``check_sampling_args``; the torch twin uses the same checks, so
both reject the same input with the same message.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..generator import Generator
from ..tensor import Tensor, default_generator
from ..torch_streams import multinomial

MIN_TEMPERATURE = 1e-5


# --------------------------------------------------------------------------- argument checks (shared with the twin)

def _is_real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def check_sampling_args(temperature=1.0, top_k=None, top_p=None, greedy=False):
    """Validate the sampling knobs; returns ``(temperature, top_k, top_p)`` as float/int/float.

    temperature: a real >= 0 (finite); top_k: None or an int >= 1; top_p: None or a real in
    (0, 1]; greedy: a bool.
    """
    if not _is_real(temperature):
        raise TypeError(f"temperature must be a real number, got {temperature!r}")
    temperature = float(temperature)
    if not np.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")
    if top_k is not None:
        if not isinstance(top_k, numbers.Integral) or isinstance(top_k, bool):
            raise TypeError(f"top_k must be None or an int, got {top_k!r}")
        top_k = int(top_k)
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1 (or None for no top-k filtering), got {top_k}")
    if top_p is not None:
        if not _is_real(top_p):
            raise TypeError(f"top_p must be None or a real number in (0, 1], got {top_p!r}")
        top_p = float(top_p)
        if not 0.0 < top_p <= 1.0:  # also rejects nan
            raise ValueError(f"top_p must be in (0, 1] (or None for no nucleus filtering), got {top_p}")
    if not isinstance(greedy, (bool, np.bool_)):
        raise TypeError(f"greedy must be a bool, got {greedy!r}")
    return temperature, top_k, top_p


def check_logits(logits: np.ndarray) -> None:
    """(B, V) floating logits; no nan or +inf; every row keeps at least one finite logit
    (``-inf`` marks a forbidden token)."""
    if logits.ndim != 2 or logits.shape[0] < 1 or logits.shape[1] < 1:
        raise ValueError(f"logits must have shape (batch, vocab_size) with both >= 1, got {tuple(logits.shape)}")
    if logits.dtype.kind != "f":
        raise TypeError(f"logits must be floating point, got dtype {logits.dtype}")
    if np.isnan(logits).any() or np.isposinf(logits).any():
        bad = tuple(int(i) for i in np.argwhere(np.isnan(logits) | np.isposinf(logits))[0])
        raise ValueError(f"logits must not contain nan or +inf; logits{list(bad)} = {logits[bad]}")
    dead = np.isneginf(logits).all(axis=1)
    if dead.any():
        raise ValueError(f"row {int(np.argmax(dead))} of the logits is all -inf: no token can be sampled")


def check_uniform(uniform, batch: int) -> np.ndarray:
    u = np.asarray(uniform, dtype=np.float64)
    if u.shape != (batch,):
        raise ValueError(f"uniform must hold one draw per row, shape ({batch},), got shape {tuple(u.shape)}")
    if not ((u >= 0) & (u < 1)).all():
        raise ValueError(f"uniform draws must lie in [0, 1), got {u[~((u >= 0) & (u < 1))][:4].tolist()}")
    return u


def _as_logits(logits) -> np.ndarray:
    arr = logits._data if isinstance(logits, Tensor) else np.asarray(logits)
    check_logits(arr)
    return arr.astype(np.float64)


# --------------------------------------------------------------------------- the rules

def _softmax(z: np.ndarray) -> np.ndarray:
    """Row softmax of float64 logits that may hold -inf (each row has a finite maximum)."""
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def filter_logits(logits, temperature=1.0, top_k=None, top_p=None) -> np.ndarray:
    """Rules 1-4 of the module docstring: float64 logits / temperature with the tokens that
    top-k and top-p remove set to -inf. Shape (B, V)."""
    temperature, top_k, top_p = check_sampling_args(temperature, top_k, top_p)
    x = _as_logits(logits)
    with np.errstate(over="ignore"):
        z = x / max(temperature, MIN_TEMPERATURE)
    if (np.isinf(z) & np.isfinite(x)).any():
        raise ValueError(f"logits / temperature overflows float64 (largest |logit| "
                         f"{np.abs(x[np.isfinite(x)]).max()}, temperature {temperature}); "
                         f"use greedy=True or a larger temperature")
    V = z.shape[1]
    if top_k is not None and top_k < V:
        kth = np.partition(z, V - top_k, axis=1)[:, V - top_k:V - top_k + 1]  # the k-th largest, (B, 1)
        z[z < kth] = -np.inf
    if top_p is not None:
        p = _softmax(z)
        order = np.argsort(-p, axis=1, kind="stable")        # descending, ties by ascending id
        cum = np.cumsum(np.take_along_axis(p, order, axis=1), axis=1)
        before = np.zeros_like(cum)
        before[:, 1:] = cum[:, :-1]                          # probability mass ranked above each token
        keep = np.empty_like(before, dtype=bool)
        np.put_along_axis(keep, order, before < top_p, axis=1)
        z[~keep] = -np.inf
    return z


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None) -> np.ndarray:
    """The distribution each sampling step draws from: softmax of ``filter_logits``, (B, V) float64."""
    return _softmax(filter_logits(logits, temperature, top_k, top_p))


def inverse_cdf(probs: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """Rule 5: for each row the first index i with cumsum(probs)_i > u * sum(probs), capped at the
    last index of non-zero probability. (The count of cumsum entries <= u * total is that first
    index, because the cumsum never decreases: ``searchsorted(..., side="right")``.)"""
    cdf = np.cumsum(probs, axis=1)
    target = uniform * cdf[:, -1]
    idx = np.sum(cdf <= target[:, None], axis=1)
    last = probs.shape[1] - 1 - np.argmax((probs > 0)[:, ::-1], axis=1)
    return np.minimum(idx, last).astype(np.int64)


def sample_next(logits, *, temperature=1.0, top_k=None, top_p=None, greedy=False, uniform=None,
                generator=None) -> np.ndarray:
    """Pick the next token of each row of ``logits`` (B, V): int64 ids (B,).

    ``greedy=True``: argmax (first on ties). Otherwise inverse-CDF sampling from
    ``next_token_probs(logits, temperature, top_k, top_p)`` with ``uniform`` (B,) draws in
    [0, 1) if given, else B draws from ``generator`` (a ``np.random.Generator``). With no
    ``uniform`` and a ``tinygrad_tx.Generator`` (the default: the global one that
    ``tinygrad_tx.manual_seed`` seeds) the pick is ``torch.multinomial(probs, 1)``'s, draw for
    draw (``torch_streams.multinomial``: argmax of p / q, q ~ Exp(1)), so a seeded run samples
    torch's tokens. See the module docstring for the rules.
    """
    check_sampling_args(temperature, top_k, top_p, greedy)
    if greedy:
        return np.argmax(_as_logits(logits), axis=1).astype(np.int64)
    probs = next_token_probs(logits, temperature, top_k, top_p)
    if uniform is None:
        gen = default_generator() if generator is None else generator
        if isinstance(gen, Generator):   # torch's stream: torch.multinomial(probs, 1, generator=gen)
            return multinomial(gen, probs, 1, False)[:, 0]
        uniform = gen.random(probs.shape[0])
    return inverse_cdf(probs, check_uniform(uniform, probs.shape[0]))
