"""The torch surface that teaching code uses, found by an AST pass, and how much of it tinygrad_tx has.

    python tools/surface/extract.py CORPUS [--out tools/surface/table.md] [--json FILE]

CORPUS holds one folder per project; every ``.py`` file and every code cell of every ``.ipynb``
below it is parsed (IPython ``%magic``/``!shell`` lines blanked first; a cell or file that still
does not parse is skipped and counted). Three stages:

1. ``extract_corpus`` (no imports): import aliases are resolved per file (``import torch.nn as
   nn``, ``from torch import nn``, ``from torch.nn import functional as F``, ``from
   torch.utils.data import DataLoader``, ...), and every use of a name under ``torch`` is recorded
   by its full path (``F.relu`` -> ``torch.nn.functional.relu``), with the keywords passed to it.
   An attribute call or read on anything else (``x.view(...)``, ``loss.backward()``, ``x.shape``)
   is recorded as a candidate method/attribute, except on ``self``/``cls``/``super()`` and on names
   bound by a non-torch import (``np.``, ``plt.``, ...).
2. ``classify_members``: a candidate is kept as a Tensor method/attribute when ``torch.Tensor`` has
   it, else as an ``nn.Module`` or optimizer method when those have it, else dropped as noise.
   torch's ``dir()`` lists come from a *subprocess* (``python -c "import torch; ..."``), so this
   process never imports torch; without torch every candidate is kept, marked unfiltered. The
   rest is noise accepted: a list's ``.append`` is dropped, but a NumPy array's ``.reshape`` or a
   model's ``.to`` counts as Tensor use.
3. ``coverage`` (imports tinygrad_tx only): ``torch.a.b`` -> ``tinygrad_tx.a.b`` by a getattr walk
   (importing submodules on the way, as ``tinygrad-tx run``'s import hook does), members on a
   ``tinygrad_tx.Tensor`` / ``nn.Module`` instance and on ``optim.Optimizer``, keywords by
   ``inspect.signature`` of the object that receives them.

Names are ranked by the number of projects that use them.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass, field

ROOT = "torch"
SKIP_ROOTS = {"self", "cls"}

# ---------------------------------------------------------------- stage 1: the AST pass


@dataclass
class FileUse:
    """What one file uses: torch names (full path -> how), member candidates, keywords."""
    names: set = field(default_factory=set)       # "torch.nn.functional.relu"
    calls: set = field(default_factory=set)       # members called: "view"
    reads: set = field(default_factory=set)       # members read or assigned: "shape"
    keywords: set = field(default_factory=set)    # ("torch.nn.Linear", "bias") / (".sum", "keepdim")


@dataclass
class Corpus:
    uses: dict = field(default_factory=dict)      # (project, relpath) -> FileUse
    py_files: int = 0
    py_skipped: int = 0
    notebooks: int = 0
    cells: int = 0
    cells_skipped: int = 0

    @property
    def projects(self):
        return sorted({p for p, _ in self.uses})


_MAGIC = re.compile(r"^\s*[%!]")


def _blank_magics(src: str) -> str:
    """IPython's ``%time x = f()``, ``%%capture`` and ``!pip install`` lines become empty lines."""
    return "\n".join("" if _MAGIC.match(line) else line for line in src.splitlines())


def _parse(src: str):
    try:
        return ast.parse(src)
    except (SyntaxError, ValueError):
        return None


def notebook_cells(path: str) -> list:
    """The code cells' sources of a notebook (an empty list for a file that is not JSON)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        try:
            nb = json.load(fh)
        except json.JSONDecodeError:
            return []
    cells = nb.get("cells") or [c for ws in nb.get("worksheets", []) for c in ws.get("cells", [])]
    out = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", cell.get("input", ""))
        out.append("".join(src) if isinstance(src, list) else str(src))
    return out


class _Aliases(ast.NodeVisitor):
    """First pass over a file: which local names mean a torch module or name."""

    def __init__(self):
        self.torch = {}            # local name -> full torch path
        self.other = set()         # local names bound by any other import

    def visit_Import(self, node):
        for a in node.names:
            if a.name == ROOT or a.name.startswith(ROOT + "."):
                if a.asname:
                    self.torch[a.asname] = a.name
                else:
                    self.torch[ROOT] = ROOT
            else:
                self.other.add(a.asname or a.name.split(".")[0])

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        is_torch = node.level == 0 and (mod == ROOT or mod.startswith(ROOT + "."))
        for a in node.names:
            if a.name == "*":
                continue
            if is_torch:
                self.torch[a.asname or a.name] = f"{mod}.{a.name}"
            else:
                self.other.add(a.asname or a.name)


def _root(node):
    """The expression an attribute chain / call chain / subscript chain starts from."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


