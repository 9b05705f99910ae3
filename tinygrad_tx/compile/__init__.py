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

Later calls whose guards hold run that function: the same Function code eager runs, in the same
order, on the same arrays -- so the results are bit-identical to eager -- with no Tensor, graph
node, version counter or saved-memory bookkeeping. ``compiled.code`` is its source.

**The correctness contract.** A replay must equal eager. Every value the recorded call read into
Python is therefore either *guarded* (checked before each replay; when it differs, the call is
recorded anew, up to ``max_programs`` programs) or *refused* while recording (the call finishes
eagerly; a refused function is retried once, then stays eager with one :class:`CompileWarning`
naming why; ``fullgraph=True`` raises :class:`CompileRefused` instead). Each row is tested with a
value that changes between calls (``tests/test_compile_guards.py``):

What the call reads                                  -> guarded how / refused
---------------------------------------------------  -----------------------------------------------------
an argument tensor's shape, dtype, strides,          -> guarded: the key (``guards._tensor_state``); the
  requires_grad, graph or not, ``.grad is None``,       strides make ``is_contiguous()``/``stride()``
  hooks                                                 branches replay-safe
a parameter's, buffer's or global tensor's state     -> guarded the same way when the call first reads it
  (the same list)                                       (``live``; ``.grad is None`` unless the call itself
                                                        set or cleared it); parameter identities
                                                        (``_members``)
Python numbers, strings, None among the arguments    -> guarded by value: ``-0.0`` is not ``0.0``, NaN
  (in tuples, lists, dicts); NumPy scalars              matches NaN, ``np.int64(3)`` is not ``3``
another argument object (``cfg`` in ``f(x, cfg)``)   -> by identity, the object kept alive so that Python
                                                        cannot reuse its id for a new one; the attributes
                                                        the code names guarded as below
an argument tensor's values read into Python         -> guarded by value up to 64 elements, else refused
  (``x[:n]``, ``n.item()``, ``int(n)``,
  ``full_like(x, v)``, ``huber_loss(delta=t)``,
  ``dropout(p=t)``, ``allclose``/``equal``)
a computed tensor's values read into Python          -> refused (``Tensor._one_element``, ``__bool__``,
  (``.item()``, ``float``/``int``/``bool``,             ``__repr__``, ``recording.read`` in library code)
  ``tolist``, ``numpy``, ``repr``/``str``,
  ``format``, ``allclose``, ``equal``)
``data_ptr()``                                       -> refused (an address differs at each call)
the size of a tensor whose shape depends on values   -> refused when read into Python (``len(x[mask])``,
  (``x[mask]``, ``masked_select``, ``nonzero``)         ``.numel()``, ``.shape``); ops on it replay (NumPy
                                                        sizes them again)
globals and closure variables the code names, four   -> guarded: numbers and containers of up to 1024
  calls deep (functions; methods, static and class      numbers (nested: ``cfg["opt"]["lr"]``) by value,
  methods, properties of user classes); default         anything else by identity; a value the call
  arguments (``def f(x, acc=[])``)                      itself changes is refused
attributes the code names of objects so reached      -> guarded the same way (instance attributes, and
  (``self.cfg.scale``, ``Model.scale = 2.0``)           class attributes of user classes and their bases)
each module reached or called: ``training``, its     -> guarded (``training`` where called; the rest in
  number/string/container/tensor attributes,            ``NameReads.add_module``)
  children, forward hooks
