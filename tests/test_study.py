"""The study tools (tinygrad_tx.viz): graph export, backward trace, hooks, explain, pictures, CLI.

The trace and the hooks are checked against PyTorch: a float64 GPT TransformerBlock and its
reference twin share one state_dict, and the gradient norms our trace (and our Tensor hooks)
report for every parameter and for intermediate tensors must equal the norms torch's
``register_hook`` sees on the twin, to 1e-10 relative.
"""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import reference
import tinygrad_tx as tg
from tinygrad_tx import autograd
from tinygrad_tx import functional as F
from tinygrad_tx import nn
from tinygrad_tx.cli import main
from tinygrad_tx.models import CausalSelfAttention, GPTLanguageModel, TransformerBlock
from tinygrad_tx.viz import (EXAMPLES, EXPLAINABLE_OPS, GraphvizNotFound, attention_maps, attention_weights,
                             bigram_counts, example_graph, explain, graph_summary, live_check, name_activations,
                             plot_attention, plot_bigram, plot_embeddings_3d, to_dot, trace_backward,
                             vowel_gathering, write_graph)
from tinygrad_tx.viz import graph as graph_mod
from tinygrad_tx.viz.explain import body_lines, closed_form_lines, speed_helpers
from reference.testing import DEVICE

RTOL = 1e-10


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def dot_nodes(text):
    """{node id: label} of the DOT text written by to_dot."""
    return {m.group(1): m.group(2).replace("\\n", "\n")
            for m in re.finditer(r'^\s+(n\d+) \[label="((?:[^"\\]|\\.)*)"', text, re.M)}


def dot_edges(text):
    return re.findall(r"^\s+(n\d+) -> (n\d+);", text, re.M)


# =========================================================================== to_dot

def test_to_dot_nodes_edges_and_names():
    lin = nn.Linear(3, 2).double()
    x = tg.Tensor(np.ones((4, 3)), requires_grad=True)
    x.name = "x"
    y = F.softmax(lin(x), dim=-1)
    text = to_dot(y, lin)
    nodes = dot_nodes(text)
    labels = sorted(nodes.values())
    assert labels == sorted(["SoftmaxFn\n(4, 2)", "LinearFn\n(4, 2)", "x\n(4, 3)", "weight\n(2, 3)", "bias\n(2,)"])
    by_label = {v.split("\n")[0]: k for k, v in nodes.items()}
    assert sorted(dot_edges(text)) == sorted([(by_label["LinearFn"], by_label["SoftmaxFn"]),
                                               (by_label["x"], by_label["LinearFn"]),
                                               (by_label["weight"], by_label["LinearFn"]),
                                               (by_label["bias"], by_label["LinearFn"])])
    assert text.startswith("digraph autograd {") and text.rstrip().endswith("}")


def test_to_dot_params_mapping_tensor_name_and_constants():
    w = tg.Tensor(np.ones(3), requires_grad=True)
    c = tg.Tensor(np.full(3, 2.0))
    c.name = 'my "mask"'
    out = (w * c).sum()
    text = to_dot(out, {"layer.scale": w})
    labels = set(dot_nodes(text).values())
    assert "layer.scale\n(3,)" in labels and not any("mask" in v for v in labels)
    text_c = to_dot(out, {"layer.scale": w}, constants=True)
    assert 'my \\"mask\\"\n(3,) float64' in dot_nodes(text_c).values()
    assert len(dot_edges(text_c)) == len(dot_edges(text)) + 1


def test_to_dot_tied_weight_has_both_names_and_saved_bytes():
    out, model, _ = example_graph("gpt")
    text = to_dot(out, model, saved_bytes=True)
    labels = list(dot_nodes(text).values())
    assert any(v.startswith("token_embedding.weight = lm_head.weight\n(27, 8)") for v in labels)
    ce = [v for v in labels if v.startswith("CrossEntropy")]
    assert ce == [f"CrossEntropy\n()\nsaved {out._ctx.saved_bytes} B"]
    # every op of the graph is one box
    assert sum(1 for v in labels if "\nsaved " in v) == graph_summary(out)["ops"]


def test_to_dot_deep_graph_is_iterative():
    x = tg.Tensor(np.ones(2), requires_grad=True)
    y = x
    for _ in range(20000):
        y = y * 1.0
    text = to_dot(y)
    assert len(dot_nodes(text)) == 20001
    assert len(dot_edges(text)) == 20000


