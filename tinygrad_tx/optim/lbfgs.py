"""L-BFGS (``torch.optim.LBFGS``): a quasi-Newton method that re-evaluates the loss itself.

One ``step(closure)`` runs up to ``max_iter`` iterations on all the parameters seen as one flat
vector x (``closure()`` recomputes the loss and its gradient at the current parameters):

1. **Direction.** The first iteration goes down the gradient, d = −g. Later ones keep the last
   ``history_size`` pairs s_k = x_{k+1} − x_k (the step taken) and y_k = g_{k+1} − g_k (the change
   of gradient), only those with curvature yᵀs > 1e-10, and approximate the inverse Hessian H by
   the two-loop recursion::

       q = −g
       for k newest → oldest:   α_k = ρ_k s_kᵀ q;   q = q − α_k y_k         (ρ_k = 1 / y_kᵀ s_k)
       r = γ q                                        (γ = yᵀs / yᵀy of the newest pair)
       for k oldest → newest:   β = ρ_k y_kᵀ r;     r = r + (α_k − β) s_k
       d = r                                          (d = −H g)

2. **Step length t.** The first iteration of the first step takes t = lr · min(1, 1/‖g‖₁), later ones
   t = lr. Without a line search the step is x ← x + t d (the loss is re-evaluated unless this
   is the last iteration); with ``line_search_fn="strong_wolfe"`` t is searched (:func:`strong_wolfe`)
   until the loss has decreased enough (Armijo: f(x + t d) <= f(x) + c₁ t gᵀd) and the slope has
   flattened enough (|∇f(x + t d)ᵀd| <= c₂ |gᵀd|), with c₁ = 1e-4, c₂ = 0.9.

3. **Stop** after ``max_iter`` iterations or ``max_eval`` evaluations of the closure, when the
   largest |gradient| is <= ``tolerance_grad``, or when the step (max |t d|), the loss change or the
   slope gᵀd is below ``tolerance_change``.

The algorithm, its order of operations and its state (``d``, ``t``, ``old_dirs`` = y_k, ``old_stps``
= s_k, ``ro``, ``H_diag`` = γ, ``al``, ``prev_flat_grad``, ``prev_loss``, ``func_evals``, ``n_iter``,
kept under the first parameter as torch does) are torch's, written on NumPy vectors in the
parameters' dtype; the state carries over from one ``step`` to the next.
"""
from __future__ import annotations

import numpy as np

from ..core.grad_mode import enable_grad
from ..core.tensor import Tensor
from .optimizer import Optimizer


# ============================================================================ line search

def cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser, clipped to ``bounds`` (default: between x1 and x2), of the cubic through
    (x1, f1) and (x2, f2) with slopes g1, g2; the middle of the bounds when the cubic has no
    minimum (torch's ``_cubic_interpolate``, minFunc's ``polyinterp``).

    With d1 = g1 + g2 − 3 (f1 − f2)/(x1 − x2) and d2 = √(d1² − g1 g2), the minimum is at
    x2 − (x2 − x1)(g2 + d2 − d1)/(g2 − g1 + 2 d2) (for x1 <= x2; symmetric otherwise).
    """
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(at, lo), hi)
    return (lo + hi) / 2.0


def strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step length t along d satisfying the strong Wolfe conditions (torch's ``_strong_wolfe``,
    minFunc's ``WolfeLineSearch``). ``evaluate(t) -> (loss, gradient)`` at x + t d; f, g, gtd: the
    loss, gradient and slope gᵀd at t = 0. Returns ``(loss, gradient, t, evaluations)``.

    *Bracketing*: try t, growing it (cubic extrapolation within [t + 0.01 (t − t_prev), 10 t])
    until a point fails Armijo or stops decreasing, or the slope turns non-negative: the minimum
    lies between the last two points. A point meeting both conditions ends the search.
    *Zoom*: shrink the bracket by cubic interpolation, a point 10 % of the bracket away from its
    ends when the interpolation lands too near one of them twice, until a point meets both
    conditions, the bracket is shorter than ``tolerance_change`` (times max |d|), or ``max_ls``
    evaluations are spent. The lowest point of the bracket is returned.
    """
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = g_new.dot(d)

    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        # extrapolate: the minimum of the cubic, at least 1 % further, at most 10 times as far
        t_next = cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.copy(), gtd_new
        t = t_next
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

    if ls_iter == max_ls:   # the budget ran out while bracketing
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    insufficient_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # too close to an end of the bracket (twice in a row, or outside it): 10 % away from that end
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False

        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            # not low enough: the new point replaces the high end
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new.copy(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                # the minimum is on the other side of the new point: the old low end becomes the high one
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new.copy(), gtd_new

    return bracket_f[low], bracket_g[low], bracket[low], evals


# ============================================================================ the optimizer

class LBFGS(Optimizer):
    """``torch.optim.LBFGS``: same signature, defaults (``max_eval`` = ``max_iter`` · 5 // 4),
    algorithm and state (see the module's docstring). ``step(closure)`` needs the closure: it
    evaluates the loss (and, through ``backward`` inside the closure, the gradient) many times.
    One parameter group only, as torch."""

    def __init__(self, params, lr=1, max_iter: int = 20, max_eval=None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100, line_search_fn=None):
        if isinstance(lr, Tensor) and lr._data.size != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0)")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r} "
                             "(torch accepts it here and raises \"only 'strong_wolfe' is supported\" at step())")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # ------------------------------------------------------------------ the flat vector x
    def _flat_grad(self) -> np.ndarray:
        """All gradients as one vector (zeros for a parameter without one)."""
        return np.concatenate([np.zeros(p._data.size, p._data.dtype) if p.grad is None
                               else self._grad_of(p).reshape(-1) for p in self._params])

    def _add_to_params(self, t, d: np.ndarray) -> None:
        """x ← x + t d, in place."""
        offset = 0
        for p in self._params:
            self._check_writeable(p)
            n = p._data.size
            p._data += t * d[offset:offset + n].reshape(p._data.shape)
            p._bump()
            offset += n

    def _set_params(self, values) -> None:
        for p, v in zip(self._params, values):
            p._data[...] = v
            p._bump()

    def _evaluate_at(self, closure, x, t, d):
        """(loss, gradient) at x + t d; the parameters are then put back to x."""
        self._add_to_params(t, d)
        with enable_grad():
            loss = float(closure())
        grad = self._flat_grad()
        self._set_params(x)
        return loss, grad

    # ------------------------------------------------------------------ one step
    def step(self, closure=None):
        """Up to ``max_iter`` L-BFGS iterations; returns the loss of the first evaluation."""
        if closure is None:
            raise TypeError("LBFGS.step() needs a closure that re-evaluates the model and returns the loss "
                            "(it evaluates the loss many times per step)")
        group = self.param_groups[0]
        lr = float(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")

        state = self.state[self._params[0]]   # LBFGS's state is global; torch keeps it under the first parameter
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._evaluate_closure(closure)
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # ---- direction d
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:   # curvature: keep the pair (s, y), the oldest one out when full
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = r = q * H_diag
                for i in range(len(old_dirs)):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]

            prev_flat_grad = flat_grad.copy()
            prev_loss = loss

            # ---- step length t
            t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:   # not a descent direction any more
                break

            ls_evals = 0
            if line_search_fn == "strong_wolfe":
                x0 = [p._data.copy() for p in self._params]
                loss, flat_grad, t, ls_evals = strong_wolfe(
                    lambda step: self._evaluate_at(closure, x0, step, d), t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - evals)   # torch's search keeps its own tolerance_change (1e-9)
                self._add_to_params(t, d)
                optimal = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_to_params(t, d)
                optimal = False
                if n_iter != max_iter:   # the last iteration's loss is not needed
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._flat_grad()
                    optimal = np.abs(flat_grad).max() <= tolerance_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            # ---- stop?
            if n_iter == max_iter or evals >= max_eval or optimal:
                break
            if np.abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break   # no progress

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    # ------------------------------------------------------------------ state
    @staticmethod
    def _cast_state(p, idx, name, value):
        """A copy of one saved entry: the vectors (and lists of them) in the parameters' dtype,
        numbers as they are (LBFGS's vectors are flat, not the first parameter's shape)."""
        if isinstance(value, (list, tuple)):
            return [LBFGS._cast_state(p, idx, name, v) for v in value]
        if value is None or isinstance(value, (int, float, bool, str)):
            return value
        arr = np.array(value, copy=True)
        if p._data.dtype.kind == "f" and arr.dtype.kind == "f":
            arr = arr.astype(p._data.dtype)
        return arr
