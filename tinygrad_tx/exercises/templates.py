"""The learner's file (``exercise start``) and the library's versions (``exercise solution``).

A template is the reference Function of ``solutions.py`` (``SoftmaxSolution``), renamed to the
learner's class (``Softmax``, :attr:`Exercise.class_name`), with its ``backward`` cut out (the
docstring with the derivation goes with it) and replaced by a stub that raises
NotImplementedError under the exercise's hints; the module-level helpers its forward calls are
copied above it. Cutting is done on the source's syntax tree, so the forward the learner gets is
the very forward the tests check.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import textwrap

from . import solutions
from .ladder import Exercise

_HEADER = '''"""Exercise {name}: {title}.

Write the backward of the Function below; its forward is done. As in tinygrad_tx itself
(tinygrad_tx/autograd/function.py: ArrayFunction), forward and backward work on NumPy arrays:

* backward(ctx, g) gets g = dL/d(output), an array of the output's shape, and returns one
  gradient per positional argument of forward (a tuple when there are several), None for an
  argument that is not a tensor (indices, targets). Keyword arguments (dim=, eps=) get none.
* ctx.saved_tensors gives back what forward passed to ctx.save_for_backward; anything else
  forward stored on ctx (ctx.dim, ctx.shape) is there too.
* A gradient may have the broadcast shape of the forward: the engine sums it back to its
  input's shape. It must have the input's dtype.
* Never write into an input, a saved array or g (x *= 2 changes the caller's array).

Check it (hypothesis shapes, random cotangents, float64, finite differences; a diagnosis if wrong):

    tinygrad-tx exercise check {name} {file}
"""
{math}import numpy as np

from tinygrad_tx.autograd import ArrayFunction
'''


def _module_functions() -> dict:
    return {n: f for n, f in vars(solutions).items()
            if inspect.isfunction(f) and f.__module__ == solutions.__name__}


def _names_in(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _class_node(cls):
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    return tree.body[0]


def _method(cls_node, name):
    for item in cls_node.body:
        if isinstance(item, ast.FunctionDef) and item.name == name:
            return item
    raise ValueError(f"{cls_node.name} has no method {name}")


def helpers_of(cls, methods=("forward",)) -> list:
    """The module-level functions of ``solutions`` that ``cls``'s ``methods`` call, directly or
    through one another, in the module's order."""
    funcs = _module_functions()
    node = _class_node(cls)
    todo = set()
    for m in methods:
        todo |= _names_in(_method(node, m)) & set(funcs)
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo |= (_names_in(ast.parse(textwrap.dedent(inspect.getsource(funcs[name])))) & set(funcs)) - seen
    return [n for n in funcs if n in seen]


def _constants_for(source: str) -> str:
    lines = [f"{n} = {getattr(solutions, n)!r}" for n in ("GELU_C", "GELU_A") if n in source]
    return "\n".join(lines) + ("\n\n\n" if lines else "")


def _hint_stub(ex: Exercise) -> str:
    hints = "\n".join(f"        - {h}" for h in ex.hints)
    return (f'    @staticmethod\n    def backward(ctx, g):\n        """Hints:\n{hints}\n        """\n'
            f'        raise NotImplementedError("write the backward of {ex.name}")\n')


def template(ex: Exercise, file: str = "FILE") -> str:
    """The learner's file for ``ex``: forward filled in, backward a stub under the hints."""
    cls = ex.solution
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines(keepends=True)
    back = _method(_class_node(cls), "backward")
    first = min([back.lineno] + [d.lineno for d in back.decorator_list]) - 1
    body = "".join(lines[:first]) + _hint_stub(ex) + "".join(lines[back.end_lineno:])
    body = body.replace(f"class {cls.__name__}(", f"class {ex.class_name}(", 1)   # the learner's name for it
    helpers = "".join(textwrap.dedent(inspect.getsource(getattr(solutions, n))) + "\n\n"
                      for n in helpers_of(cls))
    code = helpers + body
    text = _HEADER.format(name=ex.name, title=ex.title, file=file, math="import math\n\n" if "math." in code else "")
    return text + "\n" + ("\n" + _constants_for(code) if _constants_for(code) else "\n") + code


def reference_source(ex: Exercise) -> str:
    """The exercise's reference solution: its class and every helper it calls."""
    cls = ex.solution
    helpers = helpers_of(cls, ("forward", "backward"))
    parts = [textwrap.dedent(inspect.getsource(getattr(solutions, n))) for n in helpers]
    parts.append(textwrap.dedent(inspect.getsource(cls)))
    code = "\n\n".join(parts)
    return _constants_for(code) + code


def _resolve(spec: str):
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def _closed_form(names):
    """The closed-form rung, from ``tinygrad_tx.functional.closed_form`` if this version has it."""
    try:
        module = importlib.import_module("tinygrad_tx.functional.closed_form")
    except ModuleNotFoundError as e:
        if e.name != "tinygrad_tx.functional.closed_form":
            raise
        return None, None
    for n in names:
        obj = getattr(module, n, None)
        if obj is not None:
            return f"tinygrad_tx.functional.closed_form:{n}", obj
    return None, None


def solution_text(ex: Exercise) -> str:
    """``exercise solution``: the library's rungs that exist, then the plain reference."""
    out = [f"# {ex.name}: {ex.title}"]
    rungs = ex.rungs
    shown = 0
    if "composite" in rungs:
        out += [f"\n# (1) composite of primitives: {rungs['composite']} (autograd differentiates it op by op)\n",
                textwrap.dedent(inspect.getsource(_resolve(rungs["composite"])))]
        shown += 1
    if "closed_form" in rungs:
        where, obj = _closed_form(rungs["closed_form"])
        if obj is not None:
            out += [f"\n# (2) the plain closed-form Function: {where}\n", textwrap.dedent(inspect.getsource(obj))]
            shown += 1
    for key, label in (("fused", "the library's default (fused) Function"), ("module", "the library's module")):
        if key in rungs:
            out += [f"\n# ({3 if key == 'fused' else 1 + shown}) {label}: {rungs[key]}\n",
                    textwrap.dedent(inspect.getsource(_resolve(rungs[key])))]
    out += [f"\n# the exercise's reference solution (tinygrad_tx.exercises.solutions.{ex.solution.__name__}):\n",
            reference_source(ex)]
    return "\n".join(out)