def test_to_dot_errors():
    with pytest.raises(TypeError, match="Tensor"):
        to_dot(np.ones(3))
    x = tg.Tensor(np.ones(3), requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(TypeError, match="Module or a mapping"):
        to_dot(y, [x])
    with pytest.raises(ValueError, match="rankdir"):
        to_dot(y, rankdir="UP")
    y.backward()
    with pytest.raises(RuntimeError, match="freed"):
        to_dot(y)


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("composite", [False, True])
def test_examples_build_and_differ_as_documented(name, composite):
    out, module, desc = example_graph(name, composite)
    summary = graph_summary(out)
    fused_ops = {"layernorm": "LayerNormFn", "attention": "ScaledDotProductAttention",
                 "gpt-block": "ScaledDotProductAttention", "gpt": "ScaledDotProductAttention"}[name]
    assert (fused_ops in summary["by_op"]) != composite
    assert summary["leaves"] == len(list(module.parameters())) + (name != "gpt")  # + the input x


def test_name_activations_labels_module_outputs_and_removes_hooks():
    block = TransformerBlock(8, 2, 4, dropout=0.0)
    x = tg.Tensor(np.ones((1, 4, 8), dtype=np.float32), requires_grad=True)
    with name_activations(block):
        out = block(x)
    assert all(not m._forward_hooks for m in block.modules())
    names = {graph_mod._label(t) for t, _ in graph_mod.graph_nodes(out) if graph_mod._label(t)}
    assert {"ln1", "ln2", "attn", "attn.c_attn", "mlp", "mlp.net.0", "mlp.net.1"} <= names
    assert not any("dropout" in n or n == "mlp.net.3" for n in names)   # p = 0 passes its input through
    assert x.name is None and out.name is None    # the input is a leaf; the root module is not named


def test_write_graph_dot_and_missing_graphviz(tmp_path, monkeypatch):
    text = to_dot(example_graph("layernorm")[0])
    assert write_graph(text, tmp_path / "a.dot") == [tmp_path / "a.dot"]
    assert (tmp_path / "a.dot").read_text() == text
    monkeypatch.setattr(graph_mod, "dot_program", lambda: None)
    # without Graphviz the picture is drawn by the built-in renderer ...
    assert write_graph(text, tmp_path / "b.svg") == [tmp_path / "b.dot", tmp_path / "b.svg"]
    assert "Graphviz's dot was not used" in (tmp_path / "b.svg").read_text()
    assert graph_mod.renderer_name() == "the built-in drawing, without Graphviz"
    # ... unless Graphviz is asked for by name
    with pytest.raises(GraphvizNotFound, match="apt-get install graphviz") as info:
        write_graph(text, tmp_path / "c.svg", renderer="graphviz")
    assert "dot -Tsvg" in str(info.value)
    assert (tmp_path / "c.dot").read_text() == text and not (tmp_path / "c.svg").exists()
    with pytest.raises(ValueError, match="format"):
        write_graph(text, tmp_path / "c.pdf")
    with pytest.raises(ValueError, match="renderer must be one of .* got 'gv'"):
        write_graph(text, tmp_path / "d.svg", renderer="gv")


@pytest.mark.parametrize("name", ["gpt-block", "gpt", "layernorm"])
def test_builtin_drawing_layout_and_svg(tmp_path, name):
    """The built-in drawing: every node of the DOT text once, every arrow pointing down (from
    an input to the op that used it), no two boxes of a rank overlapping, a well-formed SVG with
    every label, and a PNG."""
    import xml.etree.ElementTree as ET
    from tinygrad_tx.viz import render
    out, module, desc = example_graph(name)
    text = to_dot(out, module, title=desc)
    lay = render.layout(text)
    assert set(lay.nodes) == set(dot_nodes(text)) and len(lay.edges) == len(dot_edges(text))
    for a, b in lay.edges:
        assert lay.nodes[a].y + lay.nodes[a].h / 2 < lay.nodes[b].y - lay.nodes[b].h / 2, (a, b)
    by_rank = {}
    for n in lay.nodes.values():
        by_rank.setdefault(n.rank, []).append(n)
    for row in by_rank.values():
        row.sort(key=lambda n: n.x)
        assert all(p.x + p.w / 2 <= q.x - q.w / 2 + 1e-9 for p, q in zip(row, row[1:]))
    svg = render.to_svg_text(text)
    root = ET.fromstring(svg)
    labels = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    for label in dot_nodes(text).values():
        assert label.split("\n")[0] in labels
    arrows = [p for p in root.iter("{http://www.w3.org/2000/svg}path") if p.get("marker-end")]
    assert len(arrows) == len(lay.edges)
    written = write_graph(text, tmp_path / "g.png", renderer="builtin")
    assert written[1].read_bytes().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="no nodes"):
        render.layout("digraph autograd {\n}\n")


