"""``exercise check``: run a learner's Function against the library's gradient and diagnose it.

How it works
------------
hypothesis draws cases of the exercise (shapes, values from a seed, contiguous or not, broadcast
or not); each case gets a random cotangent g (never ones: a gradient right only through
``.sum()`` would pass). The true gradients come from the library (its fused op or primitives,
through the engine). The learner's ``backward`` is called directly on the Context its ``apply``
recorded, so what it returns is seen before the engine would reduce or cast it: the number of
gradients, None where a gradient is needed, the shape, the dtype. A case fails on any of those,
on an input changed in place, or on a value off by more than a relative 1e-7. hypothesis then
shrinks the failure to the smallest case it can find, and that case is diagnosed:

* which input's gradient is wrong, its largest absolute error and where, the largest relative error;
* what the mistake is, by testing hypotheses on (yours, true) arrays: right on the same case made
  contiguous or unbroadcast (then the layout or broadcasting is the bug); equal to the gradient
  of ``out.sum()`` (g ignored); a constant multiple c of the truth (c = -1 a sign flip, c = N or
  1/N named by the dimension of size N, 2, √E...); the truth transposed; one of the exercise's
  known wrong formulas (a missing term, the wrong variance correction, assignment instead of
  accumulation...);
* finite differences (``tinygrad_tx.gradcheck``) as a second opinion.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import inspect
import os
import signal
import sys
import threading
import traceback
from pathlib import Path

import numpy as np

from ..core.function import ArrayFunction
from ..core.broadcast import reduce_grad_to_input
from ..gradcheck import GradcheckError, gradcheck
from ..factories import from_numpy
from ..core.tensor import Tensor
from .ladder import LADDER, Case, Exercise, lay_out

RTOL = 1e-7
DEFAULT_EXAMPLES = 30
CASE_TIMEOUT = 10.0     # seconds the learner's forward or backward may take on one case


class LearnerStopped(BaseException):
    """The learner's code stopped the check itself: it ran past the per-case timeout (an endless
    loop?) or called ``sys.exit``/``os._exit``. A BaseException, so neither the learner's own
    ``except Exception`` nor hypothesis (which would shrink it, case after hung case) holds it."""


class _Timeout(BaseException):
    pass


@contextlib.contextmanager
def learner_code(what: str, timeout: float | None = CASE_TIMEOUT):
    """Run the learner's ``what`` ("backward", "forward", "the file") under a time limit (SIGALRM,
    in the main thread of a POSIX process; elsewhere without one), with ``sys.exit`` and
    ``os._exit`` turned into :class:`LearnerStopped`: a solution that exits would otherwise end
    the checker with status 0 and no report."""
    def stop_exit(code=0):
        raise SystemExit(code)
    alarm = bool(timeout) and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if alarm:
        def on_alarm(signum, frame):
            raise _Timeout()
        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    real_exit, os._exit = os._exit, stop_exit
    try:
        yield
    except _Timeout:
        raise LearnerStopped(f"{what} did not return within {timeout:g} s (an endless loop?); the check "
                             f"stopped there (--timeout sets the limit)") from None
    except SystemExit as e:
        raise LearnerStopped(f"{what} called sys.exit({e.code!r}) (or os._exit); a solution must return "
                             f"its result, not end the process") from None
    finally:
        os._exit = real_exit
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- comparisons

def _scale(t):
    return max(1.0, float(np.max(np.abs(t)))) if t.size else 1.0


def close(a, b) -> bool:
    """a ≈ b to a relative 1e-7 of the larger of 1 and max |b| (float64 room for a different but
    correct order of operations)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return False
    return bool(np.all(np.abs(a - b) <= RTOL * _scale(b) + RTOL * np.abs(b)) and
                np.array_equal(np.isnan(a), np.isnan(b)))


def errors(mine, true) -> dict:
    """Largest absolute error, its index and the two values there, and the largest relative error."""
    mine, true = np.asarray(mine, np.float64), np.asarray(true, np.float64)
    diff = np.abs(mine - true)
    diff = np.where(np.isnan(diff), np.inf, diff)
    k = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.size else ()
    rel = diff / np.maximum(np.abs(true), 1e-300)
    big = np.abs(true) > 1e-12 * _scale(true)
    max_rel = float(np.max(rel[big])) if big.any() else float("inf")
    return {"max_abs": float(diff[k]) if diff.size else 0.0, "index": tuple(int(i) for i in k),
            "mine": float(mine[k]) if diff.size else 0.0, "true": float(true[k]) if diff.size else 0.0,
            "max_rel": max_rel}


