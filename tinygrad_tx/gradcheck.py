"""Finite-difference gradient checks in float64 (no PyTorch needed).

``gradcheck(fn, inputs)`` compares the engine's backward against central
differences, f'(x)·v ≈ (f(x + εv) − f(x − εv)) / 2ε, whose error is O(ε²):

* **full Jacobian** (inputs with at most ``full_jacobian_max`` elements in all):
  every column J[:, j] is estimated by perturbing element j alone and compared
  with the rows uᵀJ the backward computes for each unit cotangent u;
* **directional** (larger inputs): one random direction v over all inputs and one
  random cotangent u on the output; the backward's Σᵢ ⟨∂L/∂xᵢ, vᵢ⟩ with
  L = ⟨u, f(x)⟩ must equal the finite-difference ⟨u, (f(x+εv) − f(x−εv))/2ε⟩.
  A random direction is sensitive to an error in any component.
"""
from __future__ import annotations

import numpy as np

from .core.grad_mode import no_grad
from .core.tensor import Tensor


class GradcheckError(AssertionError):
    pass


def _call(fn, arrays, diff_idx):
    ts = [Tensor(a, requires_grad=(i in diff_idx)) for i, a in enumerate(arrays)]
    return ts, fn(*ts)


def _backward_vjp(fn, arrays, diff_idx, u):
    ts, out = _call(fn, arrays, diff_idx)
    out.backward(u)
    return [ts[i].grad._data if ts[i].grad is not None else np.zeros_like(arrays[i]) for i in diff_idx]


def _forward(fn, arrays):
    with no_grad():
        return np.asarray(fn(*[Tensor(a) for a in arrays])._data, dtype=np.float64)


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-6, rtol: float = 1e-4,
              full_jacobian_max: int = 48, n_directions: int = 2, seed: int = 0) -> bool:
    """Check ``fn``'s backward against central finite differences; raise GradcheckError if off.

    ``inputs`` are arrays (float64 ones are differentiated; others, such as
    integer indices or bool masks, are passed through unchanged).
    """
    arrays = [np.asarray(a._data if isinstance(a, Tensor) else a) for a in inputs]
    diff_idx = [i for i, a in enumerate(arrays) if a.dtype == np.float64]
    if not diff_idx:
        raise ValueError("gradcheck needs at least one float64 input (finite differences are "
                         f"meaningless in lower precision); got dtypes {[a.dtype for a in arrays]}")
    rng = np.random.default_rng(seed)
    y0 = _forward(fn, arrays)
    total = sum(arrays[i].size for i in diff_idx)

    def perturbed(direction, sign):
        out = [a.copy() for a in arrays]
        for i, d in zip(diff_idx, direction):
            out[i] = arrays[i] + sign * eps * d
        return out

    if total <= full_jacobian_max:
        # numeric Jacobian column by column, analytic Jacobian row by row
        num = np.zeros((y0.size, total))
        col = 0
        for k, i in enumerate(diff_idx):
            for j in range(arrays[i].size):
                direction = [np.zeros_like(arrays[m]) for m in diff_idx]
                direction[k].flat[j] = 1.0
                num[:, col] = ((_forward(fn, perturbed(direction, +1)) -
                                _forward(fn, perturbed(direction, -1))) / (2 * eps)).ravel()
                col += 1
        ana = np.zeros_like(num)
        for r in range(y0.size):
            u = np.zeros(y0.shape)
            u.flat[r] = 1.0
            grads = _backward_vjp(fn, arrays, diff_idx, u)
            ana[r] = np.concatenate([g.ravel() for g in grads])
        bad = np.abs(num - ana) > atol + rtol * np.abs(num)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise GradcheckError(f"Jacobian mismatch at output {r}, input element {c}: "
                                 f"numerical {num[r, c]:.10g} vs analytical {ana[r, c]:.10g}\n"
                                 f"max abs difference {np.abs(num - ana).max():.3g}")
        return True

    for _ in range(n_directions):
        direction = [rng.standard_normal(arrays[i].shape) for i in diff_idx]
        u = rng.standard_normal(y0.shape)
        numeric = np.sum(u * (_forward(fn, perturbed(direction, +1)) -
                              _forward(fn, perturbed(direction, -1))) / (2 * eps))
        grads = _backward_vjp(fn, arrays, diff_idx, u)
        analytic = sum(float(np.sum(g * d)) for g, d in zip(grads, direction))
        if abs(numeric - analytic) > atol + rtol * abs(numeric):
            raise GradcheckError(f"directional derivative mismatch: numerical {numeric:.10g} "
                                 f"vs analytical {analytic:.10g} (difference {abs(numeric - analytic):.3g})")
    return True


def gradgradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-6, rtol: float = 1e-4,
                  full_jacobian_max: int = 48, n_directions: int = 2, seed: int = 0) -> bool:
    """Check ``fn``'s second derivatives: :func:`gradcheck` of the gradient itself,
    ``(inputs, u) -> d⟨u, fn(inputs)⟩ / d(float64 inputs)`` computed with ``create_graph=True``
    (flattened and joined), for a random cotangent ``u`` that is checked as an input too. A
    backward whose own backward is wrong (or missing: a value used as a constant) fails here.
    """
    from .core.grad_mode import enable_grad
    from .core.api import grad
    from .tensor import cat

    arrays = [np.asarray(a._data if isinstance(a, Tensor) else a) for a in inputs]
    diff_idx = [i for i, a in enumerate(arrays) if a.dtype == np.float64]
    u = np.random.default_rng(seed).standard_normal(_forward(fn, arrays).shape)

    def first_derivative(*ts):
        *xs, ut = ts
        with enable_grad():
            for i in diff_idx:   # finite-difference calls pass plain Tensors: differentiate them all the same
                if not xs[i].requires_grad:
                    xs[i] = xs[i].detach().requires_grad_(True)
            grads = grad(fn(*xs), [xs[i] for i in diff_idx], ut, create_graph=True, allow_unused=True)
            flat = [g.reshape(-1) for g in grads if g is not None]
            return flat[0] if len(flat) == 1 else cat(flat)

    return gradcheck(first_derivative, arrays + [u], eps=eps, atol=atol, rtol=rtol,
                     full_jacobian_max=full_jacobian_max, n_directions=n_directions, seed=seed)