@pytest.mark.skipif(graph_mod.dot_program() is None, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_write_graph_renders_with_graphviz(tmp_path, fmt):
    out, module, desc = example_graph("gpt-block")
    written = write_graph(to_dot(out, module, title=desc), tmp_path / f"block.{fmt}")
    assert written == [tmp_path / "block.dot", tmp_path / f"block.{fmt}"]
    data = written[1].read_bytes()
    assert data.startswith(b"\x89PNG") if fmt == "png" else b"<svg" in data and b"ln1.weight" in data


# =========================================================================== trace_backward

def test_trace_records_execution_order_shapes_norms_and_saved_bytes():
    x = tg.Tensor(np.arange(1.0, 29.0).reshape(4, 7) / 10, requires_grad=True)
    y = F.softmax(x * 2.0, dim=-1)
    g = np.random.default_rng(0).standard_normal((4, 7))
    with trace_backward() as trace:
        y.backward(g)
    assert [r.fn for r in trace.records] == ["SoftmaxFn", "Mul"]
    soft, mul = trace.records
    assert soft.index == 1 and mul.index == 2
    assert soft.output_shape == (4, 7) and soft.input_shapes == ((4, 7),)
    assert soft.saved_bytes == 4 * 7 * 8                    # Softmax saves its float64 output
    assert soft.grad_out_norm == pytest.approx(np.linalg.norm(g), rel=1e-14)
    # a python scalar operand becomes a non-Tensor argument: no shape, no gradient
    assert mul.input_shapes[0] == (4, 7) and mul.grad_in_norms[0] == pytest.approx(np.linalg.norm(x.grad))
    assert mul.grad_out_norm == pytest.approx(soft.grad_in_norms[0], rel=1e-15)
    assert np.array_equal(trace.leaf_grad(x), np.asarray(x.grad))
    assert trace.record_for(y) is soft
    assert "SoftmaxFn" in trace.table() and "2 nodes" in trace.table()


def test_trace_sums_leaf_uses_and_skips_constants():
    w = tg.Tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    c = tg.Tensor(np.array([0.5, 0.5, 0.5]))
    with trace_backward({"w": w}) as trace:
        ((w * c) + w * w).sum().backward()
    mul_c = next(r for r in trace.records if r.fn == "Mul" and r.grad_in_norms[1] is None)
    assert mul_c.input_labels == ("w", None)
    assert np.allclose(trace.leaf_grad(w), 0.5 + 2 * w._data)
    assert trace.parameter_grad_norms() == {"w": pytest.approx(np.linalg.norm(0.5 + 2 * w._data), rel=1e-15)}
    assert "w " in trace.parameter_table()


def test_trace_observer_removed_even_on_exception():
    before = list(autograd._backward_observers)
    with pytest.raises(ZeroDivisionError):
        with trace_backward():
            assert len(autograd._backward_observers) == len(before) + 1
            raise ZeroDivisionError
    assert autograd._backward_observers == before
    x = tg.Tensor(np.ones(2), requires_grad=True)
    with trace_backward() as outer:
        with trace_backward() as inner:
            (x * 3.0).sum().backward()
    assert len(outer) == len(inner) == 2
    assert autograd._backward_observers == before


def test_trace_errors():
    x = tg.Tensor(np.ones(2), requires_grad=True)
    y = (x * 3.0).sum()
    other = (x * 5.0).sum()
    with trace_backward() as trace:
        y.backward()
    with pytest.raises(ValueError, match="leaf"):
        trace.record_for(x)
    with pytest.raises(KeyError, match="not run"):
        trace.record_for(other)
    with pytest.raises(KeyError, match="no gradient"):
        trace.leaf_grad(tg.Tensor(np.ones(2), requires_grad=True))


def _block_pair(attn_impl):
    tg.manual_seed(3)
    ours = TransformerBlock(16, 4, 8, dropout=0.0, attn_impl=attn_impl).double()
    twin = reference.TransformerBlock(16, 4, 8, dropout=0.0).double()
    twin.load_state_dict(ours.state_dict())
    return ours, twin


@pytest.mark.parametrize("attn_impl", ["fused", "naive", "flash"])
def test_trace_and_hooks_match_torch_hooks_on_gpt_block(attn_impl):
    ours, twin = _block_pair(attn_impl)
    rng = np.random.default_rng(7)
    x_np, g_np = rng.standard_normal((2, 8, 16)), rng.standard_normal((2, 8, 16))

    # ---- torch: register_hook on every parameter and on intermediate tensors
    torch_norms, cap = {}, {}
    for name, p in twin.named_parameters():
        p.register_hook(lambda g, name=name: torch_norms.__setitem__(name, float(g.norm())))
    for sub in ("ln1", "attn", "ln2", "mlp"):
        getattr(twin, sub).register_forward_hook(lambda m, a, o, sub=sub: cap.__setitem__(sub, o))
    xt = torch.tensor(x_np, requires_grad=True, device=DEVICE)
    xt.register_hook(lambda g: torch_norms.__setitem__("x", float(g.norm())))
    out_t = twin(xt)
    for sub, t in cap.items():
        t.register_hook(lambda g, sub=sub: torch_norms.__setitem__("out:" + sub, float(g.norm())))
    out_t.backward(torch.tensor(g_np, device=DEVICE))

    # ---- ours: the trace, plus Tensor.register_hook on the same tensors
    hook_norms, mine = {}, {}
    for sub in ("ln1", "attn", "ln2", "mlp"):
        getattr(ours, sub).register_forward_hook(lambda m, a, o, sub=sub: mine.__setitem__(sub, o))
    x = tg.Tensor(x_np, requires_grad=True)
    x.register_hook(lambda g: hook_norms.__setitem__("x", float(np.linalg.norm(g._data))))
    for name, p in ours.named_parameters():
        p.register_hook(lambda g, name=name: hook_norms.__setitem__(name, float(np.linalg.norm(g._data))))
    out = ours(x)
    for sub, t in mine.items():
        t.register_hook(lambda g, sub=sub: hook_norms.__setitem__("out:" + sub, float(np.linalg.norm(g._data))))
    n_ops = graph_summary(out)["ops"]
    with trace_backward(params={**dict(ours.named_parameters()), "x": x}) as trace:
        out.backward(g_np)

    param_names = [n for n, _ in twin.named_parameters()]
    assert len(param_names) == 12
    traced = trace.parameter_grad_norms()
    assert set(traced) == set(param_names) | {"x"}
    for name in param_names + ["x"]:
        assert rel(traced[name], torch_norms[name]) <= RTOL, name
        assert rel(hook_norms[name], torch_norms[name]) <= RTOL, name
    for sub in ("ln1", "attn", "ln2", "mlp"):
        key = "out:" + sub
        assert rel(hook_norms[key], torch_norms[key]) <= RTOL, key
        assert rel(trace.record_for(mine[sub]).grad_out_norm, torch_norms[key]) <= RTOL, key
    assert trace.record_for(out).index == 1
    assert trace.record_for(out).grad_out_norm == pytest.approx(np.linalg.norm(g_np), rel=1e-14)
    # the trace ran every node of the graph exactly once
    assert len(trace) == n_ops
    for name, p in ours.named_parameters():
        assert np.array_equal(trace.leaf_grad(p), np.asarray(p.grad))


def test_trace_covers_every_op_of_the_graph_once():
    out, module, _ = example_graph("gpt")
    summary = graph_summary(out)
    with trace_backward(module) as trace:
        out.backward()
    assert len(trace) == summary["ops"]
    assert trace.counts() == {k: summary["by_op"][k] for k in trace.counts()}
    assert sum(trace.counts().values()) == summary["ops"]
    assert trace.total_saved_bytes == summary["saved_bytes"]
    # the tied weight receives two contributions (embedding lookup and lm_head) summed once
    tied = module.lm_head.weight
    assert np.allclose(trace.leaf_grad(tied), np.asarray(tied.grad))
    assert "token_embedding.weight = lm_head.weight" in trace.parameter_grad_norms()


# =========================================================================== hooks vs torch

def _pair(values, hooks_ours, hooks_torch):
    """Run f(x) = sum(exp(x) * exp(x)) with hooks on exp(x) in both frameworks; return x grads."""
    x = tg.Tensor(np.array(values), requires_grad=True)
    y = x.exp()
    for h in hooks_ours:
        y.register_hook(h)
    (y * y).sum().backward()
    xt = torch.tensor(values, dtype=torch.float64, requires_grad=True, device=DEVICE)
    yt = xt.exp()
    for h in hooks_torch:
        yt.register_hook(h)
    (yt * yt).sum().backward()
    return np.asarray(x.grad), xt.grad.cpu().numpy()


def test_tensor_hook_replaces_gradient_like_torch():
    ours, theirs = _pair([0.1, -0.3, 0.7], [lambda g: g * 3.0], [lambda g: g * 3.0])
    assert np.allclose(ours, theirs, rtol=1e-14, atol=0)
    plain, _ = _pair([0.1, -0.3, 0.7], [], [])
    assert np.allclose(ours, 3 * plain)


def test_tensor_hooks_run_in_registration_order_and_chain():
    order_o, order_t = [], []

    def make(tag, fn, log):
        def hook(g):
            log.append(tag)
            return fn(g)
        return hook
    ours, theirs = _pair([0.2, 0.5],
                         [make("a", lambda g: g + 1.0, order_o), make("b", lambda g: None, order_o),
                          make("c", lambda g: g * 2.0, order_o)],
                         [make("a", lambda g: g + 1.0, order_t), make("b", lambda g: None, order_t),
                          make("c", lambda g: g * 2.0, order_t)])
    assert order_o == order_t == ["a", "b", "c"]
    assert np.allclose(ours, theirs, rtol=1e-14, atol=0)


def test_hook_sees_the_total_gradient_once_and_leaf_hook_changes_grad():
    seen_o, seen_t = [], []
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    x.register_hook(lambda g: seen_o.append(g._data.copy()) or g * 10.0)
    (x * x + x * 3.0).sum().backward()
    xt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True, device=DEVICE)
    xt.register_hook(lambda g: seen_t.append(g.numpy().copy()) or g * 10.0)
    (xt * xt + xt * 3.0).sum().backward()
    assert len(seen_o) == len(seen_t) == 1
    assert np.allclose(seen_o[0], seen_t[0]) and np.allclose(np.asarray(x.grad), xt.grad.cpu().numpy())
    assert np.allclose(np.asarray(x.grad), 10 * (2 * x._data + 3))


