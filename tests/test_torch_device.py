"""Every torch tensor and module the suite builds is on ``reference.testing.DEVICE``.

``TINYGRAD_TX_TORCH_DEVICE=cuda`` promises a parity run against PyTorch on the GPU; a test that
builds ``torch.tensor(x)`` without ``device=`` would quietly compare against the CPU instead (or
fail only on the GPU machine, when it is finally lent). This file reads tests/ and reference/
as source (``ast``) and fails on

* a torch factory (``torch.tensor``, ``torch.zeros``, ``torch.randn``, ...) without ``device=``;
* ``torch.from_numpy(a)`` not followed by ``.to(DEVICE)``;
* a ``torch.nn`` module built in a test (``torch.nn.Linear(...)``, ``tnn.Linear(...)``) and not
  moved with ``.to(DEVICE)`` (a module nested in another one's constructor moves with it);
* ``.numpy()`` straight on an expression built from ``torch.`` without ``.cpu()`` first;

outside code marked ``@pytest.mark.cpu_only(reason=...)`` (or a module's ``pytestmark``), code
where ``torch`` is a parameter (engine-generic helpers run with tinygrad_tx too, such as
``check_module_parity`` factories), and the reasoned ``ALLOWED`` list below. A cpu_only marker
without a reason fails too.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

from reference.testing import DEVICE, reference_precision

ROOT = pathlib.Path(__file__).resolve().parents[1]
FACTORIES = {"tensor", "as_tensor", "zeros", "ones", "full", "empty", "arange", "linspace", "logspace", "eye",
             "randn", "rand", "randint", "randperm", "tril_indices", "triu_indices", "scalar_tensor"}

# (file, enclosing function) -> why torch builds on the CPU there. The function is the innermost
# named def ("<module>" at top level).
ALLOWED = {
    ("reference/_twin.py", "_as_torch"): "a state-dict value: load_state_dict copies it to the module's device",
    ("reference/testing.py", "check_module_parity"): "a state dict, copied into the twin, then moved to DEVICE",
    ("reference/gpt.py", "__init__"): "the causal-mask buffer: moves with the module's .to(DEVICE)",
    ("reference/vit.py", "__init__"): "parameters built at init: move with the module's .to(DEVICE)",
    ("reference/explain_torch.py", "<lambda>"): "`tinygrad-tx explain`'s live check: a CLI, on the CPU",
    ("reference/explain_torch.py", "run_torch"): "`tinygrad-tx explain`'s live check: a CLI, on the CPU",
    ("reference/explain_torch.py", "run_torch_function"): "`tinygrad-tx explain`'s live check: a CLI, on the CPU",
    ("reference/explain_torch.py", "run_torch_call"): "`tinygrad-tx explain`'s live check: a CLI, on the CPU",
    ("reference/baselines.py", "__init__"): "the counts buffer: moves with the module's .to(DEVICE)",
    ("reference/train.py", "conv"): "`train --compare-torch`: a CLI run of the twin, on the CPU",
    ("reference/claims.py", "measure"): "`tinygrad-tx plot seq-cost --torch`: one-thread CPU timings",
}


def _is_cpu_only(decorators) -> bool:
    for d in decorators:
        text = ast.unparse(d)
        if "cpu_only" in text:
            return True
    return False


class _Checker(ast.NodeVisitor):
    def __init__(self, path: str, src: str):
        self.path, self.src = path, src
        self.problems: list[str] = []
        self.scope: list[str] = ["<module>"]
        self.shadowed = 0
        self.cpu_only = 0
        self.nn_depth = 0
        self.parents: dict = {}
        tree = ast.parse(src)
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.module_cpu_only = any(
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
            and "cpu_only" in ast.unparse(n.value) for n in tree.body)
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        self.markers_without_reason = [
            n.lineno for n in ast.walk(tree)
            if (isinstance(n, ast.Call) and ast.unparse(n.func).endswith("mark.cpu_only")
                and not any(k.arg == "reason" for k in n.keywords))
            or (isinstance(n, ast.Attribute) and n.attr == "cpu_only" and isinstance(n.value, ast.Attribute)
                and n.value.attr == "mark" and id(n) not in called)]
        self.visit(tree)

    def _enter(self, node, name, params, decorators=()):
        shadow = "torch" in params
        cpu = _is_cpu_only(decorators)
        self.scope.append(name)
        self.shadowed += shadow
        self.cpu_only += cpu
        self.generic_visit(node)
        self.cpu_only -= cpu
        self.shadowed -= shadow
        self.scope.pop()

    def visit_FunctionDef(self, node):
        a = node.args
        self._enter(node, node.name, [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs], node.decorator_list)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._enter(node, node.name, [], node.decorator_list)

    def visit_Lambda(self, node):
        a = node.args
        self._enter(node, self.scope[-1] if self.scope[-1] != "<module>" else "<lambda>",
                    [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs])

    def _exempt(self) -> bool:
        return (self.shadowed or self.cpu_only or self.module_cpu_only
                or (self.path, self.scope[-1]) in ALLOWED)

    def _report(self, node, what):
        if not self._exempt():
            self.problems.append(f"{self.path}:{node.lineno} ({self.scope[-1]}): {what}")

    def _moved(self, node) -> bool:
        parent = self.parents.get(node)
        return isinstance(parent, ast.Attribute) and parent.attr in ("to", "cuda")

    def _is_module_ctor(self, f) -> bool:
        if not (isinstance(f, ast.Attribute) and f.attr[:1].isupper() and f.attr != "Parameter"):
            return False
        owner = f.value
        return ((isinstance(owner, ast.Attribute) and owner.attr == "nn" and isinstance(owner.value, ast.Name)
                 and owner.value.id == "torch")
                or (isinstance(owner, ast.Name) and owner.id == "tnn"))

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch":
            keywords = {k.arg for k in node.keywords}
            if f.attr in FACTORIES and "device" not in keywords and None not in keywords:
                self._report(node, f"torch.{f.attr}(...) without device=DEVICE")
            elif f.attr == "from_numpy" and not self._moved(node):
                self._report(node, "torch.from_numpy(...) without .to(DEVICE)")
        if isinstance(f, ast.Attribute) and f.attr == "numpy" and not node.args:
            receiver = ast.get_source_segment(self.src, f.value) or ""
            if "torch." in receiver and ".cpu()" not in receiver:
                self._report(node, "a torch tensor's .numpy() without .cpu() first")
        if self.path.startswith("tests/") and self._is_module_ctor(f):
            if self.nn_depth == 0 and not self._moved(node):
                self._report(node, f"{ast.unparse(f)}(...) without .to(DEVICE)")
            self.nn_depth += 1
            self.generic_visit(node)
            self.nn_depth -= 1
            return
        self.generic_visit(node)


def check_source(path: str, src: str) -> list[str]:
    """The problems in one file's source (``path`` relative to the repository root)."""
    checker = _Checker(path, src)
    return checker.problems + [f"{path}:{line}: cpu_only marker without reason="
                               for line in checker.markers_without_reason]


