"""``tinygrad-tx bench --file my_ops.py``: benchmark your own ops or modules against PyTorch.

The file defines ``BENCH``, a list of entries (dicts), each one op or module::

    BENCH = [
        dict(name="softplus",                        # the row's name (sizes are appended)
             ours=softplus,                          # called with tinygrad_tx Tensors, returns a Tensor
             torch=torch.nn.functional.softplus,     # called with torch tensors
             inputs=lambda rng, size: [rng.standard_normal(size)],   # NumPy arrays
             sizes=[(256, 1024), (1024, 1024)]),     # one row each
        dict(name="mlp", module=lambda size: MLP(size[-1]),   # a PyTorch-style nn.Module, both engines
             inputs=lambda rng, size: [rng.standard_normal(size)], sizes=[(64, 256)]),
    ]

* ``inputs(rng, size)`` returns a list of NumPy arrays (or one array); ``rng`` is a NumPy generator
  seeded identically in every process, so both frameworks get the same numbers. Float arrays are
  rounded to float32 and differentiated; integer and bool arrays (indices, masks) are constants.
* ``ours`` and ``torch``: callables taking the tensors made from those arrays, in order.
* ``module`` (instead of ``ours``/``torch``): a factory ``size -> nn.Module`` written against
  ``torch``; the ``ours`` process runs the same code with ``torch`` answered by tinygrad_tx
  (``tinygrad_tx.torch_shim``), and both draw the same weights; its parameters get gradients too.
* ``sizes``: a list of ints or tuples of ints (JSON values); ``quick_sizes`` (optional) what
  ``--quick`` runs, by default the first size.

Each process loads the file itself: the torch worker as it is, the ours worker with
``import torch`` answered by tinygrad_tx (so it never imports torch; a name the file uses at its
top level must then exist in tinygrad_tx as well — keep torch-only code inside the functions).
"""
from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path

import numpy as np

from .components import REGISTRY, Case, Component

KEYS = {"name", "ours", "torch", "module", "inputs", "sizes", "quick_sizes", "doc", "numpy_path"}


class BenchFileError(ValueError):
    pass


def _load(path: Path, framework: str):
    """The file as a module, run as ``framework`` sees it ("ours": torch → tinygrad_tx). Any error
    of the file's own code is one :class:`BenchFileError` line naming the file and the line."""
    mod_name = f"_bench_file_{framework}_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        if framework == "ours":
            from tinygrad_tx.torch_shim import torch_as_tinygrad_tx
            with torch_as_tinygrad_tx():
                spec.loader.exec_module(module)
        else:
            spec.loader.exec_module(module)
    except SyntaxError as e:
        where = f" at line {e.lineno}" if e.lineno else ""
        raise BenchFileError(f"{path}: syntax error{where}: {e.msg}") from None
    except Exception as e:        # the file's top-level code (an import it lacks, a NameError...)
        lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == str(path)]
        where = f" at line {lines[-1]}" if lines else ""
        seen_by = " (run with torch answered by tinygrad_tx)" if framework == "ours" else ""
        raise BenchFileError(f"{path}: importing it raised {type(e).__name__}{where}{seen_by}: "
                             f"{' '.join(str(e).split())}") from None
    sys.modules[mod_name] = module
    return module


def _tuplify(v):
    return tuple(_tuplify(x) for x in v) if isinstance(v, list) else v


def size_label(size) -> str:
    return "×".join(str(s) for s in size) if isinstance(size, (tuple, list)) else str(size)


def _check_size(where, size):
    ok = isinstance(size, (int, np.integer)) or (
        isinstance(size, (tuple, list)) and all(isinstance(s, (int, np.integer)) for s in size))
    if not ok:
        raise BenchFileError(f"{where}: a size must be an int or a tuple of ints, got {size!r}")
    return [int(s) for s in size] if isinstance(size, (tuple, list)) else int(size)