def test_hook_handle_remove_like_torch():
    calls = {"ours": 0, "torch": 0}

    def counter(key):
        def hook(g):
            calls[key] += 1
        return hook
    for key, make in (("ours", lambda: tg.Tensor(np.ones(3), requires_grad=True)),
                      ("torch", lambda: torch.ones(3, dtype=torch.float64, requires_grad=True, device=DEVICE))):
        x = make()
        h = counter(key)
        first = x.register_hook(h)
        second = x.register_hook(h)          # the same function twice: two registrations
        first.remove()
        first.remove()                       # removing twice removes nothing more
        (x * 2).sum().backward()
        second.remove()
        (x * 2).sum().backward()
    assert calls["ours"] == calls["torch"] == 1


def test_hook_with_retain_grad_sets_hooked_grad_like_torch():
    x = tg.Tensor(np.array([0.5, 1.5]), requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    y.register_hook(lambda g: g * 5.0)
    (y * y).sum().backward()
    xt = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True, device=DEVICE)
    yt = xt * 2.0
    yt.retain_grad()
    yt.register_hook(lambda g: g * 5.0)
    (yt * yt).sum().backward()
    assert np.allclose(np.asarray(y.grad), yt.grad.numpy()) and np.allclose(np.asarray(x.grad), xt.grad.cpu().numpy())


def test_register_hook_needs_grad_like_torch():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tg.Tensor(np.ones(2)).register_hook(lambda g: g)
    with pytest.raises(RuntimeError):
        torch.ones(2, device=DEVICE).register_hook(lambda g: g)


def test_forward_hooks_replace_output_chain_and_remove_like_torch():
    tg.manual_seed(0)
    ours = nn.Linear(3, 2).double()
    twin = torch.nn.Linear(3, 2).to(DEVICE).double()
    twin.load_state_dict({k: torch.from_numpy(v).to(DEVICE) for k, v in ours.state_dict().items()})
    x_np = np.random.default_rng(1).standard_normal((4, 3))
    results = {}
    for key, module, x in (("ours", ours, tg.Tensor(x_np)), ("torch", twin, torch.tensor(x_np, device=DEVICE))):
        seen = []
        h1 = module.register_forward_hook(lambda m, args, out, seen=seen: seen.append((m, args)) or out * 2.0)
        h2 = module.register_forward_hook(lambda m, args, out: out + 1.0)   # sees the doubled output
        h3 = module.register_forward_hook(lambda m, args, out: None)         # None keeps it
        doubled = np.asarray(module(x).detach().numpy() if key == "torch" else module(x)._data)
        assert seen[0][0] is module and seen[0][1][0] is x
        h1.remove()
        h1.remove()
        shifted = np.asarray(module(x).detach().numpy() if key == "torch" else module(x)._data)
        h2.remove()
        h3.remove()
        plain = np.asarray(module(x).detach().numpy() if key == "torch" else module(x)._data)
        results[key] = (doubled, shifted, plain)
    for a, b in zip(results["ours"], results["torch"]):
        assert np.allclose(a, b, rtol=1e-14, atol=1e-15)
    doubled, shifted, plain = results["ours"]
    assert np.allclose(doubled, 2 * plain + 1) and np.allclose(shifted, plain + 1)


