"""Adam and AdamW (``torch.optim.Adam`` / ``torch.optim.AdamW``), with AMSGrad.

One update rule, :func:`adam_update`, written once on arrays. A step applies it either to
each parameter in turn or -- the *fused* path -- once to a whole parameter group whose
parameters and moment estimates are views into flat buffers (:class:`FlatParameters`),
with the gradients gathered into one array: a dozen NumPy calls per group instead of a
dozen per parameter. Every element goes through the same float operations in the same
order either way, so the two paths give bit-identical results.
"""
from __future__ import annotations

import numpy as np

from .. import kernels
from .flat import FlatParameters
from .optimizer import Optimizer, check_betas, check_hyperparameter, step_dtype

# The fused step walks the flat buffers in chunks of this many elements: the dozen passes of
# an update then run on ~128 KiB pieces that stay in cache (one pass per operation over all
# 3.2M parameters of the large GPT streams through memory each time: 2x slower, measured).
_CHUNK = 1 << 15


def lerp_(start: np.ndarray, end: np.ndarray, weight: float) -> np.ndarray:
    """``start <- start + weight * (end - start)`` in place, with torch.lerp's two-sided formula.

    For ``|weight| >= 0.5`` torch evaluates the same line from the other end,
    ``end - (end - start) * (1 - weight)``, which is exact at ``weight = 1``
    and better conditioned near it. The weight is rounded to the array's dtype
    first, as torch's kernel does.
    """
    w = start.dtype.type(weight)
    diff = end - start
    if abs(w) < 0.5:
        diff *= w
        start += diff
    else:
        diff *= 1 - w
        np.subtract(end, diff, out=start)
    return start


def adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step: float, *, lr: float, beta1: float,
                beta2: float, eps: float, weight_decay: float, decoupled: bool) -> None:
    """One Adam step on arrays, in place: ``param``, ``exp_avg``, ``exp_avg_sq`` (and
    ``max_exp_avg_sq`` unless None) are updated; ``grad`` is read; ``step`` is the step count
    after incrementing. The formulas are :class:`Adam`'s, in torch's order of operations;
    temporaries are written in place, which keeps each product's operand order (so the
    rounding is that of the plain expressions) and saves allocating a new array per term.
    """
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    if kernels.adam(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step_size=lr / bias_correction1,
                    bias_correction2_sqrt=bias_correction2 ** 0.5, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                    weight_decay=weight_decay, decoupled=decoupled):
        return                                     # the same operations in one C pass (docs/kernels.md)
    if weight_decay != 0:
        if decoupled:
            param *= 1 - lr * weight_decay
        else:
            grad = grad + weight_decay * param
    lerp_(exp_avg, grad, 1 - beta1)
    exp_avg_sq *= beta2
    term = np.multiply(grad, 1 - beta2, out=np.empty_like(exp_avg_sq))   # (1 - beta2) * grad * grad
    term *= grad
    exp_avg_sq += term

    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2 ** 0.5

    second = exp_avg_sq if max_exp_avg_sq is None else np.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
    denom = np.sqrt(second, out=term)        # sqrt(v) / sqrt(1 - beta2^t) + eps
    denom /= bias_correction2_sqrt
    denom += eps
    update = np.multiply(exp_avg, -step_size, out=np.empty_like(exp_avg))   # -step_size * m / denom
    update /= denom
    param += update


