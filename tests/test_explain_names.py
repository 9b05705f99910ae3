"""``tinygrad-tx explain`` answers to the names a learner meets: torch function names, Tensor
methods, nn Module names and ``grad_fn`` names (issue 35), suggests close names for a typo, and
runs the live check against torch for the ops that need more than float arrays of one shape."""
import importlib

import numpy as np
import pytest

explain = importlib.import_module("tinygrad_tx.viz.explain")


@pytest.mark.parametrize("name, kind, cls", [
    ("max_pool2d", "primitive", "MaxPool"), ("F.max_pool2d", "primitive", "MaxPool"),
    ("nn.MaxPool2d", "primitive", "MaxPool"), ("MaxPool2d", "primitive", "MaxPool"),
    ("mse_loss", "primitive", "SquaredError"), ("cummax", "primitive", "CumExtreme"),
    ("TanhBackward0", "primitive", "TanhFn"), ("tanh", "primitive", "TanhFn"),
    ("LinearBackward0", "fused", "LinearFn"), ("torch.nn.functional.gelu", "fused", "GeluFn"),
    ("ctc_loss", "primitive", "CTCLossFn"), ("nn.CTCLoss", "primitive", "CTCLossFn"),
])
def test_torch_and_grad_fn_names_resolve(name, kind, cls):
    found_kind, found = explain.find_op(name)
    assert found_kind == kind
    names = [found.function.__name__] if kind == "fused" else [c.__name__ for c in found]
    assert cls in names, (name, names)


def test_grad_fn_names_seen_on_a_graph_resolve():
    """Every node name of a small model's graph, as a learner reads it from ``grad_fn``, is known."""
    import tinygrad_tx as tx
    x = tx.randn(4, 3, requires_grad=True)
    lin = tx.nn.Linear(3, 5)
    y = tx.nn.functional.gelu(lin(x)).tanh()[1:].sum()
    stack, seen = [y.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        shown = type(node).__name__ if type(node).__name__.endswith(("0", "1", "2", "3", "4")) else node.name()
        if "AccumulateGrad" not in shown:    # a leaf's node, not an op
            explain.find_op(shown)           # raises on an unknown name
        stack.extend(n for n, _ in getattr(node, "next_functions", ()))
    assert len(seen) >= 4


def test_unknown_name_suggests_close_matches():
    with pytest.raises(ValueError) as e:
        explain.find_op("softmx")
    assert "Did you mean" in str(e.value) and "softmax" in str(e.value)
    with pytest.raises(ValueError, match="unknown op 'no_such_op_at_all'; explain knows: softmax, .* primitives"):
        explain.find_op("no_such_op_at_all")


@pytest.mark.parametrize("cls_name", ["MaxPool", "CumExtreme", "ScatterReduce", "ScatterReduceProd", "CTCLossFn"])
def test_live_check_runs_for_ops_with_non_float_arguments(cls_name):
    """These were skipped ("no function computes X alone") though F.max_pool2d etc. exist."""
    pytest.importorskip("torch")
    cls = next(c for group in explain.primitives().values() for c in group if c.__name__ == cls_name)
    lines = explain.primitive_check(cls, seed=3)
    text = "\n".join(lines)
    assert "skipped" not in text and "could not be compared" not in text, text
    errors = [float(line.split()[-1]) for line in lines if " vs torch " in line]
    assert len(errors) >= 2 and max(errors) < 1e-12, text