# =========================================================================== explain

@pytest.mark.parametrize("op", list(EXPLAINABLE_OPS))
def test_live_check_every_rung_agrees_with_torch(op):
    check = live_check(op, seed=1)
    spec = EXPLAINABLE_OPS[op]
    rungs = ["composite", "closed_form", "fused"] if spec.closed_form is not None else ["composite", "fused"]
    assert list(check["runs"]) == rungs
    expected = [(r, "torch") for r in rungs] if spec.torch is not None else [(r, "composite") for r in rungs[1:]]
    assert check["pairs"] == expected
    worst = max(check["errors"].values())
    assert worst <= 1e-12, check["errors"]
    for rung, run in check["runs"].items():
        assert run.nodes >= 1, rung
        for k, grad in run.grads.items():
            assert grad is not None and np.abs(grad).max() > 0, (rung, k)


def test_live_check_detects_a_wrong_backward_on_any_rung(monkeypatch):
    spec = EXPLAINABLE_OPS["softmax"]
    monkeypatch.setattr(spec.function, "backward", staticmethod(lambda ctx, g: g))
    check = live_check("softmax")
    assert check["errors"][("grad input", "fused", "torch")] > 1e-2
    assert check["errors"][("grad input", "closed_form", "torch")] < 1e-12
    check = live_check("softmax", use_torch=False)
    assert check["errors"][("grad input", "fused", "composite")] > 1e-2
    monkeypatch.setattr(spec.closed_function, "backward", staticmethod(lambda ctx, g: g))
    assert live_check("softmax")["errors"][("grad input", "closed_form", "torch")] > 1e-2


def test_explain_report_contents():
    text = explain("layer_norm")
    spec = EXPLAINABLE_OPS["layer_norm"]
    assert "tinygrad_tx/functional/normalization.py:" in text
    assert "tinygrad_tx/functional/closed_form.py:" in text
    # the three rungs, in order: composite source, closed form (derivation and source), fused
    rung1, rung2, rung3 = (text.index(f"Rung {i} — ") for i in (1, 2, 3))
    assert rung1 < text.index("def layer_norm_composite(") < rung2 < rung3
    assert rung2 < text.index("ρ · (ĝ - mean(ĝ) - x̂ ∘ mean(ĝ ∘ x̂))") < rung3     # the closed form's derivation
    assert rung2 < text.index("def forward(ctx, x, weight, bias, *, ndim_normalized") < rung3
    assert text.find("ρ · (ĝ - mean(ĝ) - x̂ ∘ mean(ĝ ∘ x̂))", rung3) == -1             # written once: rung 2's
    assert rung3 < text.index("Derivation: ``LayerNormClosedForm``")                 # the fused docstring points there
    assert "_drop_mean_rounding: " in text and "_row_means: " in text                 # the named tricks
    fw, bw = closed_form_lines(spec.closed_function)
    assert f"forward {fw} + backward {bw} lines of NumPy" in text
    assert re.search(r"grad weight(\s+\d\.\d\de-\d\d){3}", text)                   # 3 rungs vs torch
    assert "closed form vs torch" in text and "fused vs torch" in text and "composite vs torch" in text
    assert "fused 1 node" in text and "closed form 1 node" in text and spec.summary in text
    short = explain("layernorm", source=False, use_torch=False)
    assert "def backward" not in short and "fused vs torch" not in short and "not requested" in short
    assert "closed form vs composite" in short and "fused vs composite" in short
    assert "module docstring" in explain("flash", source=False, use_torch=False)
    assert "closed form  none: the fused Function is already" in explain("dropout", source=False)


def test_speed_helpers_are_the_named_functions_a_fused_op_calls():
    names = lambda op: {getattr(h, "__wrapped__", h).__name__ for h in speed_helpers(EXPLAINABLE_OPS[op].function)}
    assert {"_softmax_unshifted", "_shift_rows_that_need_it", "row_sums"} <= names("softmax")
    assert {"_row_means", "_column_sums", "_drop_mean_rounding"} <= names("layer_norm")
    assert names("scaled_dot_product_attention") == {"_causal_future", "_key_sums"}   # ctx.keep_scale is no call
    assert "_one_hot_transposed" in names("embedding") and "causal_key_end" in names("flash_attention")


def test_closed_form_lines_counts_statements_only():
    def f(ctx, x):
        """doc
        string"""
        # a comment

        y = x + 1
        return (y,
                y)
    assert body_lines(f) == 3


def test_explain_unknown_op_and_missing_torch(monkeypatch):
    with pytest.raises(ValueError, match="softmax, log_softmax"):
        explain("convolution")
    monkeypatch.setitem(sys.modules, "torch", None)
    text = explain("softmax", source=False)
    assert "torch is not installed: skipped" in text and "fused vs torch" not in text
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "reference.explain_torch", None)          # torch, but no reference/
    text = explain("softmax", source=False)
    assert "reference.explain_torch) are not importable" in text and "fused vs torch" not in text


