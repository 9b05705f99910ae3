"""``tinygrad_tx.compile``: run a function once with the engine, then replay what it ran.

The first call of a compiled function (a model's forward, or a whole training step: forward,
``backward()``, ``optimizer.step()``, ``zero_grad()``) runs eagerly while a :class:`_Recorder`
writes down every NumPy-level step the engine takes: each Function's ``forward``, each node's
``backward`` in the engine's order, the reduction of a broadcast gradient, each sum of two
gradients that reach the same value, each leaf's ``.grad`` accumulation, the optimizer's
``step()`` and ``zero_grad()``, and each dropout mask drawn. What it wrote down is a Python
function, one line per step, with the values named after the ops that made them::

    ctx3 = Ctx(True, True); matmul_3 = MatMul.forward(ctx3, relu_2, fc2_weight_t)
    ...
    g_relu_2, g_fc2_weight_t = MatMul.backward(ctx3, g_matmul_3)

Later calls whose guards hold (the arguments' shapes, dtypes and ``requires_grad``, the Python
numbers among them, grad mode, the default dtype, each module's ``training`` flag, each
parameter's shape and dtype) run that function: the same Function code eager runs, in the same
order, on the same arrays -- so the results are bit-identical to eager -- with no Tensor, graph
node, version counter or saved-memory bookkeeping. ``compiled.code`` is its source.

What cannot be replayed is refused while recording, and the call finishes eagerly: a value read
into Python (``.item()``, ``bool(t)``, ``.tolist()``, ``.numpy()``), an in-place edit, random
numbers drawn outside a Function (other than a dropout mask, which is drawn again each call from
the same generator, in the same order), a tensor made from data the recorder cannot trace, hooks,
``create_graph``, a graph reaching nodes made before the call, a result that still carries a
graph, or a computed tensor kept outside the call (an attribute, a list, a cache). A refused function is retried once (a cache filled on the first call); after the second
refusal it stays eager, and a warning names the reason once (``fullgraph=True`` raises instead).

Not seen by the recorder, and so not replayed: Python side effects that keep no tensor (printing,
an LR scheduler's ``step()`` inside the function -- an optimizer whose hyperparameters changed
during the recording is refused, but keep schedulers outside), a Python number read from
elsewhere than the arguments (a global: pass such numbers as arguments), and checks that library
code makes on an array's values without reading them through a Tensor (``GPTLanguageModel``'s
token-id range check runs on the recorded call only).
"""
from __future__ import annotations

import ast
import builtins
import copy
import functools
import gc
import inspect
import re
import sys
import types
import warnings

import numpy as np

from . import dtypes as _dtypes
from .autograd import anomaly as _anomaly
from .autograd import engine as _engine
from .autograd import recording as _recording
from .autograd.broadcast import reduce_grad_to_input
from .autograd.function import Context, _as_array, _NoGradContext
from .autograd.grad_mode import _state as _grad_mode
from .tensor import Tensor, _to_array, default_generator

__all__ = ["compile", "CompiledFunction", "CompileRefused", "Ctx"]


class CompileRefused(RuntimeError):
    """What a compiled function cannot replay (raised with ``fullgraph=True``, else a warning)."""


class _Refuse(Exception):
    pass