# --------------------------------------------------------------------------- running one case

@dataclasses.dataclass
class Attempt:
    """What the learner's Function did on one case."""

    fatal: str | None = None                  # the backward could not be compared at all
    fatal_tag: str | None = None
    grads: dict = dataclasses.field(default_factory=dict)     # name -> gradient in the input's shape
    shape_errors: dict = dataclasses.field(default_factory=dict)   # name -> (raw gradient, message)
    dtypes: dict = dataclasses.field(default_factory=dict)    # name -> (returned dtype, input dtype)
    mutated: list = dataclasses.field(default_factory=list)   # names of arrays changed in place
    out: np.ndarray | None = None


def cotangent(case: Case, shape) -> np.ndarray:
    """The random g of ``case`` (its own seed; laid out like the inputs)."""
    g = np.random.default_rng(case.seed + 7919).standard_normal(shape)
    return lay_out(g, case.noncontig)


def _leaf(a: np.ndarray) -> Tensor:
    """A leaf that requires grad over ``a`` itself (its layout kept, in-place changes visible)."""
    return from_numpy(a).requires_grad_()


def run_truth(ex: Exercise, case: Case, g=None):
    """(output, {name: true gradient}) from the library; g=None: only the output."""
    ts = {n: Tensor(a.copy(), requires_grad=True) for n, a in case.arrays.items()}
    out = ex.truth(ts, case)
    if g is None:
        return out._data, None
    out.backward(np.asarray(g, np.float64))
    return out._data, {n: (t.grad._data if t.grad is not None else np.zeros_like(t._data)) for n, t in ts.items()}


def _learner_files(fn: type) -> set:
    """The source files of the learner's Function: where its forward and backward are written."""
    files = set()
    for method in ("forward", "backward"):
        code = getattr(getattr(fn, method, None), "__code__", None)
        if code is not None:
            files.add(os.path.abspath(code.co_filename))
    return files


def _last_line(e: BaseException, fn: type | None = None) -> tuple[str, str]:
    """``(message, source line)`` of an error raised by the learner's code: the message names the
    deepest line of the learner's own file (not NumPy's, where a bad shape usually surfaces) and
    the library function the error came out of."""
    frames = traceback.extract_tb(e.__traceback__)
    mine = _learner_files(fn) if fn is not None else set()
    ours = [k for k, fr in enumerate(frames) if os.path.abspath(fr.filename) in mine]
    if not ours:     # e.g. a helper of another file: the deepest frame outside tinygrad_tx and NumPy
        ours = [k for k, fr in enumerate(frames) if ("tinygrad_tx" not in fr.filename or "exercise_" in
                Path(fr.filename).name) and f"{os.sep}numpy{os.sep}" not in fr.filename]
    if not ours:
        return f"{type(e).__name__}: {e}", ""
    k = ours[-1]
    fr = frames[k]
    inside = ""
    if k + 1 < len(frames):      # the error surfaced in a library the learner called on that line
        lib = frames[k + 1]
        package = "NumPy" if f"{os.sep}numpy{os.sep}" in lib.filename else Path(lib.filename).name
        inside = f", inside {package}'s {lib.name}"
    return (f"{type(e).__name__}: {e} (line {fr.lineno} of {Path(fr.filename).name}: {fr.line}{inside})",
            fr.line or "")


def _batched_transpose_hint(line: str, case: Case) -> str | None:
    """The `.T` mistake, when the failing line uses `.T` and an operand has a batch dimension."""
    import re
    from .ladder import BATCHED_T
    if re.search(r"\.T\b", line) and any(a.ndim >= 3 for a in case.arrays.values()):
        return BATCHED_T
    return None


