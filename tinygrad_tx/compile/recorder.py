"""The recorder of ``tinygrad_tx.compile``: each hook of ``autograd/recording.py`` lands in one
method of :class:`_Recorder`, which writes that step of the call as a line of the program (see the
package docstring), or refuses what a replay could not repeat."""
from __future__ import annotations

import functools
import gc
import re
import sys
import types

import numpy as np

from ..core import anomaly as _anomaly
from ..core import engine as _engine
from ..core import seam as _seam
from ..core.broadcast import reduce_grad_to_input
from ..core.function import Context, _as_array, _NoGradContext
from ..core.grad_mode import _state as _grad_mode
from ..tensor import Tensor, _to_array, default_generator
from .guards import NameReads, _members, _tensor_state
from .program import _SUMS, Ctx, _free_when_dead, _identifier, _index_src, _literal, accumulate_grad, one


class CompileRefused(RuntimeError):
    """What a compiled function cannot replay (raised with ``fullgraph=True``, else a warning)."""


class CompileWarning(RuntimeWarning):
    """The one warning a compiled function gives when it stops recording and runs eagerly: the
    message names the read or the step that a replay could not repeat."""


class _Refuse(Exception):
    pass


def _deterministic_factories() -> set:
    from .. import factories as f
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
        self.live = {}                   # id(tensor) -> (tensor, its _tensor_state when first read)
        self.grad_written = set()        # ids of tensors whose .grad the call itself set or cleared
        self.read_args = []              # (k, bytes): argument tensors whose values were read into Python
        self.dynamic = set()             # ids of arrays whose shape depends on values (x[mask], masked_select)
        self.reduced_ids = set()
        self.leaf_grads = {}             # id(a leaf's .grad Tensor) -> the leaf, in the program
        self.bw = None                   # the open backward pass
        self.opaque = None               # (object, ids of its parameters) right after zero_grad/step
        self.hyper = []                  # (optimizer, hyperparameters at its step)
        self.refused = None
        self.reads = NameReads()         # the Python values read by name, as they were (guards.py)
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

    def param_name(self, t) -> str | None:
        """``t``'s name in a module the call ran (a parameter or buffer, read live each call), or None."""
        for m, _, _ in self.modules.values():
            for n, p in list(m.named_parameters()) + list(m.named_buffers()):
                if p is t:
                    return _identifier(n)
        return None

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
            if name is None and id(tensor) not in self.reads.tensors():
                raise _Refuse(f"a tensor of shape {tuple(array.shape)} made before the call reaches an op "
                              "by a route the replay cannot repeat (an iterator, a container, a method's "
                              "result): pass it as an argument, or keep it in a module or a global name")
            name = name or "tensor"
            name = name if name not in self.taken else self.fresh(name)
            self.taken.add(name)
            state = _tensor_state(tensor)
            if id(tensor) in self.grad_written:    # ``.grad is None`` follows from the call's own steps
                state = state[:5] + (None,) + state[6:]
            self.live[id(tensor)] = (tensor, state)
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
        if id(leaf) in self.made or id(leaf._data) in self.names and id(leaf) not in self.live:
            raise _Refuse("a leaf tensor that requires grad is made inside the function (x.clone()."
                          "requires_grad_(), then backward: the replay would keep the first call's leaf and "
                          "add every call's gradient into it)")
        self.value(leaf._data, leaf)
        return self.const(leaf, "T")

    # ------------------------------------------------------------------ refusing
    def refuse(self, reason: str):
        if self.refused is None:
            self.refused = reason
        _seam.recorder = None      # the call goes on eagerly, unrecorded

    def guarded(method):
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            if _seam.recorder is not self:
                return None
            try:
                return method(self, *args, **kwargs)
            except _Refuse as e:
                self.refuse(str(e))
        return run

    @staticmethod
    def _generator_state():
        g = default_generator()   # its whole state as bytes (the MT19937 words are an array)
        return id(g), g.get_state()._data.tobytes()

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
        _seam.recorder = None
        try:
            out = cls.apply(*args, **kwargs)
        finally:
            if self.refused is None:
                _seam.recorder = self
        if _seam.recorder is not self:
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
        if _sized_by_values(cls, args, kwargs) or any(id(_as_data(a)) in self.dynamic
                                                      for a in list(args) + list(kwargs.values())):
            self.dynamic.add(id(out._data))
        return out

    def rerun(self, fn, *args):
        """A call the replay makes again, at the same place: a dropout mask's draw (from the same
        generator, so the masks come in eager's order), a check of the inputs' values."""
        try:
            self.event()
            srcs = ", ".join(self.arg(a) for a in args)
        except _Refuse as e:
            self.refuse(str(e))
        _seam.recorder = None
        try:
            out = fn(*args)
        finally:
            if self.refused is None:
                _seam.recorder = self
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
        if _seam.recorder is not self:
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
            how = (("const",) if _made_by_factory() else
                   ("grad", "outside a Function") if _on_stack((_engine._accumulate.__code__,)) else   # a leaf's .grad
                   ("other", "outside a Function"))
        self.made[id(t)] = how
        self.made_arrays.setdefault(id(t._data), t)

    @guarded
    def module_called(self, module):
        if id(module) not in self.modules:
            self.modules[id(module)] = (module, module.training, _members(module))
            self.reads.add_module(module)

    @guarded
    def shape_read(self, t):
        if id(t._data) in self.dynamic or self.made.get(id(t), ("",))[0] == "other":   # x[mask]; nonzero()
            raise _Refuse(f"the size of a tensor whose shape depends on its input's values (x[mask], "
                          f"masked_select: {tuple(t._data.shape)} here) is read into Python: a replay would "
                          "keep this call's size")

    @guarded
    def unsupported(self, what):
        raise _Refuse(what)

    @guarded
    def readout(self, t, what, values=True):
        k = self.inputs.get(id(t))
        if values and k is not None and t._data.size <= 64:
            # an argument's value read into Python (``x[:n]``, ``n.item()``): a guard on its values,
            # so that other values record a new program
            self.read_args.append((k, t._data.tobytes()))
            return
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
        self.grad_written.add(id(t))
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
        self.grad_written.update(map(id, params))

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
        if _seam.recorder is not self or self.bw is None:
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
        if _seam.recorder is self and self.bw is not None:
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
            self.grad_written.add(id(leaf))
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
        # The names of the inputs and parameters are freed at their last use too: a parameter's
        # array held to the end of the call would keep the optimizer's step from moving it into
        # its flat buffer (``FlatParameters.movable``), so the step would run parameter by parameter.
        head = ["# inputs and parameters (read each call)"] + self.prologue if self.prologue else []
        body = ["def program(ARGS):"] + ["    " + line for line in _free_when_dead(head + self.lines, ret)]
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


def _as_data(a):
    return a._data if isinstance(a, Tensor) else a


def _sized_by_values(cls, args, kwargs) -> bool:
    """Whether a Function's output shape depends on its inputs' values: a boolean mask selects
    (``x[mask]``, ``masked_select``)."""
    if cls.__name__ not in ("GetItem", "MaskedSelect"):
        return False
    def boolean(a):
        a = _as_data(a)
        return isinstance(a, np.ndarray) and a.dtype == np.bool_ and a.ndim > 0 or \
            isinstance(a, (tuple, list)) and any(map(boolean, a))
    return any(boolean(a) for a in list(args[1:]) + list(kwargs.values()))


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