class Ctx:
    """A Function's ctx in a replay: what its forward saves, read by its backward; no graph."""

    __slots__ = ("needs_input_grad", "_saved", "__dict__")

    def __init__(self, *needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self._saved = ()

    def save_for_backward(self, *arrays):
        self._saved = arrays

    @property
    def saved_tensors(self):
        return self._saved


def one(result):
    """The one gradient of a one-input Function's backward (which may return it in a tuple)."""
    return result[0] if isinstance(result, tuple) else result


# Where the engine sums a tensor's gradient terms through helpers (``add_term``, and ``dense`` for the
# sum's plain array), the program calls the same ones; where it writes ``total + term``, so does the program.
_SUMS = getattr(_engine, "add_term", None) is not None and getattr(_engine, "dense", None) is not None


def accumulate_grad(leaf, g):
    """``leaf.grad += g`` as the engine does it (``engine._accumulate``)."""
    _engine._accumulate(leaf, g)


def _deterministic_factories() -> set:
    from . import factories as f
    names = ("arange", "zeros", "ones", "full", "eye", "zeros_like", "ones_like", "full_like", "linspace")
    return {getattr(f, n).__code__ for n in names if hasattr(getattr(f, n, None), "__code__")}


_FACTORY_CODES = None


def _made_by_factory(depth: int = 8) -> bool:
    """Whether the tensor being made comes from a deterministic factory (``arange``, ``zeros``,
    ...): the caller frames are searched for one."""
    global _FACTORY_CODES
    if _FACTORY_CODES is None:
        _FACTORY_CODES = _deterministic_factories()
    return _on_stack(_FACTORY_CODES, depth)


def _identifier(text: str) -> str:
    s = re.sub(r"\W+", "_", text).strip("_").lower()
    return s if s and not s[0].isdigit() else "p_" + s


def _literal(x):
    """Python source for a simple constant, or None."""
    if x is None or isinstance(x, (bool, int, str)) and type(x) in (bool, int, str):
        return repr(x)
    if type(x) is float and np.isfinite(x):
        return repr(x)
    return None


class _Recorder:
    """Writes down one call's program (see the module docstring). Each hook of
    ``autograd/recording.py`` lands in one method here."""

    def __init__(self, flat, arg_names):
        self.flat = flat                 # the call's flattened arguments
        self.arg_names = arg_names
        self.inputs = {id(a): k for k, a in enumerate(flat) if isinstance(a, (Tensor, np.ndarray))}
        self.input_arrays = {id(a._data): k for k, a in enumerate(flat) if isinstance(a, Tensor)}
        self.names = {}                  # id(array) -> variable name
        self.keep = []                   # every array and tensor seen, so that no id is reused
        self.taken = set()
        self.ns = {"np": np, "Ctx": Ctx, "NoGrad": _NoGradContext, "accumulate_grad": accumulate_grad,
                   "as_array": _as_array, "one": one, "add_term": getattr(_engine, "add_term", None),
                   "dense": getattr(_engine, "dense", None), "reduce_grad_to_input": reduce_grad_to_input, "to_array": _to_array,
                   "Tensor": Tensor}
        self.consts = {}                 # id(object) -> namespace name
        self.prologue = []
        self.lines = []
        self.section = None
        self.made = {}                   # id(tensor) -> how a tensor made outside a Function came to be
        self.made_arrays = {}            # id(its array) -> that tensor
        self.ctx_of = {}                 # id(Context) -> (ctx name, output name, Function)
        self.modules = {}                # id(module) -> (module, training)
        self.live = {}                   # id(tensor) -> (tensor, shape, dtype, requires_grad)
        self.reduced_ids = set()
        self.leaf_grads = {}             # id(a leaf's .grad Tensor) -> the leaf, in the program
        self.bw = None                   # the open backward pass
        self.opaque = None               # (object, ids of its parameters) right after zero_grad/step
        self.hyper = []                  # (optimizer, hyperparameters at its step)
        self.refused = None
        self.counter = 0
        self.gen = self._generator_state()

    # ------------------------------------------------------------------ naming
    def fresh(self, base: str) -> str:
        self.counter += 1
        name = f"{base}_{self.counter}"
        self.taken.add(name)
        return name

    def const(self, obj, base="K") -> str:
        key = id(obj)
        if key not in self.consts:
            self.keep.append(obj)
            name = f"{base}{len(self.consts)}"
            self.consts[key] = name
            self.ns[name] = obj
        return self.consts[key]

    def fn_name(self, fn) -> str:
        name = fn.__name__
        k = 1
        while name in self.ns and self.ns[name] is not fn:
            k += 1
            name = f"{fn.__name__}_{k}"
        self.ns[name] = fn
        return name

    def emit(self, line: str, section: str):
        if section != self.section:
            self.section = section
            self.lines.append(f"# {section}")
        self.lines.append(line)

    def param_name(self, t) -> str:
        for m, _, _ in self.modules.values():
            for n, p in list(m.named_parameters()) + list(m.named_buffers()):
                if p is t:
                    return _identifier(n)
        return "tensor"

    def value(self, array, tensor=None) -> str:
        """The variable that holds ``array`` in the program (the tensor it came in, if any)."""
        name = self.names.get(id(array))
        if name is not None:
            return name
        if tensor is None and id(array) in self.input_arrays:
            tensor = self.flat[self.input_arrays[id(array)]]
        elif tensor is None and id(array) in self.made_arrays:
            tensor = self.made_arrays[id(array)]
        key = id(tensor) if tensor is not None else id(array)
        if key in self.inputs:
            k = self.inputs[key]
            name = self.arg_names[k]
            self.prologue.append(f"{name} = ARGS[{k}]._data" if tensor is not None else f"{name} = ARGS[{k}]")
        elif tensor is not None and id(tensor) in self.leaf_grads:
            name = self.fresh("grad")           # a leaf's .grad, read where the program reads it
            self.emit(f"{name} = {self.leaf_grads[id(tensor)]}.grad._data", "forward")
        elif tensor is not None and id(tensor) in self.made:
            how = self.made[id(tensor)]
            if how[0] == "const":
                name = self.const(array, "C")
            elif how[0] == "input":
                name = self.fresh(self.arg_names[how[1]] + "_t")
                self.emit(f"{name} = to_array(ARGS[{how[1]}], {self.dtype_src(how[2])})", "inputs")
            else:
                raise _Refuse(f"a tensor of shape {tuple(array.shape)} made inside the function {how[1]} "
                              "feeds an op: its values cannot be traced (make it a Function's output, a "
                              "deterministic factory's, or pass it as an argument)")
        elif tensor is not None:
            if tensor._ctx is not None:
                raise _Refuse("a tensor with a graph made before the call feeds an op (detach it, or compute "
                              "it inside the function)")
            name = self.param_name(tensor)
            name = name if name not in self.taken else self.fresh(name)
            self.taken.add(name)
            self.live[id(tensor)] = (tensor, array.shape, array.dtype, tensor._requires_grad)
            self.consts[id(tensor)] = "T_" + name
            self.ns["T_" + name] = tensor
            self.keep.append(tensor)
            self.prologue.append(f"{name} = T_{name}._data")
        elif array.ndim == 0 or not array.flags.writeable and array.base is None:
            # a number as a 0-d array (x * 2.0); a read-only array that owns its memory (a causal
            # mask). Not a read-only view (np.broadcast_to of values read from a tensor).
            name = self.const(array, "C")
        else:
            raise _Refuse(f"a writeable NumPy array of shape {tuple(array.shape)} computed in Python is "
                          "passed to an op: it cannot be traced (pass it as an argument, or as a Tensor)")
        self.keep.append(array)
        self.names[id(array)] = name
        return name

    def dtype_src(self, dt) -> str:
        if dt is None:
            return "None"
        if isinstance(dt, np.dtype) and _identifier(str(dt)) == str(dt):
            self.ns.setdefault(str(dt), dt)
            if self.ns[str(dt)] == dt:
                return str(dt)
        return self.const(dt, "D")

    def arg(self, a) -> str:
        if isinstance(a, Tensor):
            return self.value(a._data, a)
        if isinstance(a, np.ndarray):
            return self.value(a)
        lit = _literal(a)
        if lit is not None:
            return lit
        if isinstance(a, slice) or isinstance(a, tuple) and any(isinstance(x, slice) for x in a) and all(
                isinstance(x, slice) or x is None or x is Ellipsis or type(x) is int for x in a):
            return f"np.s_[{_index_src(a)}]"     # an index as it is written: np.s_[:, :, 0:16]
        if isinstance(a, (tuple, list)):
            items = [self.arg(x) for x in a]
            body = ", ".join(items) + ("," if len(items) == 1 and isinstance(a, tuple) else "")
            return f"({body})" if isinstance(a, tuple) else f"[{body}]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{self.arg(k)}: {self.arg(v)}" for k, v in a.items()) + "}"
        if isinstance(a, np.generic):
            return self.const(a, "K")
        return self.const(a, "K")

    def leaf_src(self, leaf) -> str:
        if id(leaf) in self.inputs:
            return f"ARGS[{self.inputs[id(leaf)]}]"
        if id(leaf) in self.made:
            raise _Refuse("a leaf tensor that requires grad is made inside the function")
        self.value(leaf._data, leaf)
        return self.const(leaf, "T")

    # ------------------------------------------------------------------ refusing
    def refuse(self, reason: str):
        if self.refused is None:
            self.refused = reason
        _recording.recorder = None      # the call goes on eagerly, unrecorded

    def guarded(method):
        @functools.wraps(method)
        def run(self, *args):
            if _recording.recorder is not self:
                return None
            try:
                return method(self, *args)
            except _Refuse as e:
                self.refuse(str(e))
        return run

    @staticmethod
    def _generator_state():
        g = default_generator()
        return id(g), g.bit_generator.state

    def event(self):
        """Before each recorded step: close an open backward pass, check for stray draws."""
        if self.bw is not None:
            self.close_backward()
        self.opaque = None
        if self._generator_state() != self.gen:
            raise _Refuse("random numbers were drawn outside a Function (a random factory such as randn or "
                          "rand inside the function): a replay would freeze them")
        if _anomaly._state.enabled:
            raise _Refuse("anomaly detection is on")

    # ------------------------------------------------------------------ hooks: the forward
    def apply(self, cls, args, kwargs):
        try:
            if self.bw is not None and _on_stack((_engine.run_backward.__code__,)):
                raise _Refuse("a hook (register_hook) runs tensor code inside the backward pass")
            self.event()
            srcs = [self.arg(a) for a in args]
            kws = [f"{k}={self.arg(v)}" for k, v in kwargs.items()]
        except _Refuse as e:
            self.refuse(str(e))
            return cls.apply(*args, **kwargs)
        _recording.recorder = None
        try:
            out = cls.apply(*args, **kwargs)
        finally:
            if self.refused is None:
                _recording.recorder = self
        if _recording.recorder is not self:
            return out
        self.gen = self._generator_state()      # draws inside a forward are drawn again by the replay
        ctx = out._ctx
        needs = [isinstance(a, Tensor) and a._requires_grad for a in args] if _grad_mode.enabled else []
        name = self.fresh(_identifier(re.sub(r"Fn$", "", cls.__name__) or cls.__name__))
        fn = self.fn_name(cls)
        call_args = ", ".join(srcs + kws)
        if True in needs:
            cname = "ctx" + name.rsplit("_", 1)[1]
            head = f"{cname} = Ctx({', '.join(map(repr, needs))}); "
            if ctx is not None:
                self.ctx_of[id(ctx)] = (cname, name, cls)
                self.keep.append(ctx)
        else:
            cname, head = "NoGrad()", ""
        call = f"{fn}.forward({cname}, {call_args})"
        if out._data.ndim == 0:
            call = f"as_array({call}, {cname})" if head else f"as_array({call})"
        self.emit(f"{head}{name} = {call}", "forward")
        self.keep.append(out)
        self.keep.append(out._data)
        self.names[id(out._data)] = name
        return out

    def rerun(self, fn, *args):
        """A call the replay makes again, at the same place: a dropout mask's draw (from the same
        generator, so the masks come in eager's order), a check of the inputs' values."""
        try:
            self.event()
            srcs = ", ".join(self.arg(a) for a in args)
        except _Refuse as e:
            self.refuse(str(e))
        _recording.recorder = None
        try:
            out = fn(*args)
        finally:
            if self.refused is None:
                _recording.recorder = self
        if self.refused is not None:
            return out
        self.gen = self._generator_state()
        if out is None:
            self.emit(f"{self.fn_name(fn)}({srcs})", "forward")
            return out
        name = self.fresh(fn.__name__)
        self.emit(f"{name} = {self.fn_name(fn)}({srcs})", "forward")
        self.keep.append(out)
        self.names[id(out)] = name
        return out

    def created(self, t, data, dtype):
        if _recording.recorder is not self:
            return
        self.keep.append(t)
        if data is not None:
            if id(data) in self.inputs:
                how = ("input", self.inputs[id(data)], dtype)
            elif isinstance(data, (bool, int, float, list, tuple)) and not _holds_tensor(data):
                how = ("const",)
            elif isinstance(data, np.ndarray) and not data.flags.writeable:
                how = ("const",)
            else:
                how = ("other", f"from a {type(data).__name__} (Tensor(...) of data computed outside the engine)")
        else:
            how = ("const",) if _made_by_factory() else ("other", "outside a Function")
        self.made[id(t)] = how
        self.made_arrays.setdefault(id(t._data), t)

    @guarded
    def module_called(self, module):
        if id(module) not in self.modules:
            self.modules[id(module)] = (module, module.training, _members(module))

    @guarded
    def readout(self, t, what):
        raise _Refuse(f"{what} reads a value into Python (data-dependent code cannot be replayed; return "
                      "the tensor instead)")

    def _inside_recorded_call(self, t) -> bool:
        """Whether an in-place write to ``t`` (or its ``.grad = None``) is the work of a recorded
        call -- the optimizer's step or zero_grad on its own parameters, or the engine's ``.grad``
        accumulation -- found on the Python stack, and so replayed by that call."""
        if self.opaque is not None and id(t) in self.opaque[1]:
            codes = (self.opaque[2],)
        elif self.bw is not None and any(t is leaf._grad for leaf, _ in self.bw["leaves"].values()):
            codes = (_engine._accumulate.__code__,)
        else:
            return False
        return _on_stack(codes)

    @guarded
    def bump(self, t):
        if self._inside_recorded_call(t):
            return
        raise _Refuse(f"an in-place edit of a tensor of shape {tuple(t.shape)}")

    @guarded
    def grad_set(self, t, value):
        if value is None and self._inside_recorded_call(t):
            return
        if value is not None:
            raise _Refuse("a .grad is assigned a tensor")
        self.event()
        self.emit(f"{self.leaf_src(t)}.grad = None", "zero_grad")

    @guarded
    def call(self, obj, method, arg):
        self.event()
        if method == "step":
            if arg is not None:
                raise _Refuse("optimizer.step(closure)")
            self.emit(f"{self.const(obj, 'OPT')}.step()", "update")
            self.hyper.append((obj, _hyperparameters(obj)))
            params = [p for g in obj.param_groups for p in g["params"]]
        else:
            kind = "OPT" if hasattr(obj, "param_groups") else "M"
            self.emit(f"{self.const(obj, kind)}.zero_grad(set_to_none={arg!r})", "zero_grad")
            params = ([p for g in obj.param_groups for p in g["params"]] if kind == "OPT"
                      else list(obj.parameters()))
            if not arg:
                params += [p.grad for p in params if p.grad is not None]
        self.opaque = (obj, {id(p) for p in params}, getattr(type(obj), method).__code__)

    # ------------------------------------------------------------------ hooks: the backward
    @guarded
    def backward(self, roots, grads, create_graph, inputs, accumulate):
        self.event()
        if create_graph:
            raise _Refuse("backward(create_graph=True)")
        if inputs is not None or not accumulate:
            raise _Refuse("backward(inputs=...) or autograd.grad")
        if not isinstance(roots, (list, tuple)):
            roots, grads = [roots], [grads]
        self.bw = {"leaves": {}, "grads": {}}
        for root, g in zip(roots, grads):
            g = g._data if isinstance(g, Tensor) else g
            if id(g) in self.names:
                src = self.names[id(g)]
            elif isinstance(g, np.ndarray) and np.all(g == 1) and id(root._data) in self.names \
                    and g.shape == root._data.shape and g.dtype == root._data.dtype:
                src = f"np.ones_like({self.names[id(root._data)]})"     # backward()'s seed, as _seed makes it
            else:
                raise _Refuse("backward(gradient=...) with a gradient the recorder cannot trace")
            self.keep.append(g)
            node = root if root._ctx is None else root._ctx
            self.arrive(node, src)
        _engine._backward_observers.append(self.node)

    def arrive(self, node, src) -> str:
        """A gradient (source ``src``) reaches ``node``: the first one is named, later ones added
        (``src`` None: only name it; the caller assigns it)."""
        bw = self.bw
        if isinstance(node, Context):
            if id(node) not in self.ctx_of:
                raise _Refuse("the backward pass reaches a graph node not made in this call")
            key, table, base = id(node), bw["grads"], "g_" + self.ctx_of[id(node)][1]
        else:
            key, table, base = id(node), bw["leaves"], None
        if key in table:
            name = table[key][1]
            self.emit(f"{name} = add_term({name}, {src})" if _SUMS else f"{name} = {name} + {src}", "backward")
        else:
            if base is None:
                self.leaf_src(node)
                base = "g_" + self.names[id(node._data)]
            name = base if base not in self.taken else self.fresh(base)
            self.taken.add(name)
            table[key] = (node, name)
            if src is not None:
                self.emit(f"{name} = {src}", "backward")
        return name

    def node(self, ctx, g, reduced):
        if _recording.recorder is not self or self.bw is None:
            return
        try:
            entry = self.ctx_of.get(id(ctx))
            if entry is None:
                raise _Refuse("the backward pass reaches a graph node not made in this call")
            if ctx.hooks or ctx.retained is not None:
                raise _Refuse("a hook (register_hook or retain_grad) on a value computed in the function")
            cname, oname, fn = entry
            gname = self.bw["grads"][id(ctx)][1]
            gname = f"dense({gname})" if _SUMS else gname
            temps, direct = [], []
            for i, r in enumerate(reduced):   # a first gradient that needs no reduction gets its name at once
                node = ctx.input_nodes[i]
                table = self.bw["grads"] if isinstance(node, Context) else self.bw["leaves"]
                if r is None:
                    temps.append("_")
                elif id(node) not in table and id(r) not in self.reduced_ids:
                    temps.append(self.arrive(node, None))
                    direct.append(i)
                else:
                    temps.append(self.fresh("d_" + oname))
            fname = self.fn_name(fn)
            if len(reduced) == 1:
                self.emit(f"{temps[0]} = one({fname}.backward({cname}, {gname}))", "backward")
            else:
                self.emit(f"{', '.join(temps)} = {fname}.backward({cname}, {gname})", "backward")
            for i, r in enumerate(reduced):
                if r is None or i in direct:
                    continue
                node = ctx.input_nodes[i]
                src = temps[i]
                if id(r) in self.reduced_ids:
                    shape, dtype = ((node._data.shape, node._data.dtype) if isinstance(node, Tensor)
                                    else (node.out_shape, node.out_dtype))
                    src = f"reduce_grad_to_input({src}, {shape!r}, {self.dtype_src(dtype)}, {fn.__name__!r})"
                self.arrive(node, src)
        except _Refuse as e:
            self.refuse(str(e))

    def reduced(self, grad):
        if _recording.recorder is self and self.bw is not None:
            self.keep.append(grad)
            self.reduced_ids.add(id(grad))

    def close_backward(self):
        bw, self.bw = self.bw, None
        if self.node in _engine._backward_observers:
            _engine._backward_observers.remove(self.node)
        for leaf, name in bw["leaves"].values():
            if leaf._hooks:
                raise _Refuse("a hook (register_hook) on a leaf")
            name = f"dense({name})" if _SUMS else name
            self.emit(f"accumulate_grad({self.leaf_src(leaf)}, {name})", "backward")
            self.leaf_grads[id(leaf._grad)] = self.leaf_src(leaf)

    # ------------------------------------------------------------------ the end
    def finish(self, result):
        self.event()
        for opt, hyper in self.hyper:
            if _hyperparameters(opt) != hyper:
                raise _Refuse("an optimizer's hyperparameters changed inside the function (an LR "
                              "scheduler's step?): keep that outside the compiled function")
        ret = self.output(result)
        self.check_escapes(result)
        body = ["def program(ARGS):"]
        if self.prologue:
            body.append("    # inputs and parameters (read each call)")
            body += ["    " + line for line in self.prologue]
        body += ["    " + line for line in _free_when_dead(self.lines, ret)]
        body.append(f"    return {ret}")
        return "\n".join(body) + "\n"

    def check_escapes(self, result):
        """Refuse when a tensor computed in the call is kept outside it -- assigned to an
        attribute (``self.state = h``, a module buffer) or put in a list or dict that lives on (a
        closure's, a global, an attribute's): the replay makes new arrays but repeats no such
        assignment."""
        made = [t for t in self.keep if isinstance(t, Tensor) and id(t._data) in self.names
                and id(t) not in self.live and id(t) not in self.inputs and id(t) not in self.consts]
        if not made:
            return
        for r in gc.get_referrers(*made):
            if r is not self.keep and r is not made and _user_storage(r):
                raise _Refuse(f"a tensor computed in the function is kept outside it (in a {type(r).__name__}: "
                              "an attribute, a list, a cache): the replay would not repeat that assignment")

    def output(self, x) -> str:
        if isinstance(x, Tensor):
            if id(x) in self.inputs:
                return f"ARGS[{self.inputs[id(x)]}]"
            if (id(x) not in self.made and id(x._data) not in self.names):
                if x._ctx is not None:
                    raise _Refuse("the result is a tensor with a graph made before the call")
                return self.const(x, "T")
            if x._ctx is not None and not x._ctx._freed and _grad_mode.enabled:
                raise _Refuse("the result carries a graph that a later backward() would need: compile the "
                              "whole training step (forward, backward, step), or call it under no_grad()")
            return f"Tensor._from_op({self.value(x._data, x)}, None)"
        if isinstance(x, tuple) and type(x) is not tuple:
            raise _Refuse(f"a result of type {type(x).__name__}")
        if isinstance(x, (tuple, list)):
            items = [self.output(v) for v in x]
            if isinstance(x, tuple):
                return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
            return "[" + ", ".join(items) + "]"
        if isinstance(x, dict):
            return "{" + ", ".join(f"{self.arg(k)}: {self.output(v)}" for k, v in x.items()) + "}"
        if isinstance(x, float):
            raise _Refuse("a Python float result (computed from a tensor's value?)")
        lit = _literal(x)
        return lit if lit is not None else self.const(x, "K")