def run_learner(ex: Exercise, fn: type, case: Case, g) -> Attempt:
    """Apply the learner's Function and call its backward on the recorded Context."""
    at = Attempt()
    arrays = case.copies()
    before = {n: a.copy() for n, a in arrays.items()}
    extra_before = {n: v.copy() for n, v in case.extra.items() if isinstance(v, np.ndarray)}
    ts = {n: _leaf(a) for n, a in arrays.items()}
    try:
        with learner_code(f"forward on {case.describe()}", _timeout):
            out = ex.call(fn, ts, case)
    except Exception as e:   # the learner's forward: any error is reported, not raised
        at.fatal, at.fatal_tag = f"forward raised {_last_line(e, fn)[0]}", "raised"
        return at
    ctx = out._ctx if isinstance(out, Tensor) else None
    if ctx is None or ctx.fn is not fn:
        at.fatal, at.fatal_tag = (f"{fn.__name__}.apply did not record a graph node (is it a subclass of "
                                  "tinygrad_tx.autograd.ArrayFunction, returning one array from forward?)"), "raised"
        return at
    at.out = out._data
    g_in = g.copy(order="K") if g.ndim else g.copy()
    try:
        with learner_code(f"backward on {case.describe()}", _timeout):
            raw = fn.backward(ctx, g_in)
    except NotImplementedError as e:
        at.fatal, at.fatal_tag = f"backward is not written yet (NotImplementedError: {e})", "not_implemented"
        return at
    except Exception as e:
        message, line = _last_line(e, fn)
        at.fatal, at.fatal_tag = f"backward raised {message}", "raised"
        hint = _batched_transpose_hint(line, case)
        if hint:
            at.fatal, at.fatal_tag = f"{at.fatal}\n    diagnosis: {hint}", "batched_transpose"
        return at
    if not isinstance(raw, tuple):
        raw = (raw,)
    nodes = ctx.input_nodes
    if len(raw) != len(nodes):
        at.fatal = (f"backward returned {len(raw)} gradient{'s' * (len(raw) != 1)} for the {len(nodes)} "
                    f"positional arguments of forward (return one per argument, None for those that are not "
                    f"tensors or need no gradient)")
        at.fatal_tag = "count"
        return at
    names = {id(t): n for n, t in ts.items()}
    for i, (node, need, gi) in enumerate(zip(nodes, ctx.needs_input_grad, raw)):
        if not need:
            continue
        name = names.get(id(node), f"input {i}")
        if gi is None:
            at.fatal, at.fatal_tag = f"backward returned None for dL/d{name}, which needs a gradient", "none"
            return at
        gi = np.asarray(gi)
        shape, dtype = node._data.shape, node._data.dtype
        if gi.dtype != dtype:
            at.dtypes[name] = (gi.dtype, dtype)
        try:
            at.grads[name] = np.asarray(reduce_grad_to_input(gi, shape, dtype, fn.__name__), np.float64)
        except RuntimeError as e:
            at.shape_errors[name] = (gi, str(e))
    for n, a in arrays.items():
        if not np.array_equal(a, before[n], equal_nan=True):
            at.mutated.append(n)
    for n, v in extra_before.items():
        if not np.array_equal(case.extra[n], v):
            at.mutated.append(n)
    if not np.array_equal(g_in, g, equal_nan=True):
        at.mutated.append("g (the incoming gradient)")
    return at


@dataclasses.dataclass
class Outcome:
    case: Case
    g: np.ndarray
    attempt: Attempt
    truth_out: np.ndarray
    truth: dict
    wrong: list          # names of the inputs whose gradient values are wrong
    forward_ok: bool

    @property
    def ok(self) -> bool:
        a = self.attempt
        return (a.fatal is None and not a.shape_errors and not a.dtypes and not a.mutated and not self.wrong
                and self.forward_ok)


def evaluate(ex: Exercise, fn: type, case: Case) -> Outcome:
    _progress.cases += 1
    out, _ = run_truth(ex, case)
    g = cotangent(case, out.shape)
    _, truth = run_truth(ex, case, g)
    with np.errstate(all="ignore"):
        at = run_learner(ex, fn, case, g)
    wrong = [n for n, t in truth.items() if n in at.grads and not close(at.grads[n], t)]
    forward_ok = at.out is None or close(at.out, out)
    return Outcome(case, g, at, out, truth, wrong, forward_ok)