def _files():
    for folder in ("tests", "reference"):
        for p in sorted((ROOT / folder).glob("*.py")):
            yield p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")


def test_every_torch_tensor_is_built_on_the_kit_device():
    problems = [msg for path, src in _files() for msg in check_source(path, src)]
    assert not problems, ("torch tensors/modules not on reference.testing.DEVICE (add device=DEVICE, "
                          ".to(DEVICE), .cpu() before .numpy(), or @pytest.mark.cpu_only(reason=...)):\n"
                          + "\n".join(problems))


def test_allowlist_has_no_stale_entries():
    seen = set()
    for path, src in _files():
        tree = ast.parse(src)
        seen |= {(path, n.name) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        seen |= {(path, "<lambda>")} if any(isinstance(n, ast.Lambda) for n in ast.walk(tree)) else set()
    assert set(ALLOWED) <= seen, sorted(set(ALLOWED) - seen)


BAD = '''
import numpy as np, pytest, torch
tnn = torch.nn

def test_a(x):
    t = torch.tensor(x)                            # 6
    u = torch.from_numpy(x) + 1                    # 7
    m = tnn.Sequential(tnn.Linear(2, 2))           # 8 (once: the Linear moves with it)
    return torch.zeros(3, device="cuda").sum().numpy()   # 9

@pytest.mark.cpu_only
def test_b():
    pass
'''

GOOD = '''
import numpy as np, pytest, torch
from reference.testing import DEVICE

def test_a(x):
    t = torch.tensor(x, device=DEVICE, dtype=torch.float64)
    u = torch.from_numpy(x).to(DEVICE) + 1
    m = torch.nn.Sequential(torch.nn.Linear(2, 2)).to(DEVICE).double()
    return torch.zeros(3, device=DEVICE).sum().cpu().numpy()

@pytest.mark.cpu_only(reason="torch's CPU random stream")
def test_b():
    return torch.randn(3).numpy()

def generic(torch, x):            # run with tinygrad_tx too
    return torch.tensor(x)

check = lambda torch: torch.nn.Linear(4, 3)
'''


def test_the_check_fails_on_a_tensor_off_the_device():
    problems = check_source("tests/test_x.py", BAD)
    assert [p.split(" ")[0] for p in problems] == [f"tests/test_x.py:{n}" for n in (6, 7, 8, 9)] + \
        ["tests/test_x.py:11:"]
    assert check_source("tests/test_x.py", GOOD) == []
    marked = "import pytest\npytestmark = pytest.mark.cpu_only(reason='x')\n" + BAD.replace("@pytest.mark.cpu_only\n", "")
    assert check_source("tests/test_x.py", marked) == []


def test_float32_reference_never_uses_tf32():
    p = reference_precision()
    assert p == {"device": DEVICE, "float32_matmul_precision": "highest", "cuda_matmul_allow_tf32": False,
                 "cudnn_allow_tf32": False}