def _on_stack(codes, depth: int = 16) -> bool:
    """Whether one of the functions whose code objects are ``codes`` is among the callers."""
    f = sys._getframe(2)
    for _ in range(depth):
        if f is None:
            return False
        if f.f_code in codes:
            return True
        f = f.f_back
    return False


def _index_src(index) -> str:
    if isinstance(index, tuple):
        return ", ".join(_index_src(i) for i in index) + ("," if len(index) == 1 else "")
    if isinstance(index, slice):
        parts = ["" if v is None else repr(v) for v in (index.start, index.stop, index.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else "")
    return "..." if index is Ellipsis else repr(index)


def _free_when_dead(lines, ret) -> list:
    """``lines`` with ``del`` appended where values are used for the last time, so that the replay
    frees activations and gradients as eager does (eager drops a node's saved arrays once its
    backward has run): each array lives until its last use, not until the call returns."""
    uses = []
    last = {}
    for i, line in enumerate(lines):
        names = set()
        if not line.startswith("#"):
            names = {n.id for n in ast.walk(ast.parse(line)) if isinstance(n, ast.Name)}
        uses.append(names)
        for n in names:
            last[n] = i
    keep = {n.id for n in ast.walk(ast.parse(ret)) if isinstance(n, ast.Name)}
    defined = set()
    out = []
    for i, line in enumerate(lines):
        if not line.startswith("#"):
            defined |= {t.id for n in ast.walk(ast.parse(line)) if isinstance(n, (ast.Assign,))
                        for t in ast.walk(n.targets[0]) if isinstance(t, ast.Name)}
        dead = sorted(n for n in uses[i] if last[n] == i and n in defined and n not in keep and n != "_")
        out.append(line + (f"; del {', '.join(dead)}" if dead else ""))
    return out


def _user_storage(r, depth: int = 2) -> bool:
    """Whether ``r`` is where user code keeps values between calls: an object's attribute dict, a
    module's parameters or buffers, a global namespace, or a list/dict held by one of those or by
    a closure cell."""
    if not isinstance(r, (dict, list, set)) or depth == 0:
        return False
    if isinstance(r, dict) and "__builtins__" in r:
        return True
    for o in gc.get_referrers(r):
        if isinstance(o, types.CellType):
            return True
        if isinstance(r, dict) and (getattr(o, "__dict__", None) is r or r is getattr(o, "_buffers", None)
                                    or r is getattr(o, "_parameters", None)):
            return True
        if isinstance(o, (dict, list)) and o is not r and _user_storage(o, depth - 1):
            return True
    return False


def _members(module) -> tuple:
    """Which tensors a module holds (by identity): a parameter or buffer replaced since the
    recording (``model.weight = Parameter(...)``) is a failed guard, not a stale read."""
    return tuple(map(id, module._parameters.values())) + tuple(map(id, module._buffers.values()))


def _holds_tensor(data) -> bool:
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (Tensor, np.ndarray)):
            return True
        if isinstance(x, (list, tuple)):
            stack.extend(x)
    return False