# --------------------------------------------------------------------------- diagnosis

def _sizes(ex: Exercise, case: Case, out_shape) -> list:
    """(N, description) for every size a forgotten or extra 1/N could come from."""
    named = []
    for n, a in case.arrays.items():
        for d, s in enumerate(a.shape):
            named.append((s, f"the size of dim {d} of {n}"))
        if a.ndim > 1:
            named.append((a.size, f"the number of elements of {n}"))
    for n, v in case.extra.items():
        if isinstance(v, np.ndarray) and v.size > 1:
            named.append((v.size, f"the number of entries of {n}"))
    for d, s in enumerate(out_shape):
        named.append((s, f"the size of dim {d} of the output"))
    return [(float(s), w) for s, w in named if s > 1]


def _factor(mine, true):
    """c when mine ≈ c·true for one constant c (None otherwise)."""
    big = np.abs(true) > 1e-6 * _scale(true)
    if not big.any():
        return None
    k = np.argmax(np.abs(true))
    c = float(mine.flat[k] / true.flat[k])
    if close(mine, c * true):
        return c
    return None


def _factor_sentence(c, value, what):
    sign = "the sign is flipped and " if c < 0 else ""
    size = "large: a forgotten" if abs(c) > 1 else "small: an extra"
    return f"a constant factor: {sign}yours is {c:.6g} × the true gradient, {value:g} times too {size} 1/{value:g}? ({what})"


def _matches(c, value) -> bool:
    m = abs(c)
    return abs(m - value) <= 1e-6 * value or abs(m * value - 1) <= 1e-6


def _describe_factor(cs, ex, outcomes):
    """(tag, sentence) for gradients that are c × the true ones (one c per outcome in ``cs``). A
    size N explains them when it matches in every outcome (a shrunk case has many sizes of 2)."""
    c, oc = cs[0], outcomes[0]
    if abs(c) < 1e-12:
        return "zero", "your gradient is all zeros (did the backward return np.zeros_like, or multiply by 0?)"
    if all(abs(k + 1) < 1e-6 for k in cs):
        return "sign_flip", "a sign flip: your gradient is exactly -1 × the true one"
    named = [ex.factors(o.case) if ex.factors else {} for o in outcomes]
    for value, what in named[0].items():
        if all(any(_matches(k, v) and w == what for v, w in n.items()) for k, n in zip(cs, named)):
            return "constant_factor", _factor_sentence(c, value, what)
    sizes = [_sizes(ex, o.case, o.truth_out.shape) for o in outcomes]
    same = all(abs(k - c) <= 1e-6 * abs(c) for k in cs)
    two = same and _matches(c, 2.0)
    candidates = [(v, w) for v, w in sizes[0]
                  if all(any(_matches(k, v2) and w2 == w for v2, w2 in s) for k, s in zip(cs, sizes))]
    if candidates:
        value, what = candidates[0]
        return "constant_factor", _factor_sentence(c, value, f"N = {value:g}, {what}" +
                                                   ("; or a stray factor of 2" if two else ""))
    if two:
        return "constant_factor", _factor_sentence(c, 2.0, "a stray or missing factor of 2: d(x²)/dx = 2x?")
    return "constant_factor", f"a constant factor: yours is {c:.6g} × the true gradient everywhere"


def _swapped(a):
    return np.swapaxes(a, -1, -2) if a.ndim >= 2 else a


def _retest(ex, fn, case) -> bool:
    return evaluate(ex, fn, case).ok


def unbroadcast(ex: Exercise, case: Case) -> Case:
    """The same values with every input broadcast to the common shape (a copy each)."""
    if ex.name == "matmul":
        from .ladder import _unbroadcast_matmul
        return _unbroadcast_matmul(case)
    shape = case.broadcast_shape
    return case.replace(arrays={n: lay_out(np.broadcast_to(a, shape).copy(), case.noncontig)
                                for n, a in case.arrays.items()}, broadcast_shape=None)


def _ignores_g(ex, oc, name):
    _, truth_ones = run_truth(ex, oc.case, np.ones_like(oc.g))
    return close(oc.attempt.grads[name], truth_ones[name]) and not close(oc.truth[name], truth_ones[name])


