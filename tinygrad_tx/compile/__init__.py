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
parameter's shape and dtype, and the Python values the function reads by name -- below) run that
function: the same Function code eager runs, in the same
order, on the same arrays -- so the results are bit-identical to eager -- with no Tensor, graph
node, version counter or saved-memory bookkeeping. ``compiled.code`` is its source.

What cannot be replayed is refused while recording, and the call finishes eagerly: a value read
into Python (``.item()``, ``bool(t)``, ``.tolist()``, ``.numpy()``), an in-place edit, random
numbers drawn outside a Function (other than a dropout mask, which is drawn again each call from
the same generator, in the same order), a tensor made from data the recorder cannot trace, hooks,
``create_graph``, a graph reaching nodes made before the call, a result that still carries a
graph, or a computed tensor kept outside the call (an attribute, a list, a cache). A refused function is retried once (a cache filled on the first call); after the second
refusal it stays eager, and a warning names the reason once (``fullgraph=True`` raises instead).

A recorded program holds the Python numbers it was computed with, so the ones the function can
read by name are guards too (``guards.py``, :class:`NameReads`; a changed one records a new
program): the globals and closure variables named in its code, and in the code of the Python
functions and user classes' methods it reaches by those names, four calls deep (library code is
not followed); the attributes named in that code of the objects and Python modules so reached
(``cfg.scale``); and, for every module reached by name or called, its whole tree's number, string
and tensor attributes (``self.temperature``, a dropout's ``p``, a norm's ``eps``) and children.
Numbers, strings, None and small flat tuples, lists and dicts of them are compared by value,
anything else by identity (a global tensor is read live each call; bound to another tensor, it
records anew). A value the call itself changes (a counter) is refused: the replay would not
repeat the change. The check costs about 25 us per call on the tutorial GPT step (~445 values,
a 17-25 ms step). Still frozen at the recording, as in any tracing jit: a number reached another
way -- an item of a large or nested container changed in place (``cfg["opt"]["lr"]``), the result
of a library object's method (``scheduler.get_last_lr()``), an attribute named by a computed
string (``getattr(obj, name)``): pass such values as arguments (a number as a tensor, if it
changes at every call). A tensor made before the call is read live only when it is a parameter or
buffer of a module the call ran, or read by a guarded name; one reached otherwise (``next(batches)``,
an item of a list) makes the call run eagerly.

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

from ..autograd import anomaly as _anomaly
from ..autograd import engine as _engine
from ..autograd import recording as _recording
from .guards import Unreplayable, _flatten, _members, _tensor_state
from .program import Ctx, _identifier
from .recorder import CompileRefused, CompileWarning, _Recorder, _Refuse

__all__ = ["compile", "CompiledFunction", "CompileRefused", "CompileWarning", "Ctx"]


class _Program:
    def __init__(self, code, ns, modules, live, reads, read_args=(), pinned=()):
        self.code = code
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
        _recording.recorder = recorder if recorder.refused is None else None
        try:
            result = self.fn(*args, **kwargs)
            if _recording.recorder is recorder:
                try:
                    code = recorder.finish(result)
                    changed = recorder.reads.changed()
                    if changed is not None:
                        raise _Refuse(f"{changed} changed during the call: a replay would not repeat that change "
                                      "(keep such updates outside the compiled function)")
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
        program = _Program(code, recorder.ns, recorder.modules, recorder.live, recorder.reads,
                           recorder.read_args, pinned)
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