class Adam(Optimizer):
    r"""``torch.optim.Adam``: same signature, defaults, update and state.

    State per parameter: ``step`` (a 0-d array of ``step_dtype``, as torch keeps it),
    ``exp_avg`` (m), ``exp_avg_sq`` (v) and, with ``amsgrad``, ``max_exp_avg_sq``.
    One step, t = step count after incrementing::

        g <- -g                                   if maximize
        theta <- theta * (1 - lr * lambda)        if weight_decay and decoupled_weight_decay (AdamW)
        g <- g + lambda * theta                   if weight_decay and not decoupled (L2 penalty)
        m <- beta1 m + (1 - beta1) g              (computed as lerp(m, g, 1 - beta1))
        v <- beta2 v + (1 - beta2) g * g
        v_max <- max(v_max, v)                    if amsgrad; then v_max replaces v below
        theta <- theta - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    The last line is ``theta - lr * m_hat / (sqrt(v_hat) + eps)`` with the
    bias-corrected moments ``m_hat = m / (1 - beta1^t)`` and
    ``v_hat = v / (1 - beta2^t)``: the moving averages start at 0, so at step
    t their expectation is ``(1 - beta^t)`` times that of the gradient moment;
    dividing undoes that shrinkage. It is arranged as torch arranges it, with
    ``eps`` added to ``sqrt(v) / sqrt(1 - beta2^t)``, so results agree to
    rounding.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False, fused: bool | None = None):
        if not 0.0 <= check_hyperparameter(lr, "learning rate", "lr"):
            raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0)")
        if not 0.0 <= check_hyperparameter(eps, "epsilon value", "eps"):
            raise ValueError(f"Invalid epsilon value: {eps} (eps must be >= 0)")
        betas = check_betas(betas)
        if not 0.0 <= check_hyperparameter(weight_decay, "weight_decay value", "weight_decay"):
            raise ValueError(f"Invalid weight_decay value: {weight_decay} (weight_decay must be >= 0)")
        if fused not in (None, True, False):
            raise ValueError(f"fused must be None, True or False, got {fused!r}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, decoupled_weight_decay=decoupled_weight_decay,
                        fused=fused)
        self._flat_states: dict = {}   # id(param group) -> _FlatAdamState
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; return ``closure()``'s loss if given."""
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (float(b) for b in group["betas"])
            hyper = dict(lr=float(group["lr"]), beta1=beta1, beta2=beta2, eps=float(group["eps"]),
                         weight_decay=float(group["weight_decay"]), decoupled=group["decoupled_weight_decay"])
            amsgrad = group["amsgrad"]
            flat = self._fused_state(group)
            if flat is not None:
                grad = flat.params.gather([self._grad_of(p) for p in group["params"]])
                if group["maximize"]:
                    np.negative(grad, out=grad)
                flat.update(grad, hyper)
                for p in group["params"]:
                    p._bump()
                continue
            for p, grad in self._params_with_grad(group):  # grad already negated if maximize
                state = self._init_state(p, amsgrad)
                state["step"] += 1
                adam_update(p._data, grad, state["exp_avg"], state["exp_avg_sq"],
                            state["max_exp_avg_sq"] if amsgrad else None, float(state["step"]), **hyper)
                p._bump()
        return loss

    def _fused_state(self, group) -> "_FlatAdamState | None":
        """The group's flat state when this step can take the fused path, else None.

        Fused needs: ``fused`` not False; every parameter with a gradient (torch skips the
        others, so a partial step is per-parameter); one floating dtype; parameter arrays
        that can move into a flat buffer (see :meth:`FlatParameters.movable`); equal step
        counts. The flat state is built at the first such step (existing state is copied
        in) and reused while nothing replaced its arrays (``load_state_dict``, a parameter's
        ``data`` rebound, ``amsgrad`` switched on); otherwise it is rebuilt.
        """
        if group["fused"] is False or any(p.grad is None for p in group["params"]):
            return None
        flat = self._flat_states.pop(id(group), None)
        if flat is not None and flat.group is group and flat.current(self.state):
            self._flat_states[id(group)] = flat
            return flat if np.all(flat.steps == flat.steps[0]) else None
        if flat is not None:   # stale: its arrays were replaced; a fresh layout copies the current values
            flat.params.release()
            del flat
        reason = FlatParameters.movable(group["params"])
        if reason is not None:
            if group["fused"]:
                raise ValueError(f"fused=True, but the parameters cannot share one flat buffer: {reason}")
            return None
        flat = _FlatAdamState(self, group)
        self._flat_states[id(group)] = flat
        return flat if np.all(flat.steps == flat.steps[0]) else None

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        for flat in self._flat_states.values():   # the loaded arrays replace the flat state
            flat.params.release()
        self._flat_states.clear()

    def _init_state(self, p, amsgrad: bool) -> dict:
        """The state of ``p``, created at its first step (zeros in ``p``'s dtype)."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = np.zeros((), dtype=step_dtype(self.defaults["fused"] is True))
            state["exp_avg"] = np.zeros_like(p._data)
            state["exp_avg_sq"] = np.zeros_like(p._data)
            if amsgrad:
                state["max_exp_avg_sq"] = np.zeros_like(p._data)
        elif not isinstance(state["step"], np.ndarray) or state["step"].ndim != 0:
            state["step"] = np.asarray(float(np.asarray(state["step"]).reshape(())),
                                       dtype=step_dtype(self.defaults["fused"] is True))
        if amsgrad and "max_exp_avg_sq" not in state:
            raise ValueError("amsgrad=True but the loaded optimizer state of a parameter of shape "
                             f"{tuple(p.shape)} has no 'max_exp_avg_sq' (it was saved with amsgrad=False)")
        return state


class AdamW(Adam):
    """``torch.optim.AdamW``: Adam with decoupled weight decay, default ``weight_decay=1e-2``.

    The decay shrinks the parameter directly, ``theta <- theta (1 - lr lambda)``,
    instead of adding ``lambda theta`` to the gradient, so it is not rescaled by
    the adaptive denominator (Loshchilov & Hutter, "Decoupled Weight Decay
    Regularization").
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 fused: bool | None = None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True, fused=fused)

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