def _known_mistake(ex, oc, name, label, mine=None):
    """Whether dL/d``name`` (``mine``: the learner's, by default) is one of the exercise's wrong
    formulas labelled ``label`` (several share a label: a sum over each wrong axis)."""
    mine = oc.attempt.grads[name] if mine is None else mine
    for target, text, wrong in (ex.mistakes(oc.case, oc.g, oc.truth) if ex.mistakes else []):
        if target == name and text == label:
            wrong = np.asarray(wrong, np.float64)
            if close(mine, np.broadcast_to(wrong, mine.shape) if wrong.size == 1 else wrong):
                return True
    return False


def _mistake_tag(label: str) -> str:
    from .ladder import BATCHED_T, WRONG_AXIS
    if label == BATCHED_T:
        return "batched_transpose"
    if WRONG_AXIS in label:
        return "wrong_axis"
    return "missing_term" if label.startswith("missing") else "known_mistake"


def _transposed(oc, name):
    mine = oc.attempt.grads[name]
    return mine.ndim >= 2 and mine.shape[-1] == mine.shape[-2] and close(mine, _swapped(oc.truth[name]))


def classify(ex: Exercise, fn: type, outcomes: list, name: str) -> tuple[str, str]:
    """(tag, sentence) naming the mistake in dL/d``name``. ``outcomes[0]`` is the smallest failing
    case; the others (larger failing cases hypothesis met first) must agree with a hypothesis
    on the values too: a shrunk case can be degenerate (LayerNorm over D = 2 has one direction,
    where every wrong formula is a multiple of the true gradient)."""
    oc = outcomes[0]
    case = oc.case
    if case.noncontig and _retest(ex, fn, case.contiguous()):
        return "noncontiguous", ("right only for contiguous inputs: the same values in C order pass, so the "
                                 "backward depends on the memory layout (np.ravel(order='K'), .data, frombuffer, "
                                 "reshape of a transposed view?); index by shape, never by memory order")
    if case.broadcast_shape is not None and _retest(ex, fn, unbroadcast(ex, case)):
        shapes = ", ".join(f"{n} {tuple(a.shape)}" for n, a in case.arrays.items())
        return "broadcast", (f"right only for unbroadcast shapes: the same values as same-shape inputs pass, "
                             f"but {shapes} broadcast to {tuple(case.broadcast_shape)} fail. Return gradients in "
                             f"the broadcast shape and let the engine sum them back (or sum, do not average, over "
                             f"the broadcast axes)")
    every = [o for o in outcomes if name in o.wrong]
    if all(_ignores_g(ex, o, name) for o in every):
        return "ignores_g", ("right only through .sum(): your gradient equals that of out.sum(), i.e. it ignores "
                             "the incoming gradient g (a test with g = ones would pass); multiply by g")
    labels = dict.fromkeys(label for target, label, _ in (ex.mistakes(case, oc.g, oc.truth) if ex.mistakes else [])
                           if target == name)
    for label in labels:
        if all(_known_mistake(ex, o, name, label) for o in every):
            return _mistake_tag(label), label
    factors = [_factor(o.attempt.grads[name], o.truth[name]) for o in every]
    if all(c is not None for c in factors):
        return _describe_factor(factors, ex, every)
    square = [o for o in every if o.attempt.grads[name].ndim >= 2
              and o.attempt.grads[name].shape[-1] == o.attempt.grads[name].shape[-2]]
    if square and all(_transposed(o, name) for o in square):
        return "transpose", "a transpose: yours equals the true gradient with its last two axes swapped"
    return "unrecognised", "not a mistake I recognise: compare your formula with the hints, term by term"


def _finite_differences(ex: Exercise, fn: type, case: Case) -> tuple[bool | None, str]:
    names = list(case.arrays)

    def f(*ts):
        return ex.call(fn, dict(zip(names, ts)), case)

    try:
        with np.errstate(all="ignore"):
            gradcheck(f, [np.ascontiguousarray(case.arrays[n]) for n in names])
        return True, "finite differences (tinygrad_tx.gradcheck) agree with your backward"
    except GradcheckError as e:
        return False, "finite differences (tinygrad_tx.gradcheck) disagree too: " + " ".join(str(e).split())
    except Exception as e:
        return None, f"finite differences could not run: {type(e).__name__}: {' '.join(str(e).split())}"