def test_study_tools_do_not_import_torch_or_matplotlib():
    code = ("import sys, tinygrad_tx.viz, tinygrad_tx.cli; tinygrad_tx.cli.build_parser(); "
            "print('torch' in sys.modules, 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# =========================================================================== pictures

def _png_shape(path):
    import matplotlib.image
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG")
    return matplotlib.image.imread(path).shape


def test_bigram_counts_and_plot(tmp_path):
    from tinygrad_tx.data import CharVocab
    vocab = CharVocab.tutorial()
    counts = bigram_counts(["ava", "emma"], vocab)
    s = vocab.stoi
    assert counts.sum() == 4 + 5
    assert counts[s["$"], s["a"]] == 1 and counts[s["m"], s["m"]] == 1 and counts[s["a"], s["$"]] == 2
    h, w, _ = _png_shape(plot_bigram(counts, vocab, tmp_path / "sub" / "bigram.png"))
    assert h > 500 and w > 500
    with pytest.raises(ValueError, match=r"\(27, 27\)"):
        plot_bigram(counts[:3], vocab, tmp_path / "bad.png")


def test_vowel_gathering_and_embedding_plot(tmp_path):
    from tinygrad_tx.data import CharVocab
    vocab = CharVocab.tutorial()
    rng = np.random.default_rng(0)
    w = rng.standard_normal((27, 3))
    vowels = [vocab.stoi[c] for c in "aeiou"]
    w[vowels] = 5.0 + 0.01 * rng.standard_normal((5, 3))
    stats = vowel_gathering(w, vocab)
    assert stats["ratio"] < 0.01 and set(stats["nearest"].values()) <= set("aeiou")
    spread = vowel_gathering(np.eye(27)[:, :3] + np.arange(27)[:, None], vocab)
    assert spread["ratio"] > 0.5
    _png_shape(plot_embeddings_3d(w, vocab, tmp_path / "emb.png"))
    with pytest.raises(ValueError, match="d_model = 3"):
        plot_embeddings_3d(np.zeros((27, 4)), vocab, tmp_path / "x.png")
    with pytest.raises(ValueError, match="two vowels"):
        vowel_gathering(np.zeros((3, 3)), ["$", "a", "b"])


def _torch_attention_weights(twin, idx):
    """Weights of every twin block from torch ops alone: softmax(q kᵀ/√d_k + causal) of its input."""
    caps = []
    hooks = [b.attn.register_forward_hook(lambda m, a, o: caps.append((m, a[0]))) for b in twin.blocks]
    with torch.no_grad():
        twin(torch.from_numpy(idx).to(DEVICE))
    for h in hooks:
        h.remove()
    out = []
    for m, x in caps:
        B, T, C = x.shape
        q, k, _ = m.c_attn(x).split(m.d_model, dim=2)
        q = q.view(B, T, m.n_heads, m.d_k).transpose(1, 2)
        k = k.view(B, T, m.n_heads, m.d_k).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) / m.d_k ** 0.5
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=DEVICE).triu(1), float("-inf"))
        out.append(torch.softmax(s, -1).detach().cpu().numpy())
    return np.stack(out)


@pytest.mark.parametrize("attn_impl", ["fused", "naive", "flash"])
def test_attention_maps_match_torch_twin(attn_impl):
    tg.manual_seed(5)
    model = GPTLanguageModel(27, d_model=16, n_heads=4, n_layers=2, block_size=8, dropout=0.1,
                             attn_impl=attn_impl).double()
    twin = reference.GPTLanguageModel(27, d_model=16, n_heads=4, n_layers=2, block_size=8).double().eval()
    twin.load_state_dict(model.state_dict())
    idx = np.array([[0, 5, 13, 13, 1], [0, 1, 22, 1, 0]], dtype=np.int64)
    model.train()
    maps = attention_maps(model, idx)
    assert model.training and all(not m._forward_hooks for m in model.modules())
    assert maps.shape == (2, 2, 4, 5, 5)
    assert np.allclose(maps.sum(-1), 1.0) and np.all(np.triu(maps, 1) == 0)
    assert np.abs(maps - _torch_attention_weights(twin, idx)).max() <= 1e-12


def test_attention_weights_check_catches_a_mismatch():
    tg.manual_seed(0)
    attn = CausalSelfAttention(8, 2, 4, dropout=0.0).double()
    x = tg.Tensor(np.random.default_rng(0).standard_normal((1, 4, 8)))
    out = attn(x)
    w = attention_weights(attn, x, out)
    assert w.shape == (1, 2, 4, 4)
    with pytest.raises(RuntimeError, match="does not reproduce"):
        attention_weights(attn, x, tg.Tensor(out._data + 0.1))
    with pytest.raises(ValueError, match="no CausalSelfAttention"):
        attention_maps(nn.Linear(2, 2), np.zeros((1, 2), dtype=np.int64))


def test_plot_attention(tmp_path):
    maps = np.tile(np.tril(np.ones((5, 5))) / np.arange(1, 6)[:, None], (2, 3, 1, 1))
    h, w, _ = _png_shape(plot_attention(maps, list("$emma"), tmp_path / "att.png", "title"))
    assert w > h
    with pytest.raises(ValueError, match="token labels"):
        plot_attention(maps, list("$em"), tmp_path / "x.png")
    with pytest.raises(ValueError, match="layers, heads"):
        plot_attention(maps[0], list("$emma"), tmp_path / "x.png")


# =========================================================================== the commands