def _hyperparameters(opt) -> list:
    return [{k: v for k, v in g.items() if k not in ("params", "param_names")} for g in opt.param_groups]


# ---------------------------------------------------------------------------- the compiled function

def _flatten(args, kwargs):
    """The call's arguments as a flat list, and a key of what the program depends on."""
    flat, key = [], []
    stack = [("k", tuple(sorted(kwargs.items()))), ("a", args)]
    while stack:
        tag, x = stack.pop()
        if isinstance(x, Tensor):
            flat.append(x)
            key.append(("T", x._data.shape, x._data.dtype, x._requires_grad, x._ctx is None))
        elif isinstance(x, np.ndarray):
            flat.append(x)
            key.append(("N", x.shape, x.dtype))
        elif isinstance(x, (tuple, list)):
            key.append((tag, type(x), len(x)))
            stack.extend(("i", v) for v in reversed(x))
        elif isinstance(x, dict):
            key.append((tag, dict, tuple(x)))
            stack.extend(("i", v) for v in reversed(list(x.values())))
        elif x is None or isinstance(x, (bool, int, float, str)):
            key.append((type(x), x))
        else:
            flat.append(x)
            key.append(("O", id(x)))
    key.append((_grad_mode.enabled, _dtypes.default_float()))
    return flat, tuple(key)


