"""``Module``: the base class of every layer and model, with torch's bookkeeping.

What a Module keeps
-------------------
Assigning an attribute registers it, in insertion order, by its type:

* a :class:`Parameter` goes to ``_parameters`` (learnable, in ``parameters()``),
* a ``Module`` goes to ``_modules`` (a sub-module, walked recursively),
* ``register_buffer(name, tensor, persistent=True)`` puts a non-learnable
  Tensor in ``_buffers`` (running statistics, masks); persistent buffers are
  saved in ``state_dict()``, non-persistent ones are not;
* anything else is a plain attribute.

Re-assigning a registered name keeps its position (a dict keeps the first
insertion's place), which is what makes weight tying match torch:
``model.token_embedding.weight = model.lm_head.weight`` leaves one Parameter
object under two names. ``parameters()`` / ``named_parameters()`` yield it once
(deduplicated by identity, under the first name met); ``state_dict()`` keeps
both keys, as torch's does.

state_dict and load_state_dict
------------------------------
``state_dict()`` returns an ``OrderedDict`` name -> NumPy array with torch's
key order (a module's parameters, then its persistent buffers, then each
child's entries under ``"child."``). **The arrays are copies**: a state dict is
a snapshot that later training does not change and that is safe to mutate
(torch returns tensors sharing storage; ``keep_vars=True`` returns our live
Parameter/buffer objects instead, as torch's ``keep_vars`` does).

``load_state_dict(sd, strict=True)`` accepts NumPy arrays, our Tensors, or
torch tensors (recognised by having ``.detach``, ``.cpu`` and ``.numpy``; torch
is never imported). It first checks every key, then either raises one
:class:`StateDictError` listing the missing, unexpected and mis-shaped keys
together (nothing is loaded in that case), or copies each value **into** the
existing array, cast to the parameter's dtype, so Parameter identity, tying and
optimizer references survive, as with torch's ``param.copy_(value)``.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import numpy as np

from .._factory_args import check_bool
from ..core import seam as _seam
from ..autograd.hooks import RemovableHandle
from ..core.device import check as _check_device
from ..core.device import device as _DeviceType
from ..core.dtypes import resolve as _resolve_dtype
from ..core.tensor import Tensor
from .parameter import Parameter


class TrainingModeError(ValueError, TypeError):
    """``train(mode)`` with a non-bool mode: torch raises ValueError ("training mode is
    expected to be boolean"); a TypeError too, since it is the argument's type that is wrong."""


class StateDictError(ValueError, RuntimeError):
    """``load_state_dict`` found missing, unexpected or mis-shaped keys.

    A ValueError (bad input) that is also a RuntimeError (what torch raises).
    ``missing_keys``, ``unexpected_keys`` and ``mismatched_keys`` (a list of
    ``(key, checkpoint_shape, model_shape)``) hold the details.
    """

    def __init__(self, message, missing_keys, unexpected_keys, mismatched_keys):
        super().__init__(message)
        self.missing_keys = missing_keys
        self.unexpected_keys = unexpected_keys
        self.mismatched_keys = mismatched_keys


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _state_value_to_array(value, key: str) -> np.ndarray:
    """A state-dict value as a NumPy array: ndarray, our Tensor, or a torch tensor (duck-typed)."""
    if isinstance(value, Tensor):
        arr = value._data
    elif isinstance(value, np.ndarray):
        arr = value
    elif all(hasattr(value, a) for a in ("detach", "cpu", "numpy")):
        t = value.detach().cpu()
        try:
            arr = t.numpy()
        except TypeError:  # dtypes NumPy lacks (bfloat16): go through float32
            arr = t.float().numpy()
    elif isinstance(value, (int, float, bool, np.generic)):
        arr = np.asarray(value)
    else:
        raise TypeError(f"load_state_dict: the value for key {key!r} is a {type(value).__name__}; expected a "
                        "NumPy array, a tinygrad_tx Tensor or a torch tensor")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"load_state_dict: the value for key {key!r} has dtype {arr.dtype}, not a numeric dtype")
    return arr


