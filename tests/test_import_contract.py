"""The package's structure, stated as rules and checked on its import graph (grimp builds the graph
from the source: every ``import``, at the top of a file or inside a function, counts).

The layout (``docs/engine.md`` has the reading path):

* **core** -- ``tinygrad_tx/core/``: Tensor, ArrayFunction/Context/apply, run_backward, grad mode,
  the broadcast undo, gradient accumulation, dtypes, device. It imports nothing else from the
  package; the rings plug into it through ``core/seam.py``.
* **rings** -- everything else, importing the core: the primitives (``ops/``, with ``tensor.py``,
  the operators, and ``linalg.py``, torch.linalg's ops), the fused ops and torch's functional
  surface (``functional/``, ``nn/``), torch's autograd surface (``autograd/``), speed
  (``buffers.py``, ``allocator.py``, ``parallel.py``, ``kernels/``), compile (``compile/``), study
  (``viz/``, ``exercises/``, ``testing/``) and the rest of torch's surface.
* **face** -- the command line and training (``cli.py``, ``__main__.py``, ``training/``), which
  may import anything and which nothing imports (the package's ``__init__`` loads ``training``
  lazily, on first use of ``tinygrad_tx.training``).
"""
from __future__ import annotations

import grimp   # a [dev] dependency: the rules must run, never skip
import pytest

PKG = "tinygrad_tx"
FACE = ("tinygrad_tx.cli", "tinygrad_tx.__main__", "tinygrad_tx.training")
STUDY = ("tinygrad_tx.viz", "tinygrad_tx.exercises", "tinygrad_tx.testing")
# The one circle the design has: an operator of tensor.py calls an op of ops/, whose result is a
# Tensor with tensor.py's operators; an op's backward differentiated twice runs on Tensors through
# autograd/dispatch.py, which calls ops; torch.linalg's ops (linalg.py) are ops too.
INHERENT = {"tinygrad_tx.tensor", "tinygrad_tx.ops", "tinygrad_tx.autograd", "tinygrad_tx.linalg"}
@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph(PKG)


def _inside(module: str, parts) -> bool:
    return any(module == p or module.startswith(p + ".") for p in parts)


def _edges(graph):
    for m in sorted(graph.modules):
        for i in sorted(graph.find_modules_directly_imported_by(m)):
            yield m, i


def test_the_core_imports_nothing_else_from_the_package(graph):
    bad = [(m, i) for m, i in _edges(graph)
           if _inside(m, ["tinygrad_tx.core"]) and not _inside(i, ["tinygrad_tx.core"])]
    assert not bad, f"the core imports a ring: {bad}"


def test_no_ring_imports_the_face(graph):
    bad = [(m, i) for m, i in _edges(graph)
           if _inside(i, FACE) and not _inside(m, FACE) and m != PKG]
    assert not bad, f"a ring imports the face: {bad}"


def test_study_imports_no_training(graph):
    bad = [(m, i) for m, i in _edges(graph) if _inside(m, STUDY) and _inside(i, ["tinygrad_tx.training"])]
    assert not bad, f"a study module imports training: {bad}"


# The package root imports every part (to export their names), so a module that imports the root
# depends on all of them and hides circles from the rule below. Only the face, the study tools (which
# look any name up) and autograd/dispatch.py (NumPy's function table mapped onto the library's Tensor
# ops, looked up at call time) may.
ROOT_IMPORTERS = FACE + STUDY + ("tinygrad_tx.autograd.dispatch",)


def test_only_the_face_the_study_tools_and_dispatch_import_the_package_root(graph):
    bad = [m for m, i in _edges(graph) if i == PKG and m != PKG and not _inside(m, ROOT_IMPORTERS)]
    assert not bad, f"these import the whole package (import tinygrad_tx): {bad}"


def _circles(graph) -> list[set]:
    """Strongly connected components (more than one part) of the graph between the package's
    top-level parts (``tinygrad_tx.ops``, ``tinygrad_tx.tensor``, ...), the root left out: it
    imports every part to export their names."""
    def part(m):
        return ".".join(m.split(".")[:2])
    succ: dict[str, set] = {}
    for m, i in _edges(graph):
        a, b = part(m), part(i)
        if a != b and PKG not in (a, b):
            succ.setdefault(a, set()).add(b)
    index, low, stack, on, out = {}, {}, [], set(), []
    for root in sorted(set(succ) | {b for v in succ.values() for b in v}):   # Tarjan, iteratively
        if root in index:
            continue
        work = [(root, iter(sorted(succ.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(succ.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_the_only_import_circle_is_the_inherent_one(graph):
    circles = _circles(graph)
    assert circles == [INHERENT], f"import circles between parts of the package: {circles}"


def test_the_circle_finder_finds_a_circle():
    """The rule above cannot pass vacuously: on a graph with a known circle the finder finds it."""
    g = grimp.ImportGraph()
    for m in ("tinygrad_tx", "tinygrad_tx.a", "tinygrad_tx.b", "tinygrad_tx.c"):
        g.add_module(m)
    g.add_import(importer="tinygrad_tx.a", imported="tinygrad_tx.b")
    g.add_import(importer="tinygrad_tx.b", imported="tinygrad_tx.a")
    g.add_import(importer="tinygrad_tx.b", imported="tinygrad_tx.c")
    assert _circles(g) == [{"tinygrad_tx.a", "tinygrad_tx.b"}]


def test_a_fast_form_imports_its_closed_form_never_the_reverse(graph):
    """closed_form.py (rung 2, the study file) imports the core and nothing of the fast ops, which
    import it: each fused class names its closed form (``twice_differentiable_via``)."""
    imported = graph.find_modules_directly_imported_by("tinygrad_tx.functional.closed_form")
    allowed = ("tinygrad_tx.core", "tinygrad_tx.ops.elementwise")   # GELU's closed form sits beside it
    assert all(_inside(m, allowed) for m in imported), sorted(imported)
    import tinygrad_tx.functional as F
    from tinygrad_tx.functional import closed_form
    for name, (closed, _) in F.CLOSED_FORMS.items():
        assert closed.__name__.endswith("ClosedForm"), name
    fused = [F.SoftmaxFn, F.LogSoftmaxFn, F.CrossEntropy, F.LayerNormFn, F.EmbeddingFn, F.PatchEmbed,
             F.ScaledDotProductAttention]
    for cls in fused:
        via = cls.twice_differentiable_via
        assert via is not None and getattr(closed_form, via.__name__) is via, cls
        assert "tinygrad_tx.functional.closed_form" in graph.find_modules_directly_imported_by(cls.__module__)


def test_the_core_reads_in_one_sitting():
    """The core stays at most 2,500 lines (issue 32's budget): what grows goes to a ring."""
    from pathlib import Path
    core = Path(__file__).resolve().parents[1] / "tinygrad_tx" / "core"
    lines = sum(len(p.read_text().splitlines()) for p in core.glob("*.py"))
    assert lines <= 2500, f"tinygrad_tx/core/ has {lines} lines"