def _fmt_index(k):
    return "[" + ", ".join(map(str, k)) + "]"


@dataclasses.dataclass
class Report:
    exercise: str
    passed: bool
    text: str
    tags: dict            # input name (or "*") -> tag of the recognised mistake
    case: Case | None = None
    examples: int = 0


def diagnose(ex: Exercise, fn: type, oc: Outcome, others=(), shrunk: bool = True) -> Report:
    """The report of the smallest failing case ``oc`` (``shrunk=False``: of the first case drawn);
    ``others`` are larger failing cases, a second check of each recognised mistake."""
    case, at = oc.case, oc.attempt
    lines = [f"{ex.name}: FAILED.",
             f"  {'smallest failing case (hypothesis shrank it)' if shrunk else 'first case'}: {case.describe()}"]
    tags = {}
    if at.fatal:
        lines.append(f"  {at.fatal}")
        return Report(ex.name, False, "\n".join(lines), {"*": at.fatal_tag}, case)
    if not oc.forward_ok:
        lines.append("  the forward's output differs from the library's: the template's forward was changed")
        tags["*"] = "forward"
    for n in at.mutated:
        lines.append(f"  {n} was changed in place by your Function: never write into an input, a saved array or "
                     f"g (x *= 2 writes into the caller's array; use x = x * 2)")
        tags[n] = "mutated"
    for n, (mine, want) in at.dtypes.items():
        lines.append(f"  dL/d{n} has dtype {mine} for a {want} input: the gradient must have its input's dtype "
                     f"(a float32 step loses 9 digits; look for astype or float32 constants)")
        tags.setdefault(n, "dtype")
    for n, (raw, message) in at.shape_errors.items():
        true = oc.truth[n]
        from .ladder import BATCHED_T
        if raw.ndim >= 2 and raw.shape == _swapped(true).shape and close(raw, _swapped(true)):
            lines.append(f"  dL/d{n}: a transpose: you returned shape {tuple(raw.shape)}, the true gradient transposed "
                         f"(the input's shape is {tuple(true.shape)})")
            tags[n] = "transpose"
        elif _known_mistake(ex, oc, n, BATCHED_T, mine=np.asarray(raw, np.float64)):
            lines.append(f"  dL/d{n}: wrong shape {tuple(raw.shape)} for an input of shape {tuple(true.shape)}: {BATCHED_T}")
            tags[n] = "batched_transpose"
        else:
            lines.append(f"  dL/d{n}: wrong shape: {message}")
            tags[n] = "shape"
    for n in oc.truth:
        if n not in oc.wrong:
            if n in at.grads and n not in tags:
                lines.append(f"  dL/d{n} {tuple(oc.truth[n].shape)}: correct")
            continue
        e = errors(at.grads[n], oc.truth[n])
        rel = (f"largest relative error {e['max_rel']:.3g}" if np.isfinite(e["max_rel"])
               else "the true gradient is 0 here")
        lines.append(f"  dL/d{n} {tuple(oc.truth[n].shape)}: WRONG. largest error {e['max_abs']:.3g} at "
                     f"{_fmt_index(e['index'])} (yours {e['mine']:.6g}, true {e['true']:.6g}); {rel}")
        for o in others:
            if n in o.wrong:
                e2 = errors(o.attempt.grads[n], o.truth[n])
                lines.append(f"    also wrong on a larger case ({o.case.describe()}): largest error "
                             f"{e2['max_abs']:.3g} at {_fmt_index(e2['index'])}")
        tag, sentence = classify(ex, fn, [oc, *others], n)
        lines.append(f"    diagnosis: {sentence}")
        tags[n] = tag
    if ex.finite_differences and at.fatal is None and not at.shape_errors:
        agree, text = _finite_differences(ex, fn, case)
        if agree and case.noncontig:
            text += " on contiguous copies of these inputs (gradcheck does not keep a layout)"
        elif agree and oc.wrong:
            text += " (yet the library's gradient differs: check the forward)"
        elif agree:      # every value right: the failure is the write, dtype or forward said above
            text += " (your gradients' values are right: what fails is said above)"
        lines.append(f"  second opinion: {text}")
    elif not ex.finite_differences:
        lines.append("  second opinion: none (finite differences are meaningless at the kinks of this function)")
    return Report(ex.name, False, "\n".join(lines), tags, case)