def _float_dtype(dtype, where: str) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{where}: expected a dtype (np.float32, 'float64', ...), got {dtype!r}") from None
    if dt.kind != "f":
        raise TypeError(f"{where} only accepts floating point dtypes, but got desired dtype={dt}")
    return dt


def _parse_to(args, kwargs):
    """torch's ``Module.to`` signatures: (device=None, dtype=None, non_blocking=False), (dtype),
    (tensor); returns (device or None, dtype or None)."""
    unknown = set(kwargs) - {"device", "dtype", "non_blocking", "memory_format"}
    if unknown:
        raise TypeError(f"Module.to() got unexpected keyword argument(s) {sorted(unknown)}")
    if len(args) > 3:
        raise TypeError(f"Module.to() takes at most 3 positional arguments, got {len(args)}")
    device_arg, dtype_arg = kwargs.get("device"), kwargs.get("dtype")
    for arg in args:
        if isinstance(arg, bool):  # non_blocking
            continue
        if isinstance(arg, Tensor):
            dtype_arg = arg._data.dtype
        elif isinstance(arg, (_DeviceType, int)) or (isinstance(arg, str) and arg.split(":")[0] in
                                                       ("cpu", "cuda", "mps", "meta", "xla", "xpu")):
            device_arg = arg if not isinstance(arg, int) else f"cuda:{arg}"
        else:
            dtype_arg = arg
    if dtype_arg is not None:
        dtype_arg = _resolve_dtype(dtype_arg, "Module.to: dtype")
    return device_arg, dtype_arg