class _Uses(ast.NodeVisitor):
    """Second pass: record torch names, member candidates and keywords."""

    def __init__(self, aliases: _Aliases, use: FileUse):
        self.a = aliases
        self.use = use

    def dotted(self, node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.a.torch:
            return ".".join([self.a.torch[node.id], *reversed(parts)])
        return None

    def _name(self, full):
        if full != ROOT:
            self.use.names.add(full)

    def _skip_member(self, value) -> bool:
        """True for members that are not a torch object's: ``self.fc1(x)`` (the module's own
        attribute), ``super().__init__()``, ``"{}".format()``, and anything rooted at a name a
        non-torch import bound (``np.zeros``, ``os.path.join``, ``np.array(x).reshape``)."""
        if isinstance(value, ast.Name) and value.id in SKIP_ROOTS:
            return True
        root = _root(value)
        if isinstance(root, ast.Name) and (root.id in self.a.other or root.id == "super"):
            return True
        return isinstance(root, ast.Constant)

    def visit_Import(self, node):
        for a in node.names:
            if a.name == ROOT or a.name.startswith(ROOT + "."):
                self._name(a.name)

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if node.level == 0 and (mod == ROOT or mod.startswith(ROOT + ".")):
            self._name(mod)
            for a in node.names:
                if a.name != "*":
                    self._name(f"{mod}.{a.name}")

    def visit_Name(self, node):
        if node.id in self.a.torch and isinstance(node.ctx, ast.Load):
            self._name(self.a.torch[node.id])

    def visit_Attribute(self, node):
        full = self.dotted(node)
        if full is not None:
            self._name(full)
            return
        if not self._skip_member(node.value):
            self.use.reads.add(node.attr)
        self.visit(node.value)

    def visit_Call(self, node):
        func = node.func
        owner = None
        if isinstance(func, (ast.Attribute, ast.Name)):
            owner = self.dotted(func) if isinstance(func, ast.Attribute) else self.a.torch.get(func.id)
        if owner is not None:
            self._name(owner)
        elif isinstance(func, ast.Attribute):
            if not self._skip_member(func.value):
                owner = "." + func.attr
                self.use.calls.add(func.attr)
            self.visit(func.value)
        else:
            self.visit(func)
        if owner is not None:
            for kw in node.keywords:
                if kw.arg is not None:
                    self.use.keywords.add((owner, kw.arg))
        for arg in node.args:
            self.visit(arg)
        for kw in node.keywords:
            self.visit(kw.value)


def extract_sources(trees) -> FileUse:
    """The uses of one file given its parsed trees (one per notebook cell)."""
    aliases = _Aliases()
    for t in trees:
        aliases.visit(t)
    use = FileUse()
    visitor = _Uses(aliases, use)
    for t in trees:
        visitor.visit(t)
    use.reads -= use.calls       # a member that is called counts once, as a method
    return use


def extract_corpus(root: str) -> Corpus:
    """Every project folder under ``root``: its .py files and notebooks' code cells."""
    corpus = Corpus()
    for project in sorted(os.listdir(root)):
        pdir = os.path.join(root, project)
        if not os.path.isdir(pdir):
            continue
        for dirpath, dirnames, filenames in os.walk(pdir):
            dirnames.sort()
            for fn in sorted(filenames):
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, pdir)
                if fn.endswith(".py"):
                    corpus.py_files += 1
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        tree = _parse(fh.read())
                    if tree is None:
                        corpus.py_skipped += 1
                        continue
                    trees = [tree]
                elif fn.endswith(".ipynb"):
                    corpus.notebooks += 1
                    trees = []
                    for src in notebook_cells(path):
                        corpus.cells += 1
                        tree = _parse(_blank_magics(src))
                        if tree is None:
                            corpus.cells_skipped += 1
                        else:
                            trees.append(tree)
                else:
                    continue
                corpus.uses[(project, rel)] = extract_sources(trees)
    return corpus