# --------------------------------------------------------------------------- the whole check

class _Failed(Exception):
    pass


def _size(oc) -> int:
    return sum(a.size for a in oc.case.arrays.values())


def _more_failures(ex, fn, cases, seed, n=12) -> list:
    """Failing outcomes of up to ``n`` freshly generated cases (no shrinking): a larger failing
    case to confirm a diagnosis the smallest one cannot tell apart (a factor 2 or N = 2?)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    found = []

    @settings(max_examples=n, derandomize=seed is None, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @given(cases())
    def gather(case):
        oc = evaluate(ex, fn, case)
        if not oc.ok:
            found.append(oc)

    gather()
    return found


_timeout = CASE_TIMEOUT     # the limit of the check running now (check(timeout=...))
PROGRESS_AFTER = 2.0        # seconds before a check starts saying what it does (stderr) ...
PROGRESS_EVERY = 2.0        # ... and how often after that


class _Progress:
    """What the check is doing, printed to stderr by a background thread once it has run
    PROGRESS_AFTER seconds: cases run, failing ones, and the phase (drawing cases, shrinking the
    failing case to the smallest, diagnosing it). Silent for a quick check."""

    def __init__(self, name: str, enabled: bool, stream=None):
        import time
        self.name, self.enabled, self.stream = name, enabled, stream or sys.stderr
        self.cases = self.failing = 0
        self.phase = "drawing cases"
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="exercise-check-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def line(self) -> str:
        import time
        failing = f", {self.failing} failing" if self.failing else ""
        return (f"exercise check {self.name}: {self.cases} case{'s' * (self.cases != 1)} run{failing}; "
                f"{self.phase} ({time.monotonic() - self.start:.0f} s)")

    def _run(self):
        if self._stop.wait(PROGRESS_AFTER):
            return
        while not self._stop.is_set():
            print(self.line(), file=self.stream, flush=True)
            self._stop.wait(PROGRESS_EVERY)


_progress = _Progress("", False)    # the check running now


def check(ex: Exercise | str, fn: type, *, max_examples: int = DEFAULT_EXAMPLES, seed: int | None = None,
          timeout: float | None = CASE_TIMEOUT, progress: bool = False) -> Report:
    """Check the learner's Function ``fn`` on exercise ``ex``; a :class:`Report` with the diagnosis.
    ``seed=None`` draws the same cases every run (derandomized); an int draws another fixed set.
    ``timeout``: seconds the learner's forward or backward may take on one case (None: no limit);
    past it, or when the learner's code calls ``sys.exit``/``os._exit``, the check stops with a
    failed report saying so. ``progress``: a check running longer than ``PROGRESS_AFTER`` seconds
    prints what it is doing to stderr every ``PROGRESS_EVERY`` seconds (the CLI turns it on)."""
    global _timeout, _progress
    previous, _timeout = _timeout, timeout
    name = (LADDER[ex] if isinstance(ex, str) else ex).name
    before, _progress = _progress, _Progress(name, progress)
    try:
        with _progress:
            return _check(ex, fn, max_examples=max_examples, seed=seed)
    except LearnerStopped as e:
        return Report(name, False, f"{name}: FAILED.\n  your {e}", {"*": "stopped"}, None, 0)
    finally:
        _timeout, _progress = previous, before


def _check(ex, fn, *, max_examples, seed) -> Report:
    try:
        import hypothesis
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis import strategies as st
    except ModuleNotFoundError:  # pragma: no cover - hypothesis is a [dev] dependency
        raise ModuleNotFoundError("'tinygrad-tx exercise check' needs hypothesis: pip install hypothesis") from None
    ex = LADDER[ex] if isinstance(ex, str) else ex
    if not (isinstance(fn, type) and issubclass(fn, ArrayFunction)):
        raise TypeError(f"exercise check: expected a subclass of tinygrad_tx.autograd.ArrayFunction, got {fn!r}")
    failures, passed = [], []

    @st.composite
    def cases(draw):
        return ex.draw(draw, st)

    @settings(max_examples=max_examples, derandomize=seed is None, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False, verbosity=Verbosity.quiet)
    @given(cases())
    def prop(case):
        oc = evaluate(ex, fn, case)
        if not oc.ok:
            failures.append(oc)
            _progress.failing = len(failures)
            _progress.phase = "shrinking the failing case to the smallest that still fails"
            raise _Failed()
        passed.append(case)

    if seed is not None:
        prop = hypothesis.seed(seed)(prop)
    first = []    # one case first: an unwritten backward needs no search for a smallest case

    @settings(max_examples=1, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @given(cases())
    def probe(case):
        first.append(evaluate(ex, fn, case))

    probe()
    if first and first[0].attempt.fatal_tag == "not_implemented":
        return diagnose(ex, fn, first[0], shrunk=False)
    try:
        prop()
    except _Failed:
        pass
    except Exception:
        if not failures:
            raise
    if failures:
        _progress.phase = "diagnosing the smallest failing case"
        minimal = failures[-1]                       # hypothesis replays the shrunk case last
        larger = [o for o in failures[:-1] + _more_failures(ex, fn, cases, seed) if _size(o) > _size(minimal)]
        report = diagnose(ex, fn, minimal, [max(larger, key=_size)] if larger else [])
        report.examples = len(passed) + len(failures)
        return report
    _progress.phase = "second opinion: finite differences"
    lines = [f"{ex.name}: PASSED on {len(passed)} hypothesis cases (float64, random cotangents, contiguous and "
             f"not" + (", broadcast shapes" if any(c.broadcast_shape for c in passed) else "") + ")."]
    if ex.finite_differences and passed:
        biggest = max(passed, key=lambda c: sum(a.size for a in c.arrays.values()))
        lines.append(f"  second opinion on the largest case ({biggest.describe()}): "
                     f"{_finite_differences(ex, fn, biggest)[1]}")
    return Report(ex.name, True, "\n".join(lines), {}, None, len(passed))


# --------------------------------------------------------------------------- loading a learner's file

def load_function(path, ex: Exercise | str, timeout: float | None = CASE_TIMEOUT) -> type:
    """The Function class of the learner's file: the one named as the exercise's class, else the
    only Function subclass the file defines."""
    ex = LADDER[ex] if isinstance(ex, str) else ex
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(21, "Is a directory, not your exercise's .py file", str(path))
    if not path.is_file():
        raise FileNotFoundError(2, "No such file", str(path))
    head = path.read_bytes()[:1 << 16]
    declared = b"coding" in b"\n".join(head.splitlines()[:2])     # a PEP 263 encoding line: Python decodes
    try:
        if b"\0" in head:
            raise UnicodeDecodeError("utf-8", head, head.index(b"\0"), head.index(b"\0") + 1, "a NUL byte")
        if not declared:
            head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.end < len(head) - 3:      # (a multi-byte character cut by the 64 KiB window is fine)
            raise ValueError(f"{path}: not a Python text file (byte {e.start} is {head[e.start:e.end]!r}: "
                             f"binary, or not UTF-8)") from None
    name = f"_tinygrad_tx_exercise_{ex.name}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        with learner_code("importing the file", timeout):
            spec.loader.exec_module(module)
    except LearnerStopped as e:
        raise ValueError(f"{path}: {e}") from None
    except SyntaxError as e:
        where = f" at line {e.lineno}" if e.lineno else ""
        raise ValueError(f"{path}: syntax error{where}: {e.msg}") from None
    except Exception as e:   # the learner's module-level code
        raise ValueError(f"{path}: importing it raised {type(e).__name__}: {e}") from None
    finally:
        sys.modules.pop(name, None)
    want = ex.class_name
    found = getattr(module, want, None)
    if isinstance(found, type) and issubclass(found, ArrayFunction):
        return found
    own = [v for v in vars(module).values() if inspect.isclass(v) and issubclass(v, ArrayFunction)
           and v.__module__ == name]
    if len(own) == 1:
        return own[0]
    raise ValueError(f"{path}: expected a Function subclass named {want} (found "
                     f"{', '.join(c.__name__ for c in own) or 'none'})")