class _FlatAdamState:
    """A parameter group's Adam state in flat buffers, for the fused step.

    ``params`` (a :class:`FlatParameters`) holds the values;
    ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq``) are flat arrays of the same length
    and ``steps`` one count per parameter (``step_dtype``). ``optimizer.state[p]`` keeps torch's
    per-parameter layout -- its entries are views of these buffers (``step`` a 0-d view of
    ``steps``) -- so ``state_dict()``, a per-parameter step, and torch see ordinary state.
    """

    def __init__(self, opt: Adam, group: dict):
        self.group = group
        amsgrad = group["amsgrad"]
        states = [opt._init_state(p, amsgrad) for p in group["params"]]   # existing state, validated
        self.params = FlatParameters(group["params"])
        n, dtype = self.params.data.size, self.params.data.dtype
        self.exp_avg = np.empty(n, dtype)
        self.exp_avg_sq = np.empty(n, dtype)
        self.max_exp_avg_sq = np.empty(n, dtype) if amsgrad else None
        self.steps = np.array([float(st["step"]) for st in states], dtype=step_dtype(group["fused"] is True))
        self.states = []
        for i, (p, old) in enumerate(zip(group["params"], states)):
            new = {"step": self.steps[i:i + 1].reshape(())}
            for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
                buf = getattr(self, key)
                if buf is not None:
                    view = self.params.segment(buf, i)
                    view[...] = old[key]
                    new[key] = view
            opt.state[p] = new
            self.states.append(new)
        self.entries = [tuple(st.items()) for st in self.states]

    def current(self, state) -> bool:
        """True while every parameter and state entry still is this layout's view."""
        if not self.params.valid() or (self.group["amsgrad"] and self.max_exp_avg_sq is None):
            return False
        return all(state.get(p) is st and all(st[k] is v for k, v in entries)
                   for p, st, entries in zip(self.params.params, self.states, self.entries))

    def update(self, grad: np.ndarray, hyper: dict) -> None:
        """One step of every parameter: :func:`adam_update` on the flat buffers, a chunk at a time."""
        self.steps += 1
        step, vmax = float(self.steps[0]), self.max_exp_avg_sq
        chunk = grad.size if kernels.available(grad.dtype) else _CHUNK   # one pass in C: no chunks needed
        for lo in range(0, grad.size, max(chunk, 1)):
            part = slice(lo, lo + chunk)
            adam_update(self.params.data[part], grad[part], self.exp_avg[part], self.exp_avg_sq[part],
                        None if vmax is None else vmax[part], step, **hyper)