def test_cli_graph_trace_explain(tmp_path, capsys, monkeypatch):
    assert main(["graph", "gpt-block", "-o", str(tmp_path / "block.dot"), "--saved-bytes"]) == 0
    text = (tmp_path / "block.dot").read_text()
    assert "attn.c_attn.weight" in text and "saved" in text
    assert "22 ops" in capsys.readouterr().out
    monkeypatch.setattr(graph_mod, "dot_program", lambda: None)
    # no Graphviz: the built-in drawing writes the picture asked for
    assert main(["graph", "layernorm", "--composite", "--png", "-o", str(tmp_path / "ln.dot")]) == 0
    cap = capsys.readouterr()
    assert (tmp_path / "ln.dot").exists() and (tmp_path / "ln.png").read_bytes().startswith(b"\x89PNG")
    assert "Sqrt" in cap.out and "drawn by the built-in drawing, without Graphviz" in cap.out and not cap.err
    assert main(["graph", "layernorm", "--renderer", "graphviz", "-o", str(tmp_path / "ln.svg")]) == 1
    assert "install Graphviz" in capsys.readouterr().err and not (tmp_path / "ln.svg").exists()
    monkeypatch.chdir(tmp_path)
    assert main(["graph", "attention"]) == 0                     # default: runs/graph/attention.svg
    assert (tmp_path / "runs/graph/attention.dot").exists() and (tmp_path / "runs/graph/attention.svg").exists()
    capsys.readouterr()
    assert main(["graph", "attention", "-o", "a.txt"]) == 1
    assert "graph format must be one of" in capsys.readouterr().err
    assert main(["trace", "layernorm"]) == 0
    out = capsys.readouterr().out
    assert "LayerNormFn" in out and "weight" in out and "1 nodes" not in out
    assert main(["explain"]) == 0
    assert "scaled_dot_product_attention" in capsys.readouterr().out
    assert main(["explain", "cross-entropy", "--no-source"]) == 0
    assert "fused vs torch" in capsys.readouterr().out
    assert main(["explain", "nope"]) == 1
    assert "unknown op 'nope'" in capsys.readouterr().err


def test_cli_plots_small(tmp_path, capsys):
    assert main(["plot", "bigram", "-o", str(tmp_path / "b.png")]) == 0
    assert "most frequent" in capsys.readouterr().out and (tmp_path / "b.png").exists()
    common = ["--steps", "3", "--n-layers", "1", "--save", str(tmp_path / "m.safetensors")]
    assert main(["plot", "embeddings", *common, "-o", str(tmp_path / "e.png")]) == 0
    assert "ratio" in capsys.readouterr().out and (tmp_path / "e.png").exists()
    assert main(["plot", "attention", "--checkpoint", str(tmp_path / "m.safetensors"), "--name", "ava",
                 "-o", str(tmp_path / "a.png")]) == 0
    assert "1 layers x 1 heads over 4 positions" in capsys.readouterr().out
    assert main(["plot", "embeddings", "--checkpoint", str(tmp_path / "m.safetensors"), "--d-model", "4",
                 "-o", str(tmp_path / "e2.png")]) == 0           # the checkpoint's own d_model wins
    capsys.readouterr()
    assert main(["plot", "attention", "--checkpoint", str(tmp_path / "m.safetensors"), "--name", "a" * 20,
                 "-o", str(tmp_path / "x.png")]) == 1
    assert "reads at most 16" in capsys.readouterr().err


# =========================================================================== the learner's own script

SCRIPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
x = torch.randn(5, 4)
y = torch.tensor([0, 2, 1, 0, 2])
for step in range(3):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    print("after backward")
"""
BY_HAND = """
import torch
W = torch.randn(3, 2, requires_grad=True)
b = torch.zeros(2, requires_grad=True)

def step(x):
    return (x @ W + b).tanh().pow(2).sum()

if __name__ == "__main__":
    raise SystemExit("the main part must not run under --call")
