"""``Optimizer``: parameter groups, per-parameter state, ``zero_grad`` and ``state_dict``.

This mirrors ``torch.optim.Optimizer`` so that code (and saved state) moves
between the two without translation:

* ``params`` is an iterable of Tensors, of ``(name, Tensor)`` pairs, or of
  *parameter groups*: dicts ``{"params": [...], "lr": ..., ...}`` whose keys
  override the optimizer's defaults for those parameters (the usual use: no
  weight decay on biases and LayerNorm gains, see :func:`weight_decay_groups`).
* ``self.state[p]`` is a dict of NumPy arrays kept for parameter ``p``
  (momentum buffers, moment estimates), created lazily at ``p``'s first step,
  in ``p``'s dtype (a float32 model keeps float32 state, like torch).
* ``step()`` updates every ``p._data`` **in place** (``p._data -= ...``), so an
  array shared by two Tensors (tied weights, views) stays consistent, and bumps
  ``p``'s version: a graph that saved the old value refuses to backward (as torch).
  Parameters whose ``.grad`` is None are skipped, as in torch.
* ``state_dict()`` has torch's structure: ``{"state": {index: {...}},
  "param_groups": [{..., "params": [indices]}]}``, where the index of a
  parameter is its position in the concatenation of all groups. Arrays are
  returned by reference (as torch does); ``copy.deepcopy`` it for a snapshot.
* ``load_state_dict()`` copies the saved arrays (cast to each parameter's
  dtype, except ``step``) and checks their shapes against the parameters, so a
  state saved for another model fails with a clear ``ValueError`` instead of
  a broadcasting error at the next step. It accepts the state of a
  ``torch.optim`` optimizer converted to NumPy, and vice versa.
"""
from __future__ import annotations

import numbers
import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain

import numpy as np

from ..core.grad_mode import enable_grad
from ..core import seam as _seam
from ..core.dtypes import default_float
from ..core.tensor import Tensor


def step_dtype(fused: bool = False) -> np.dtype:
    """The dtype of the 0-d ``step`` state (and NAdam's ``mu_product``), torch's
    ``_get_scalar_dtype``: float64 when the default float is float64 (``set_default_dtype``),
    else float32; float32 always for torch's ``fused=True`` kernels."""
    return np.dtype(np.float64 if default_float() == np.float64 and not fused else np.float32)


class _RequiredParameter:
    """Marker for a hyperparameter without a default (torch's ``optim.optimizer.required``)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class ReadOnlyParameterError(RuntimeError, ValueError):
    """A step would write into a parameter whose array NumPy marks read-only (built by
    ``from_numpy`` over a read-only or ``np.broadcast_to`` array). torch writes through a
    read-only array regardless (after a warning) and refuses a broadcast one with a
    RuntimeError; we refuse both, naming the parameter, before anything is changed."""


class KeyErrorWithMessage(KeyError, ValueError):
    """A missing key that torch reports as ``KeyError`` (a parameter group without
    ``'params'``): KeyError for torch code, ValueError for ours, and printed as a sentence
    (a plain KeyError shows its message in quotes)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def check_hyperparameter(value, what: str, arg: str):
    """``value`` if it is a real number or a one-element Tensor (torch takes both), else a
    TypeError naming ``arg``: torch's own range check would fail with "'<' not supported
    between instances of 'str' and 'float'", which names neither the argument nor the value."""
    if isinstance(value, Tensor):
        if value._data.size != 1:
            raise ValueError(f"Tensor {arg} must be 1-element, got shape {tuple(value.shape)}")
        return value
    if not isinstance(value, numbers.Real):
        raise TypeError(f"Invalid {what}: {arg} must be a float, got {type(value).__name__} ({value!r})")
    return value