class Module:
    """Base class of layers and models (``torch.nn.Module``).

    Subclasses call ``super().__init__()`` first, assign Parameters, buffers and
    sub-modules as attributes, and define ``forward``; calling the module runs
    its forward pre-hooks, ``forward`` and its forward hooks.
    """

    training: bool

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_forward_hooks", {})
        object.__setattr__(self, "_forward_pre_hooks", {})

    # ------------------------------------------------------------------ calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        _seam.module_called(self)   # tinygrad_tx.compile guards on the training flag
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                result = hook(self, args, out)
                if result is not None:
                    out = result
        return out

    def register_forward_hook(self, hook) -> RemovableHandle:
        """``hook(module, args, output)`` runs after ``forward``; a non-None return value
        replaces the output. Returns a handle whose ``remove()`` unregisters it."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def register_forward_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, args)`` runs before ``forward``; a non-None return value (a tuple,
        or a single value that is wrapped in one) replaces the positional arguments."""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------------ registration
    def __getattr__(self, name):
        # only reached when normal lookup fails: look in the registries
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _forget(self, name, *stores):
        for store in stores:
            if store == "__dict__":
                self.__dict__.pop(name, None)
            else:
                self.__dict__[store].pop(name, None)
        if "_buffers" in stores:
            self._non_persistent_buffers_set.discard(name)

    def __setattr__(self, name, value):
        d = self.__dict__
        for store, kind, cls in (("_parameters", "parameter", Parameter), ("_modules", "child module", Module)):
            registry = d.get(store)
            if isinstance(value, cls):
                if registry is None:
                    raise AttributeError(f"cannot assign {kind}s before Module.__init__() call")
                self._forget(name, *(s for s in ("__dict__", "_parameters", "_buffers", "_modules") if s != store))
                registry[name] = value
                return
            if registry is not None and name in registry:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__name__}' as {kind} '{name}' of "
                                    f"{type(self).__name__} (a {cls.__name__} or None expected)")
                registry[name] = None
                return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if isinstance(value, np.ndarray):
                value = Tensor(value)
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' of "
                                f"{type(self).__name__} (a Tensor, an ndarray or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, ()):
                self._forget(name, store)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def _check_new_name(self, name, kind: str, store: str) -> None:
        """torch's checks before registering ``name`` in ``store``."""
        if store not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got {name!r}')
        if hasattr(self, name) and name not in self.__dict__[store]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param) -> None:
        """Add a Parameter (or None, a declared-but-absent parameter such as ``bias=False``)."""
        self._check_new_name(name, "parameter", "_parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(a tinygrad_tx.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a non-learnable Tensor (an ndarray is wrapped without a copy; None is allowed).

        Persistent buffers are part of ``state_dict()``; non-persistent ones (a
        causal mask that can be rebuilt) are not, as in torch."""
        self._check_new_name(name, "buffer", "_buffers")
        if isinstance(tensor, np.ndarray):
            tensor = Tensor(tensor)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(a Tensor, an ndarray or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module) -> None:
        """Add a child module (or None) under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_new_name(name, "module", "_modules")
        self._modules[name] = module

    register_module = add_module

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """(name, module) for this module and every descendant, pre-order; a module
        reachable twice is yielded once unless ``remove_duplicate=False``."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool):
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        seen = set()
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """(dotted name, Parameter); a tied Parameter appears once, under its first name."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """(dotted name, buffer), persistent or not."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def num_parameters(self, trainable_only: bool = False) -> int:
        """Number of scalar parameters, each tied Parameter counted once."""
        return sum(p._data.size for p in self.parameters() if p.requires_grad or not trainable_only)

    def _get_attr_path(self, target: str):
        """Walk a dotted path ("blocks.0.attn"): the module holding the last name, and that name."""
        if not isinstance(target, str):
            raise TypeError(f"expected a dotted name such as 'blocks.0.attn', got {target!r}")
        *path, last = target.split(".")
        mod = self
        for item in path:
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod, last

    def _get_leaf(self, target: str):
        """The attribute at the dotted path ``target`` and its last name (AttributeError if absent)."""
        mod, name = self._get_attr_path(target)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        return mod, name, getattr(mod, name)

    def get_submodule(self, target: str = "") -> "Module":
        """The sub-module at the dotted path ``target`` ("" is this module), as torch's."""
        if target == "":
            return self
        _, name, sub = self._get_leaf(target)
        if not isinstance(sub, Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        return sub

    def get_parameter(self, target: str) -> Parameter:
        """The Parameter at the dotted path ``target`` ("0.weight")."""
        _, name, param = self._get_leaf(target)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target`` ("bn.running_mean")."""
        mod, name, buf = self._get_leaf(target)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return buf

    # ------------------------------------------------------------------ modes and gradients
    def train(self, mode: bool = True):
        """Set training mode here and in every descendant (Dropout, BatchNorm depend on it)."""
        if not isinstance(mode, bool):
            raise TrainingModeError(f"train: training mode is expected to be boolean, got mode={mode!r}")
        object.__setattr__(self, "training", mode)
        for child in self.children():  # each child's own train(), which a subclass may override
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        check_bool(requires_grad, "requires_grad_", "requires_grad")
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def compile(self, *args, **kwargs) -> None:
        """torch's ``Module.compile()``: from now on this module's calls are recorded once and
        replayed (``tinygrad_tx.compile``, same arguments); ``self.forward`` becomes the compiled one."""
        from ..compile import compile as _compile
        object.__setattr__(self, "forward", _compile(self.forward, *args, **kwargs))

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (torch's default) or to an array of zeros."""
        _seam.method_called(self, "zero_grad", set_to_none)   # tinygrad_tx.compile records the call
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:  # a fresh zero gradient of the same kind (Tensor or array), dtype and shape
                g = p.grad
                zeros = np.zeros_like(g._data if isinstance(g, Tensor) else g)
                p.grad = Tensor(zeros) if isinstance(g, Tensor) else zeros

    def apply(self, fn):
        """Call ``fn`` on every child (recursively) and then on this module; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ dtype
    def _cast_floating(self, dtype: np.dtype):
        """Convert every floating parameter and buffer to ``dtype`` in place: the Parameter
        and buffer objects are kept (tied weights stay tied, optimizers keep their
        references); only their ``.data`` (and ``.grad``) arrays are replaced."""
        seen = set()
        for m in self.modules():
            for store in (m._parameters, m._buffers):
                for t in store.values():
                    if t is None or id(t) in seen or t._data.dtype.kind != "f":
                        continue
                    seen.add(id(t))
                    old = t._data
                    t._data = old.astype(dtype, copy=False)
                    if not old.flags.writeable:   # a read-only constant stays read-only
                        t._data.flags.writeable = False
                    g = t.grad
                    if isinstance(g, Tensor):
                        t.grad = Tensor(g._data.astype(dtype, copy=False))
                    elif g is not None:
                        t.grad = g.astype(dtype, copy=False)
        return self

    def to(self, *args, **kwargs):
        """``module.to(dtype)``, ``.to(device)``, ``.to(device, dtype)``, ``.to(tensor)`` (its dtype),
        with ``device=``/``dtype=``/``non_blocking=`` keywords, as torch's. Floating parameters
        and buffers are cast in place (integer buffers such as ``num_batches_tracked`` keep
        their dtype); the device is checked (only the CPU exists here). Returns self."""
        device_arg, dtype_arg = _parse_to(args, kwargs)
        _check_device(device_arg, "Module.to: device")
        self._to_memory_format(kwargs.get("memory_format"))
        if dtype_arg is None:
            return self
        return self._cast_floating(_float_dtype(dtype_arg, "Module.to"))

    def _to_memory_format(self, fmt) -> None:
        """``to(memory_format=...)``: every 4-D and 5-D parameter and buffer takes that layout (same
        values, ``layout.py``'s strides), as torch's; a format of another rank raises as torch's."""
        from .. import layout
        if layout.check(fmt, "to") in (None, layout.preserve_format):
            return
        for m in self.modules():
            for t in list(m._parameters.values()) + list(m._buffers.values()):
                if t is not None and t._data.ndim in (4, 5):
                    t._data = layout.laid_out(t._data, fmt)

    def cpu(self):
        """Parameters and buffers are already on the CPU: returns self."""
        return self

    def share_memory(self):
        """``share_memory_()`` on every parameter and buffer (torch's; Hogwild-style training code
        calls it): one process here, so the memory is only marked (``is_shared()``). Returns self."""
        for m in self.modules():
            for t in list(m._parameters.values()) + list(m._buffers.values()):
                if t is not None:
                    t.share_memory_()
        return self

    def to_empty(self, *, device, recurse: bool = True):
        """torch's ``to_empty``: every parameter and buffer (of the submodules too, with
        ``recurse``) gets new uninitialised memory of its shape and dtype on ``device`` (only the
        CPU here) — the step after building a model on the 'meta' device, before initialising it.
        Returns self."""
        _check_device(device, "Module.to_empty: device")
        modules = self.modules() if recurse else [self]
        for m in modules:
            for t in list(m._parameters.values()) + list(m._buffers.values()):
                if t is not None:
                    t._data = np.empty_like(t._data)
                    t._bump()
        return self

    def cuda(self, device=None):
        _check_device("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device,
                      "Module.cuda: device")
        return self  # pragma: no cover - check() raises: only the CPU exists

    def double(self):
        return self._cast_floating(np.dtype(np.float64))

    def float(self):
        return self._cast_floating(np.dtype(np.float32))

    def half(self):
        return self._cast_floating(np.dtype(np.float16))

    # ------------------------------------------------------------------ state dict
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """OrderedDict of dotted name -> array copy (or the live Tensor when ``keep_vars``)."""
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else np.array(p._data, copy=True)
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else np.array(b._data, copy=True)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values from ``state_dict`` into this module's parameters and persistent buffers.

        Shape mismatches always raise; missing and unexpected keys raise when
        ``strict``. Everything is checked before anything is copied, so a raised
        error leaves the module unchanged. Returns ``(missing_keys, unexpected_keys)``.
        ``assign=True`` (torch's): each parameter and buffer takes the state dict's array itself
        (its dtype, its memory) instead of a copy cast into its own; a parameter keeps its
        ``requires_grad`` and stays the same Parameter object (torch wraps the state dict's tensor
        in a new one: an optimizer built before the load sees the new values here, not there).
        """
        if not isinstance(assign, (bool, np.bool_)):
            raise TypeError(f"load_state_dict: assign must be a bool, got {assign!r}")
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"load_state_dict: expected a mapping of name -> array, got {type(state_dict).__name__}")
        targets = self.state_dict(keep_vars=True)
        missing = [k for k in targets if k not in state_dict]
        unexpected = [k for k in state_dict if k not in targets]
        mismatched, arrays = [], []
        for key, target in targets.items():
            if key not in state_dict:
                continue
            arr = _state_value_to_array(state_dict[key], key)
            if arr.shape != target._data.shape:
                mismatched.append((key, arr.shape, target._data.shape))
            else:
                arrays.append((target, arr))
        if mismatched or (strict and (missing or unexpected)):
            lines = []
            if strict and missing:
                lines.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
            if strict and unexpected:
                lines.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            for key, got, want in mismatched:
                lines.append(f"size mismatch for {key}: copying a param with shape {got} from checkpoint, "
                             f"the shape in current model is {want}.")
            message = (f"Error(s) in loading state_dict for {type(self).__name__} (nothing was loaded):\n\t"
                       + "\n\t".join(lines))
            raise StateDictError(message, missing, unexpected, mismatched)
        for target, arr in arrays:
            if assign:
                target._data = arr
            else:
                np.copyto(target._data, arr, casting="unsafe")
            target._bump()
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ repr
    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr (override in layers)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): {_addindent(repr(m), 2)}" for name, m in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _addindent(text: str, spaces: int) -> str:
    """Indent every line but the first (torch's helper for nested reprs)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join((" " * spaces + ln) if ln.strip() else "" for ln in lines[1:])


def functional_call(module: Module, parameters_and_buffers: Mapping, args=(), kwargs=None):
    """Run ``module(*args, **kwargs)`` with some parameters/buffers replaced (``torch.func.functional_call``).

    ``parameters_and_buffers`` maps dotted names (as in ``state_dict``) to
    Tensors (or arrays). Gradients then flow to the Tensors passed in, not to
    the module's own Parameters; the originals are restored afterwards, even
    if forward raises. Replacement is by identity, so passing one name of a
    tied weight replaces it under every name it is tied to (torch's
    ``tie_weights=True``).
    """
    if not isinstance(args, tuple):
        args = (args,)
    current = dict(module.named_parameters(remove_duplicate=False))
    current.update(module.named_buffers(remove_duplicate=False))
    unknown = [k for k in parameters_and_buffers if k not in current]
    if unknown:
        raise ValueError(f"functional_call: {unknown} are not parameters or buffers of {type(module).__name__}; "
                         f"known names: {list(current)}")
    replacement = {}
    for name, value in parameters_and_buffers.items():
        value = value if isinstance(value, Tensor) else Tensor(value)
        old = current[name]
        if value.shape != old.shape:
            raise ValueError(f"functional_call: {name!r} has shape {tuple(old.shape)} in the module but "
                             f"{tuple(value.shape)} was passed")
        if id(old) in replacement and replacement[id(old)] is not value:
            raise ValueError(f"functional_call: {name!r} is tied to another name that was given a different value")
        replacement[id(old)] = value
    swapped = []
    try:
        for m in module.modules():
            for store in (m._parameters, m._buffers):
                for name, t in store.items():
                    if t is not None and id(t) in replacement:
                        swapped.append((store, name, t))
                        store[name] = replacement[id(t)]
        return module(*args, **(kwargs or {}))
    finally:
        for store, name, t in swapped:
            store[name] = t