"""


def test_first_backward_of_a_pytorch_script(tmp_path):
    from tinygrad_tx.viz.script import first_backward
    path = tmp_path / "my_mlp.py"
    path.write_text(SCRIPT)
    backward = tg.Tensor.backward
    captured = first_backward(str(path))
    assert tg.Tensor.backward is backward and "torch" not in sys.modules or sys.modules["torch"] is torch
    assert captured.where == "my_mlp.py:12: loss.backward()"
    assert list(captured.names) == ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]
    assert captured.tensor.shape == () and all(p.grad is None for p in captured.names.values())
    with trace_backward(captured.names) as trace:
        captured.run()
    assert [r.fn for r in trace.records] == ["CrossEntropy", "LinearFn", "TanhFn", "LinearFn"]
    for name, p in captured.names.items():       # the trace saw the gradients backward() accumulated
        assert np.array_equal(trace.leaf_grad(p), p.grad._data), name


def test_trace_and_graph_commands_on_a_script(tmp_path, capsys, monkeypatch):
    (tmp_path / "my_mlp.py").write_text(SCRIPT)
    (tmp_path / "by_hand.py").write_text(BY_HAND)
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "my_mlp.py"]) == 0
    out = capsys.readouterr().out
    assert "backward of my_mlp.py:12: loss.backward() (the first .backward() the script calls)" in out
    assert "4 nodes" in out and "model.2.weight" in out and "after backward" not in out   # the loop stopped
    assert main(["trace", "by_hand.py", "--call", "step(torch.ones(4, 3))"]) == 0
    out = capsys.readouterr().out
    assert "backward of --call 'step(torch.ones(4, 3))'" in out and "MatMul" in out and "W (3, 2)" in out
    monkeypatch.setattr(graph_mod, "dot_program", lambda: None)
    assert main(["graph", "my_mlp.py"]) == 0
    svg = (tmp_path / "runs/graph/my_mlp.svg").read_text()
    assert "model.0.weight" in svg and "CrossEntropy" in svg and "loss.backward()" in svg
    assert main(["graph", "by_hand.py", "--call", "step(torch.ones(4, 3))", "-o", "h.dot"]) == 0
    assert "W\\n(3, 2)" in (tmp_path / "h.dot").read_text()
    capsys.readouterr()


@pytest.mark.parametrize("argv, message", [
    (["trace", "nope"], "argument EXAMPLE|FILE.py: 'nope' is neither an example"),
    (["trace", "missing.py"], "file not found: missing.py"),
    (["trace", "quiet.py"], "quiet.py ran to its end without calling .backward(); name what to differentiate "
                            "with --call EXPR"),
    (["trace", "by_hand.py", "--call", "W"], "--call 'W' called no .backward() and gave a leaf Tensor"),
    (["trace", "by_hand.py", "--call", "1 +"], "--call '1 +' is not a Python expression"),
    (["trace", "by_hand.py", "--call", "len('ab')"], "--call \"len('ab')\" called no .backward() and gave int"),
    (["trace", "gpt", "--call", "x"], "--call 'x' applies to a script (FILE.py), not to the example 'gpt'"),
    (["graph", "by_hand.py", "--composite"], "--composite applies to the examples, not to a script (by_hand.py)"),
])
def test_script_study_errors_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    (tmp_path / "by_hand.py").write_text(BY_HAND)
    (tmp_path / "quiet.py").write_text("import torch\nprint(torch.ones(2).sum().item())\n")
    monkeypatch.chdir(tmp_path)
    backward = tg.Tensor.backward
    assert main(argv) in (1, 2)
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert tg.Tensor.backward is backward


def test_a_scripts_own_error_shows_its_traceback(tmp_path, capsys, monkeypatch):
    (tmp_path / "bad.py").write_text("import torch\nx = torch.ones(2, requires_grad=True)\ny = x.foo()\n")
    (tmp_path / "ex.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "bad.py"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and 'File "bad.py", line 3' in err and "cli.py" not in err
    assert "AttributeError: 'Tensor' object has no attribute 'foo'" in err
    assert main(["graph", "ex.py"]) == 1
    assert "ex.py exited (sys.exit(3)) before calling .backward()" in capsys.readouterr().err


# =========================================================================== explain: every op

def test_explain_any_primitive_page():
    text = explain("matmul")
    assert text.startswith("MatMul: a primitive — ArrayFunction tinygrad_tx.ops.matmul.MatMul")
    assert "dL/dA = G @ Bᵀ" in text and "def forward(ctx" in text and "def backward(ctx" in text
    assert "twice differentiable: yes: its backward is written to run on Tensors too" in text
    assert "torch.matmul" in text
    errors = [float(m) for m in re.findall(r"vs torch\s+(\S+)", text)]
    assert len(errors) == 3 and max(errors) <= 1e-12
    assert explain("MatMul", use_torch=False) == explain("matmul", use_torch=False)
    tanh = explain("tanh", source=False)
    assert "def backward" not in tanh and "torch.tanh" in tanh
    closed = explain("SoftmaxClosedForm", source=False)
    assert "a closed form (rung 2 of a fused op)" in closed and "grad input vs torch" in closed
    assert "twice differentiable: yes, through its closed form SoftmaxClosedForm" in explain("softmax", source=False)
    assert "twice differentiable: yes, through its closed form GeluClosedForm" in explain("gelu", source=False, use_torch=False)
    assert "twice differentiable: no: once differentiable" in explain("FlashAttention", source=False, use_torch=False)
    assert "twice differentiable: yes" in explain("ScatterReduceProd", source=False, use_torch=False)
    assert "torch: not requested" in explain("sub", source=False, use_torch=False)
    assert "its backward raises, as torch's does" in explain("floor_divide", source=False)
    with pytest.raises(ValueError, match="unknown op 'nope'; explain knows: softmax, .* primitives"):
        explain("nope")


def test_every_op_of_the_engine_has_a_page():
    """Every ArrayFunction (no torch here: the pages and the check of our side only)."""
    from tinygrad_tx.viz.explain import primitives
    names = primitives()
    assert {"matmul", "tanh", "sum", "getitem", "softmaxclosedform"} <= set(names)
    assert "softmax" not in names                                  # the fused ops have their three rungs
    for key, classes in names.items():
        text = explain(key, use_torch=False)
        assert all(f"{c.__name__}: a " in text and "twice differentiable: " in text for c in classes), key


@pytest.mark.parametrize("op", ["cumsum", "squarederror", "maximum", "var", "sigmoid"])
def test_explain_primitives_agree_with_torch(op):
    text = explain(op, source=False)
    errors = [float(m) for m in re.findall(r"vs torch\s+(\S+)", text)]
    assert errors and max(errors) <= 1e-12, text


@pytest.mark.parametrize("name", ["gpt-block", "gpt", "layernorm", "attention"])
def test_builtin_drawing_routes_no_arrow_through_a_box(name):
    """Issue 35: long arrows were drawn straight through other boxes (in gpt-block the residual
    from x seemed to feed q = GetItem, Reshape and Permute). Every point of every arrow's path lies
    outside every box but its own two ends; each path starts at its input and ends on its consumer."""
    from tinygrad_tx.viz import render
    out, module, desc = example_graph(name)
    lay = render.layout(to_dot(out, module, title=desc))
    crossings, long_edges = [], 0
    for a, b in lay.edges:
        s, d = lay.nodes[a], lay.nodes[b]
        long_edges += d.rank - s.rank > 1
        points = render.route_points(lay.routes[(a, b)], steps=24)
        assert points[0] == pytest.approx((s.x, s.y + s.h / 2)) and points[-1] == pytest.approx((d.x, d.y - d.h / 2))
        for n in lay.nodes.values():
            if n.id in (a, b):
                continue
            if any(abs(x - n.x) < n.w / 2 - 0.5 and abs(y - n.y) < n.h / 2 - 0.5 for x, y in points):
                crossings.append((a, b, n.id))
    assert crossings == []
    if name == "gpt-block":
        assert long_edges > 0          # the case that went wrong is exercised