grad mode, the default dtype                         -> guarded: the key
``manual_seed``/``set_rng_state`` in the call; a     -> refused (a replay would not reset the stream,
  draw from the engine's generator outside a            nor draw again)
  Function (``randn``)
Python's ``random``, NumPy's global or Generator     -> refused (the walk finds the stream by name)
  streams reached by name
a leaf made in the call (``x.clone()                 -> refused (a replay would keep the first call's
  .requires_grad_()``, the FGSM step)                   leaf and add every gradient into it)
hooks on a computed value or a leaf,                 -> refused
  ``retain_grad``, ``create_graph``, ``autograd.grad``
an in-place edit (other than the optimizer's and     -> refused
  the engine's own), a computed tensor kept outside
  the call, a result still carrying a graph
a tensor made from data the recorder cannot trace;   -> refused
  a tensor made before the call reached another way
  (``next(batches)``, an item of a list)

Numbers, strings, None and containers of them are compared by value, anything else by identity (a
global tensor is read live each call; bound to another tensor, it records anew). The check cost
about 25 us per call on the tutorial GPT step (~445 values, a 17-25 ms step) before strides,
``.grad is None`` and hooks joined each tensor's guard (not measured again since).

What no guard covers, as in any tracing jit (documented, not detected): a number reached through a
container larger than 1024 numbers or holding other objects and changed in place, the result of a
library object's method (``scheduler.get_last_lr()``), an attribute named by a computed string
(``getattr(obj, name)``), a NumPy or engine Generator passed as an argument and drawn from in
Python: pass such values as arguments (a number as a tensor, if it changes at every call).
A tensor made before the call is read live only when it is a parameter or buffer of a module the
call ran, or read by a guarded name; one reached otherwise makes the call run eagerly.

Not seen by the recorder, and so not replayed: Python side effects that keep no tensor (printing,
an LR scheduler's ``step()`` inside the function -- an optimizer whose hyperparameters changed
during the recording is refused, but keep schedulers outside: the replayed ``step()`` reads the
hyperparameters live), and checks that library code makes on an array's values without reading
them through a Tensor (``GPTLanguageModel``'s token-id check is recorded, and re-run by the
replay).
"""
from __future__ import annotations

import builtins
import copy
import functools
import inspect
import warnings

from ..core import anomaly as _anomaly
from ..core import engine as _engine
from ..core import seam as _seam
from .guards import Unreplayable, _flatten, _members, _tensor_state
from .program import Ctx, _identifier
from .recorder import CompileRefused, CompileWarning, _Recorder, _Refuse

__all__ = ["compile", "CompiledFunction", "CompileRefused", "CompileWarning", "Ctx"]


class _Program:
    def __init__(self, code, ns, modules, live, reads, read_args=(), pinned=(), kernels=""):
        self.code = code
        self.kernels = kernels        # the C source of its fused chains (compile(fuse=True)), or ""
        self.namespace = ns           # the names the code reads (Function classes, parameters, constants)
        exec(builtins.compile(code, "<tinygrad_tx.compile>", "exec"), ns)
        self.run = ns["program"]
        self.modules = list(modules.values())
        self.live = list(live.values())
        self.reads = reads            # the Python values the function read by name (guards.NameReads)
        self.read_args = read_args    # (k, values): argument tensors whose values were read into Python
        self.pinned = pinned          # the objects its key names by id, kept so that the ids stay theirs

    def guards_hold(self, flat) -> bool:
        for m, training, members in self.modules:
            if m.training != training or _members(m) != members:
                return False
        for t, state in self.live:
            now = _tensor_state(t)
            if now != state and (state[5] is not None or now[:5] + now[6:] != state[:5] + state[6:]):
                return False
        for k, values in self.read_args:      # bytes: -0.0 is not 0.0 here (the key fixed shape and dtype)
            if flat[k]._data.tobytes() != values:
                return False
        return self.reads.changed() is None


class CompiledFunction:
    """``fn`` recorded on its first call and replayed on later calls with the same guards (see
    the module docstring). ``code`` is the program last recorded, as Python source."""

    def __init__(self, fn, *, fullgraph: bool = False, max_programs: int = 8, fuse: bool = False):
        self.fn = fn
        self.fullgraph = fullgraph
        self.fuse = fuse
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

    @property
    def kernels(self) -> str:
        """The C source of the fused chains the last recorded program calls (``fuse=True``; ""
        without ``fuse``, or where nothing was fused or the kernels are off)."""
        self.code                                   # the same error before the first call
        return self.last.kernels

    def __deepcopy__(self, memo):
        """A copy (``copy.deepcopy(model)`` after ``model.compile()``) records its own programs: the
        recorded ones read the original's parameters."""
        return CompiledFunction(copy.deepcopy(self.fn, memo), fullgraph=self.fullgraph,
                                max_programs=self.max_programs, fuse=self.fuse)

    def __getattr__(self, name):   # a compiled module keeps its attributes (torch's OptimizedModule)
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __call__(self, *args, **kwargs):
        if self.eager_reason is not None or _seam.recorder is not None:
            return self.fn(*args, **kwargs)      # eager; or inside another recording, which sees every op
        flat, key, pinned = _flatten(args, kwargs)
        if not _anomaly._state.enabled:
            for program in self.programs.get(key, ()):
                if program.guards_hold(flat):
                    self.last = program
                    return program.run(flat)
        if sum(map(len, self.programs.values())) >= self.max_programs:
            changed = next(filter(None, (p.reads.changed() for p in self.programs.get(key, ()))), None)
            self._give_up(f"more than {self.max_programs} different guards (shapes, flags, Python values read "
                          "by name) were met" + (f"; the last: {changed} changed (a Python number is part of "
                                                 "the program: pass it as a tensor)" if changed else ""))
            return self.fn(*args, **kwargs)
        return self._record(args, kwargs, flat, key, pinned)

    def _record(self, args, kwargs, flat, key, pinned):
        recorder = _Recorder(flat, _argument_names(self.fn, len(flat), flat))
        try:
            recorder.reads.collect([(self.fn, "the function")] + [(a, f"argument {k}") for k, a in enumerate(flat)])
        except Unreplayable as e:
            recorder.refuse(str(e))
        except Exception as e:    # an object that cannot be walked: no replay rather than one missing a guard
            recorder.refuse(f"the Python values it reads by name could not be listed ({type(e).__name__}: {e})")
        _seam.recorder = recorder if recorder.refused is None else None
        try:
            result = self.fn(*args, **kwargs)
            if _seam.recorder is recorder:
                try:
                    code = recorder.finish(result)
                    changed = recorder.reads.changed()
                    if changed is not None:
                        raise _Refuse(f"{changed} changed during the call: a replay would not repeat that change "
                                      "(keep such updates outside the compiled function)")
                except _Refuse as e:
                    recorder.refuse(str(e))
        finally:
            _seam.recorder = None
            if recorder.node in _engine._backward_observers:
                _engine._backward_observers.remove(recorder.node)
        if recorder.refused is not None:
            self.refusals += 1
            if self.refusals >= 2 or self.fullgraph:
                self._give_up(recorder.refused, stacklevel=4)
            return result
        kernels = ""
        if self.fuse:                 # chains of elementwise steps become generated C loops (fuse.py)
            from .fuse import apply
            code, kernels = apply(recorder, code)
        program = _Program(code, recorder.ns, recorder.modules, recorder.live, recorder.reads,
                           recorder.read_args, pinned, kernels)
        self.programs.setdefault(key, []).append(program)
        self.last = program
        return result

    def _give_up(self, reason, stacklevel=3):
        self.eager_reason = reason
        name = getattr(self.fn, "__qualname__", None) or type(self.fn).__name__
        message = f"tinygrad_tx.compile: {name} runs eagerly: {reason}"
        if self.fullgraph:
            raise CompileRefused(message)
        warnings.warn(message, CompileWarning, stacklevel=stacklevel)   # at the caller's line


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
            disable: bool = False, fuse: bool = False):
    """``torch.compile``'s signature: ``fn`` (a function or a Module) recorded on its first call and
    replayed after (:class:`CompiledFunction`; the module docstring says what is guarded and what
    is refused). ``fullgraph=True`` raises :class:`CompileRefused` instead of falling back to eager;
    ``dynamic``, ``backend``, ``mode`` and ``options`` are accepted and ignored (there is one
    backend: the engine's own NumPy kernels, in eager's order). ``disable=True`` returns ``model``.
    ``fuse=True`` (ours, not torch's): chains of elementwise steps of the recorded program, forward
    and backward, run as one generated C loop each (``fuse.py``; ``compiled.kernels`` is their C),
    where the C kernels are on; the results then differ from eager's in the last bits.
    Used as ``@compile`` or ``@compile(...)``."""
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable, fuse=fuse)
    if disable:
        return model
    if not callable(model):
        raise TypeError(f"compile: expected a function or a Module, got {type(model).__name__}")
    return CompiledFunction(model, fullgraph=fullgraph, fuse=fuse)