class _Program:
    def __init__(self, code, ns, modules, live):
        self.code = code
        self.namespace = ns           # the names the code reads (Function classes, parameters, constants)
        exec(builtins.compile(code, "<tinygrad_tx.compile>", "exec"), ns)
        self.run = ns["program"]
        self.modules = list(modules.values())
        self.live = list(live.values())

    def guards_hold(self) -> bool:
        for m, training, members in self.modules:
            if m.training != training or _members(m) != members:
                return False
        for t, shape, dtype, requires_grad in self.live:
            d = t._data
            if d.shape != shape or d.dtype != dtype or t._requires_grad != requires_grad:
                return False
        return True


class CompiledFunction:
    """``fn`` recorded on its first call and replayed on later calls with the same guards (see
    the module docstring). ``code`` is the program last recorded, as Python source."""

    def __init__(self, fn, *, fullgraph: bool = False, max_programs: int = 8):
        self.fn = fn
        self.fullgraph = fullgraph
        self.max_programs = max_programs
        self.programs = {}
        self.last = None
        self.refusals = 0
        self.eager_reason = None
        functools.update_wrapper(self, fn, updated=())

    @property
    def code(self) -> str:
        """The Python source of the last recorded program (what the replay runs)."""
        if self.last is None:
            raise RuntimeError("nothing recorded yet: call the compiled function once"
                               + (f" (it runs eagerly: {self.eager_reason})" if self.eager_reason else ""))
        return self.last.code

    def __deepcopy__(self, memo):
        """A copy (``copy.deepcopy(model)`` after ``model.compile()``) records its own programs: the
        recorded ones read the original's parameters."""
        return CompiledFunction(copy.deepcopy(self.fn, memo), fullgraph=self.fullgraph,
                                max_programs=self.max_programs)

    def __getattr__(self, name):   # a compiled module keeps its attributes (torch's OptimizedModule)
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __call__(self, *args, **kwargs):
        if self.eager_reason is not None or _recording.recorder is not None:
            return self.fn(*args, **kwargs)      # eager; or inside another recording, which sees every op
        flat, key = _flatten(args, kwargs)
        if not _anomaly._state.enabled:
            for program in self.programs.get(key, ()):
                if program.guards_hold():
                    self.last = program
                    return program.run(flat)
        if sum(map(len, self.programs.values())) >= self.max_programs:
            self._give_up(f"more than {self.max_programs} different guards (shapes, flags) were met")
            return self.fn(*args, **kwargs)
        return self._record(args, kwargs, flat, key)

    def _record(self, args, kwargs, flat, key):
        recorder = _Recorder(flat, _argument_names(self.fn, len(flat), flat))
        _recording.recorder = recorder
        try:
            result = self.fn(*args, **kwargs)
            if _recording.recorder is recorder:
                try:
                    code = recorder.finish(result)
                except _Refuse as e:
                    recorder.refuse(str(e))
        finally:
            _recording.recorder = None
            if recorder.node in _engine._backward_observers:
                _engine._backward_observers.remove(recorder.node)
        if recorder.refused is not None:
            self.refusals += 1
            if self.refusals >= 2 or self.fullgraph:
                self._give_up(recorder.refused, stacklevel=4)
            return result
        program = _Program(code, recorder.ns, recorder.modules, recorder.live)
        self.programs.setdefault(key, []).append(program)
        self.last = program
        return result

    def _give_up(self, reason, stacklevel=3):
        self.eager_reason = reason
        name = getattr(self.fn, "__qualname__", None) or type(self.fn).__name__
        message = f"tinygrad_tx.compile: {name} runs eagerly: {reason}"
        if self.fullgraph:
            raise CompileRefused(message)
        warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)   # at the caller's line


def _argument_names(fn, n, flat) -> list:
    """Names for the flattened arguments: the parameter names where the call is plain."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for k in range(n):
        base = _identifier(params[k]) if k < len(params) else f"arg{k}"
        names.append(base if base not in names else f"{base}_{k}")
    return names


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend=None, mode=None, options=None,
            disable: bool = False):
    """``torch.compile``'s signature: ``fn`` (a function or a Module) recorded on its first call and
    replayed after (:class:`CompiledFunction`; the module docstring says what is guarded and what
    is refused). ``fullgraph=True`` raises :class:`CompileRefused` instead of falling back to eager;
    ``dynamic``, ``backend``, ``mode`` and ``options`` are accepted and ignored (there is one
    backend: the engine's own NumPy kernels, in eager's order). ``disable=True`` returns ``model``.
    Used as ``@compile`` or ``@compile(...)``."""
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if disable:
        return model
    if not callable(model):
        raise TypeError(f"compile: expected a function or a Module, got {type(model).__name__}")
    return CompiledFunction(model, fullgraph=fullgraph)