def entries(module, path) -> list[dict]:
    """The file's ``BENCH`` entries, validated (BenchFileError naming the entry and the key)."""
    bench = getattr(module, "BENCH", None)
    if not isinstance(bench, (list, tuple)) or not bench:
        raise BenchFileError(f"{path}: define BENCH, a non-empty list of dict(name=..., ours=..., torch=..., "
                             "inputs=..., sizes=[...]) entries (see bench/README.md)")
    out, seen = [], set()
    for i, e in enumerate(bench):
        where = f"{path}: BENCH[{i}]"
        if not isinstance(e, dict):
            raise BenchFileError(f"{where} must be a dict, got {type(e).__name__}")
        unknown = set(e) - KEYS
        if unknown:
            raise BenchFileError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(KEYS)}")
        name = e.get("name")
        if not isinstance(name, str) or not name or "," in name:
            raise BenchFileError(f"{where}: name must be a non-empty string without commas, got {name!r}")
        if name in seen:
            raise BenchFileError(f"{where}: name {name!r} is used twice")
        seen.add(name)
        has_module = "module" in e
        if (has_module and ("ours" in e or "torch" in e)) or (not has_module and not ("ours" in e and "torch" in e)):
            raise BenchFileError(f"{where} ({name}): give either ours= and torch= or module=")
        for key in (("module",) if has_module else ("ours", "torch")) + ("inputs",):
            if not callable(e.get(key)):
                raise BenchFileError(f"{where} ({name}): {key} must be callable, got {e.get(key)!r}")
        sizes = e.get("sizes")
        if not isinstance(sizes, (list, tuple)) or not sizes:
            raise BenchFileError(f"{where} ({name}): sizes must be a non-empty list, got {sizes!r}")
        sizes = [_check_size(f"{where} ({name})", s) for s in sizes]
        quick = [_check_size(f"{where} ({name})", s) for s in e.get("quick_sizes", sizes[:1])]
        out.append(dict(e, sizes=sizes, quick_sizes=quick))
    return out


def _case(entry, B, rng, size):
    arrays = entry["inputs"](rng, _tuplify(size))
    arrays = [arrays] if isinstance(arrays, np.ndarray) else list(arrays)
    tensors, leaves = [], []
    for i, a in enumerate(arrays):
        a = np.asarray(a)
        t = B.leaf(a) if a.dtype.kind == "f" else B.const(a)
        tensors.append(t)
        if a.dtype.kind == "f":
            leaves.append((f"input[{i}]", t))
    if "module" in entry:
        m = B.prepare(entry["module"](_tuplify(size)), rng)
        return Case(lambda: m(*tensors), leaves + B.parameters(m))
    fn = entry[B.name]
    return Case(lambda: fn(*tensors), leaves)


def register(path, framework: str) -> list[dict]:
    """Load ``path`` as ``framework`` ("ours", "torch", or "both" for the accuracy process) and add
    one component per entry and size to the registry; returns their descriptions
    ``{"name", "cfg", "kind", "doc", "full", "quick", "numpy_path"}`` (what the parent builds its
    table from)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise BenchFileError(f"bench --file: no such file {str(path)!r}")
    frameworks = ("ours", "torch") if framework == "both" else (framework,)
    loaded = {fw: entries(_load(path, fw), path) for fw in frameworks}
    names = [[e["name"] for e in es] for es in loaded.values()]
    if any(n != names[0] for n in names):
        raise BenchFileError(f"{path}: the ours and torch runs of the file define different entries: {names}")
    described = []
    for i, entry in enumerate(loaded[frameworks[0]]):
        by_fw = {fw: loaded[fw][i] for fw in frameworks}
        for size in entry["sizes"] + [s for s in entry["quick_sizes"] if s not in entry["sizes"]]:
            comp_name = f"{entry['name']} ({size_label(size)})"
            if comp_name in REGISTRY and not getattr(REGISTRY[comp_name], "from_file", False):
                raise BenchFileError(f"{path}: {comp_name!r} is a built-in component's name")

            def build(B, rng, c, by_fw=by_fw):
                return _case(by_fw[B.name], B, rng, c["size"])

            kind = "module" if "module" in entry else "op"
            doc = entry.get("doc") or f"{entry['name']} from {path.name}"
            comp = Component(comp_name, build, {"size": size}, {"size": size}, None, kind, doc,
                             numpy_path=bool(entry.get("numpy_path", False)))
            comp.from_file = True
            REGISTRY[comp_name] = comp
            described.append({"name": comp_name, "cfg": {"size": size}, "kind": kind, "doc": doc,
                              "full": size in entry["sizes"], "quick": size in entry["quick_sizes"],
                              "numpy_path": comp.numpy_path})
    return described


def register_described(described) -> list[str]:
    """In the parent (which imports neither framework): registry entries from the workers'
    descriptions, so the table, targets and accuracy requests treat them as components."""
    for d in described:
        comp = Component(d["name"], None, d["cfg"], d["cfg"], None, d["kind"], d["doc"],
                         numpy_path=d.get("numpy_path", False))
        comp.from_file = True
        REGISTRY[d["name"]] = comp
    return [d["name"] for d in described]