# ---------------------------------------------------------------- stage 2: members, via torch's dir()

_TORCH_DIRS = r"""
import inspect, json, re, torch
owners = {'Tensor': torch.ones(1, requires_grad=True), 'Module': torch.nn.Module(),
          'Optimizer': torch.optim.Optimizer}
out = {}
for key, obj in owners.items():
    names, words = dir(obj), {}
    for n in names:
        if n.startswith('_'):
            continue
        f = getattr(type(obj) if key != 'Optimizer' else obj, n, None)
        text = getattr(f, '__doc__', None) or ''
        m = re.search(r'See :func:`(torch[.\w]+)`', text)
        if m:
            try:
                g = eval(m.group(1))
                text += getattr(g, '__doc__', None) or ''
            except Exception:
                pass
        try:
            text += ' ' + ' '.join(inspect.signature(f).parameters)
        except (TypeError, ValueError):
            pass
        words[n] = sorted(set(re.findall(r'\w+', text)))
    out[key] = {'names': names, 'words': words}
print(json.dumps(out))
"""


def torch_member_lists(python: str = sys.executable):
    """From a subprocess (this process never imports torch): for a torch Tensor, Module and
    Optimizer, ``dir()`` and, per member, the words of its docstring and signature (a keyword
    passed to a member is kept only when its word is there: ``ax.scatter(c=...)`` is not
    ``Tensor.scatter``). None without torch."""
    r = subprocess.run([python, "-c", _TORCH_DIRS], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    data = json.loads(r.stdout.splitlines()[-1])
    lists = {k: set(v["names"]) for k, v in data.items()}
    lists["words"] = {k: {m: set(w) for m, w in v["words"].items()} for k, v in data.items()}
    return lists


MEMBER_KINDS = (("Tensor", "Tensor method", "Tensor attribute"), ("Module", "Module method", "Module attribute"),
                ("Optimizer", "Optimizer method", "Optimizer attribute"))


def member_kind(name: str, called: bool, lists) -> str | None:
    """``Tensor method`` / ``Module attribute`` / ... for a candidate member, None for noise."""
    if name.startswith("__"):
        return None
    if lists is None:
        return "method (unfiltered)" if called else "attribute (unfiltered)"
    for key, meth, attr in MEMBER_KINDS:
        if name in lists[key]:
            return meth if called else attr
    return None


# ---------------------------------------------------------------- ranking


@dataclass
class Row:
    name: str            # torch.nn.Linear / Tensor.view / torch.nn.Linear(bias=)
    kind: str
    projects: set = field(default_factory=set)
    files: int = 0
    covered: str = ""
    note: str = ""


def rank(corpus: Corpus, lists) -> list:
    rows = {}

    def add(key, kind, project):
        row = rows.setdefault(key, Row(key, kind))
        row.projects.add(project)
        row.files += 1

    dropped = set()
    words = lists.get("words", {}) if lists is not None else {}
    for (project, _), use in corpus.uses.items():
        member_owner = {}
        for called, members in ((True, use.calls), (False, use.reads)):
            for m in members:
                kind = member_kind(m, called, lists)
                if kind is None:
                    dropped.add(m)
                    continue
                owner = kind.split()[0] if lists is not None else "Tensor"
                member_owner["." + m] = owner
                add(f"{owner}.{m}", kind, project)
        for n in use.names:
            add(n, "torch name", project)
        for owner, kw in use.keywords:
            if owner.startswith("."):
                if owner not in member_owner:
                    continue                       # a keyword of a dropped (noise) call
                known = words.get(member_owner[owner], {}).get(owner[1:])
                if known and kw not in known:
                    dropped.add(f"{member_owner[owner]}{owner}({kw}=)")
                    continue                       # not a keyword of torch's member: another library's
                owner = member_owner[owner] + owner
            add(f"{owner}({kw}=)", "keyword", project)
    out = sorted(rows.values(), key=lambda r: (-len(r.projects), -r.files, r.name))
    return out, dropped


# ---------------------------------------------------------------- stage 3: coverage (tinygrad_tx only)

OUT_OF_SCOPE = (
    (r"^torch\.(cuda|mps|xpu|backends\.(cudnn|cuda|mps))\b|\bcuda\b|^Tensor\.(pin_memory|is_pinned)$|pin_memory=|"
     r"GradScaler|autocast|^torch\.amp\b|^torch\.set_float32_matmul_precision$|non_blocking=",
     "CUDA kernels / devices / mixed precision"),
    (r"^torch\.(_dynamo|_inductor|jit|fx|export|onnx)\b",
     "torch.compile internals / TorchScript / export (torch.compile itself is tinygrad_tx.compile)"),
    (r"^torch\.(distributed|multiprocessing)\b|^torch\.nn\.parallel\b|DataParallel|^Tensor\.share_memory_$|"
     r"^Module\.share_memory$",
     "distributed / multiprocessing"),
    (r"^torch\.(quantization|ao)\b|quantize", "quantization"),
    (r"sparse|^Tensor\.(values|indices|coalesce|to_dense)$", "sparse tensors (torch's Tensor.values()/.indices() "
                                                            "are the sparse ones)"),
    (r"complex|^torch\.(fft|polar|view_as_real)\b|^Tensor\.(real|imag|conj|angle)$|^torch\.c(float|double)$",
     "complex numbers"),
)


def out_of_scope(name: str) -> str:
    for pattern, why in OUT_OF_SCOPE:
        if re.search(pattern, name):
            return why
    return ""


def resolve_torch_name(name: str, target: str = "tinygrad_tx"):
    """``torch.a.b.c`` -> the tinygrad_tx object, walking getattr and importing submodules;
    raises LookupError naming the first missing part."""
    parts = name.split(".")
    if parts[0] != ROOT:
        raise ValueError(f"resolve_torch_name: name={name!r} does not start with {ROOT!r}")
    path = target
    obj = importlib.import_module(target)
    for part in parts[1:]:
        path = f"{path}.{part}"
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        if inspect.ismodule(obj):
            try:
                obj = importlib.import_module(path)
                continue
            except ImportError:
                pass
        raise LookupError(path)
    return obj


class Coverage:
    """Looks names up in tinygrad_tx (never in torch)."""

    def __init__(self, target: str = "tinygrad_tx"):
        self.target = target
        tx = importlib.import_module(target)
        nn = importlib.import_module(target + ".nn")
        optim = importlib.import_module(target + ".optim")
        self.owners = {"Tensor": tx.ones(1, requires_grad=True) * 1,   # a non-leaf: grad_fn too
                       "Module": nn.Module(), "Optimizer": optim.Optimizer}

    def lookup(self, name: str):
        """The tinygrad_tx object for a table name (``torch.x``, ``Tensor.view``, ``Module.eval``);
        raises LookupError when it is missing."""
        owner, _, member = name.partition(".")
        if owner in self.owners:
            obj = self.owners[owner]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    return getattr(obj, member)         # also an attribute set by __init__ (grad, training)
                except AttributeError:
                    if hasattr(type(obj), member):      # a property that needs more state: it exists
                        return inspect.getattr_static(obj, member)
                    raise LookupError(f"{self.target}.{owner}.{member}") from None
        return resolve_torch_name(name, self.target)

    def covered(self, row: Row) -> str:
        """``yes``, ``yes (**kwargs)`` (a keyword only a ``**kwargs`` takes), ``no``, or ``unknown``."""
        if row.kind != "keyword":
            try:
                self.lookup(row.name)
                return "yes"
            except LookupError:
                return "no"
        m = re.fullmatch(r"(.+)\((\w+)=\)", row.name)
        owner, kw = m.group(1), m.group(2)
        try:
            obj = self.lookup(owner)
        except LookupError:
            return "no"
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            return "unknown"
        if kw in sig.parameters and sig.parameters[kw].kind is not inspect.Parameter.VAR_POSITIONAL:
            return "yes"
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
            return "yes (**kwargs)"
        return "no"


def annotate(rows, coverage: Coverage):
    for row in rows:
        row.covered = coverage.covered(row)
        row.note = out_of_scope(row.name) if not row.covered.startswith("yes") else ""
    return rows


def summary(rows, min_projects: int = 2) -> dict:
    """Coverage of the names used by at least ``min_projects`` projects, out-of-scope ones excluded."""
    scope = [r for r in rows if len(r.projects) >= min_projects and not r.note]
    covered = [r for r in scope if r.covered.startswith("yes")]
    return {"names": len(scope), "covered": len(covered),
            "percent": round(100.0 * len(covered) / len(scope), 1) if scope else 100.0,
            "out_of_scope": sum(1 for r in rows if len(r.projects) >= min_projects and r.note)}


# ---------------------------------------------------------------- the table


def write_table(path: str, corpus: Corpus, rows, dropped, lists, command: str):
    s2 = summary(rows)
    lines = [
        "# The torch surface of public teaching code, and tinygrad_tx's coverage of it", "",
        f"Regenerate: `{command}`", "",
        f"Corpus: {len(corpus.uses)} files ({corpus.py_files} .py, {corpus.notebooks} notebooks with "
        f"{corpus.cells} code cells) from {len(corpus.projects)} projects; skipped as unparsable: "
        f"{corpus.py_skipped} .py files, {corpus.cells_skipped} notebook cells.",
        "Members were " + ("classified by torch's dir() of Tensor, nn.Module and Optimizer "
                           f"({len(dropped)} other attribute names dropped as noise)." if lists is not None
                           else "NOT filtered (torch was not importable): expect noise."),
        "Projects: " + ", ".join(p.replace("+", "/") for p in corpus.projects) + ".", "",
        f"**Coverage of the names used by >= 2 projects, out of scope excluded: {s2['covered']} / "
        f"{s2['names']} ({s2['percent']} %)**; {s2['out_of_scope']} such names are out of scope by design.", "",
        "`covered`: the same path with torch -> tinygrad_tx exists (getattr walk; members on a Tensor / "
        "nn.Module instance; keywords in `inspect.signature`, `yes (**kwargs)` when only a `**kwargs` "
        "takes them). Some noise is accepted: a member call on a NumPy array or a model counts as a "
        "Tensor member when torch.Tensor has that name.", "",
        "| # | name | kind | projects | files | covered | out of scope |",
        "|---:|---|---|---:|---:|---|---|",
    ]
    for i, r in enumerate(rows, 1):
        name = r.name.replace("|", "\\|")
        lines.append(f"| {i} | `{name}` | {r.kind} | {len(r.projects)} | {r.files} | {r.covered} | {r.note} |")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", help="folder with one sub-folder per project")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "table.md"))
    ap.add_argument("--json", default=None, help="also write the rows as JSON here")
    ap.add_argument("--target", default="tinygrad_tx", help="the package whose coverage is checked")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that has torch (for dir())")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.corpus):
        ap.error(f"corpus={args.corpus!r} is not a folder")
    corpus = extract_corpus(args.corpus)
    lists = torch_member_lists(args.python)
    rows, dropped = rank(corpus, lists)
    annotate(rows, Coverage(args.target))
    command = "python tools/surface/extract.py " + " ".join(argv if argv is not None else sys.argv[1:])
    write_table(args.out, corpus, rows, dropped, lists, command)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([{"name": r.name, "kind": r.kind, "projects": sorted(r.projects), "files": r.files,
                        "covered": r.covered, "out_of_scope": r.note} for r in rows], fh, indent=1)
    s = summary(rows)
    print(f"{len(corpus.uses)} files from {len(corpus.projects)} projects; skipped {corpus.py_skipped} .py files "
          f"and {corpus.cells_skipped}/{corpus.cells} notebook cells that do not parse")
    print(f"names used by >= 2 projects (out of scope excluded): {s['covered']}/{s['names']} covered "
          f"({s['percent']} %); table: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