def check_betas(betas):
    """``betas`` as a pair of real numbers in [0, 1) (``Adam``/``AdamW``): not a sequence is a
    TypeError, fewer than two an IndexError (torch indexes ``betas[1]``), more than two a
    ValueError (torch silently ignores the rest), each outside [0, 1) torch's ValueError."""
    if isinstance(betas, (str, bytes)) or not hasattr(betas, "__len__") or not hasattr(betas, "__getitem__"):
        raise TypeError(f"betas must be a tuple of two floats, got {type(betas).__name__} ({betas!r})")
    if len(betas) != 2:
        cls = IndexErrorWithValue if len(betas) < 2 else ValueError
        raise cls(f"betas must be a tuple of two floats, got {len(betas)} values: {tuple(betas)!r}")
    for i, b in enumerate(betas):
        check_hyperparameter(b, f"beta parameter at index {i}", f"betas[{i}]")
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b} (betas[{i}] must be in [0, 1))")
    return float(betas[0]), float(betas[1])


class IndexErrorWithValue(IndexError, ValueError):
    """Too few values (torch: IndexError from indexing the tuple), a ValueError for our code."""


class Optimizer:
    """Base class of the optimizers; subclasses define ``step``."""

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors "
                            f"or dicts, but got a Tensor of shape {tuple(params.shape)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        try:
            groups = list(params)
        except TypeError:
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors "
                            f"or dicts, but got {type(params).__name__} ({params!r})") from None
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict) -> None:
        """Append a group; keys it does not set take the optimizer's defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        param_group = dict(param_group)
        if "params" not in param_group:
            raise KeyErrorWithMessage(f"param_group has no 'params' entry (keys: {sorted(param_group)})")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        try:
            params = list(params)
        except TypeError:
            raise TypeError(f"param_group['params'] must be an iterable of Tensors, got "
                            f"{type(params).__name__} ({params!r})") from None

        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        param_group["params"] = params

        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but parameter {i} of the group "
                                f"is a {type(p).__name__}")
            if not (p.is_leaf or p.retains_grad):
                raise ValueError(f"can't optimize a non-leaf Tensor (parameter {i} of the group, "
                                 f"shape {tuple(p.shape)})")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)

        ids = [id(p) for p in params]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; they will be "
                          "updated once per occurrence", stacklevel=3)
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        if not existing.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        for group in self.param_groups:
            if ("param_names" in group) != ("param_names" in param_group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ gradients
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients: ``None`` (default) or zeros written into the existing grad tensors."""
        _seam.method_called(self, "zero_grad", set_to_none)   # tinygrad_tx.compile records the call
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    elif p.grad._data.flags.writeable:
                        p.grad._data[...] = 0
                        p.grad._bump()
                    else:  # a read-only (e.g. broadcast) gradient array is replaced by zeros
                        p.grad._data = np.zeros_like(p._data)

    def _params_with_grad(self, group: dict):
        """``(p, g)`` for each parameter of ``group`` that has a gradient (torch skips the others);
        ``g`` is negated when the group maximizes."""
        for p in group["params"]:
            if p.grad is None:
                continue
            self._check_writeable(p)
            grad = self._grad_of(p)
            yield p, (-grad if group["maximize"] else grad)

    def _check_writeable(self, p: Tensor) -> None:
        """Refuse a read-only parameter array with our error, before NumPy's "output array is
        read-only" from the middle of an update (see :class:`ReadOnlyParameterError`)."""
        if not p._data.flags.writeable:
            index = next(i for i, q in enumerate(q for g in self.param_groups for q in g["params"]) if q is p)
            kind = ("a read-only broadcast (zero-stride) view" if 0 in p._data.strides and p._data.size > 1
                    else "read-only memory")
            raise ReadOnlyParameterError(
                f"{type(self).__name__}.step(): parameter {index} (shape {tuple(p.shape)}) is {kind} that "
                "cannot be updated in place (was it made by from_numpy of a read-only or np.broadcast_to "
                "array?); give the optimizer a tensor that owns its data, e.g. Parameter(t.clone())")

    @staticmethod
    def _grad_of(p: Tensor) -> np.ndarray:
        """``p.grad`` as an array of ``p``'s shape and dtype (a Tensor or other dtype is converted)."""
        g = p.grad._data
        if g.shape != p._data.shape:
            raise ValueError(f"parameter of shape {p._data.shape} has a gradient of shape {tuple(g.shape)}")
        if g.dtype != p._data.dtype:
            g = g.astype(p._data.dtype)
        return g

    def _evaluate_closure(self, closure):
        """Run ``closure`` (which re-evaluates the model and its loss) with graph recording on.
        Every ``step`` starts here (so ``tinygrad_tx.compile`` records the step as one call)."""
        _seam.method_called(self, "step", closure)   # tinygrad_tx.compile records the call
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def step(self, closure=None):  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """torch's structure: ``{"state": {index: {...}}, "param_groups": [...]}``."""
        index: dict[int, int] = {}
        groups = []
        start = 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state saved by ``state_dict`` (ours, or torch's with its tensors as arrays)."""
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError("optimizer state_dict must be a dict with keys 'state' and 'param_groups'")
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups: "
                             f"{len(saved_groups)} saved, the optimizer has {len(groups)}")
        for i, (g, s) in enumerate(zip(groups, saved_groups)):
            if len(g["params"]) != len(s["params"]):
                raise ValueError(f"loaded state dict contains a parameter group that doesn't match the "
                                 f"size of optimizer's group: group {i} has {len(s['params'])} parameters "
                                 f"saved, the optimizer's has {len(g['params'])}")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        state = defaultdict(dict)
        for key, saved in state_dict["state"].items():
            idx = int(key)
            if idx not in id_map:
                raise ValueError(f"loaded state dict has state for parameter index {idx}, but its "
                                 f"param_groups only list indices {sorted(id_map)}")
            p = id_map[idx]
            state[p] = {name: self._cast_state(p, idx, name, value) for name, value in saved.items()}

        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            for name, default in self.defaults.items():
                if default is not required:
                    saved.setdefault(name, default)
            if isinstance(saved.get("betas"), list):
                saved["betas"] = tuple(saved["betas"])
        self.state = state
        self.param_groups = saved_groups

    @staticmethod
    def _cast_state(p: Tensor, idx: int, name: str, value):
        """A private, writeable copy of one saved state entry, in ``p``'s dtype and shape.

        ``step`` keeps its own dtype (torch keeps it float32, float64 under a float64 default,
        whatever the parameter).
        Non-array entries (None, Python numbers) are kept as they are.
        """
        if value is None or isinstance(value, (int, float, bool, str)):
            return value
        arr = np.array(value, copy=True)
        if name == "step":
            return arr
        if arr.shape != p._data.shape:
            raise ValueError(f"loaded optimizer state '{name}' of parameter {idx} has shape {tuple(arr.shape)}, "
                             f"but the parameter has shape {p._data.shape}")
        if p._data.dtype.kind == "f" and arr.dtype != p._data.dtype:
            arr = arr.astype(p._data.dtype)
        return arr


def weight_decay_groups(named_parameters, weight_decay: float, no_decay=None) -> list[dict]:
    """Split parameters into a decayed and a non-decayed group (the GPT-2/nanoGPT recipe).

    ``named_parameters``: ``(name, Tensor)`` pairs (e.g. ``model.named_parameters()``).
    ``no_decay(name, p) -> bool`` picks the parameters without weight decay; the
    default exempts every parameter with fewer than 2 dimensions (biases,
    LayerNorm gains and shifts) and keeps decay on matrices and embeddings.
    Parameters with ``requires_grad=False`` are left out. Returns
    ``[{"params": decayed, "weight_decay": weight_decay},
    {"params": others, "weight_decay": 0.0}]``, ready for any optimizer.
    """
    if no_decay is None:
        def no_decay(name, p):
            return p.ndim < 2
    decay, other = [], []
    for item in named_parameters:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"weight_decay_groups expects (name, Tensor) pairs, got {type(item).__name__}")
        name, p = item
        if not p.requires_grad:
            continue
        (other if no_decay(name, p) else decay).append(p)
    return [{"params": decay, "weight_decay": float(weight_decay)},
            {"params": other, "weight_decay": 0.0}]
