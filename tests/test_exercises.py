"""The exercise ladder (``tinygrad-tx exercise``): every rung's reference solution passes the
checker, its template is that solution without the backward, and every recognised mistake,
planted in a small wrong Function, is named by the diagnosis."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tinygrad_tx.autograd import ArrayFunction
from tinygrad_tx.exercises import LADDER, check, load_function, main, register_exercise_commands
from tinygrad_tx.exercises import solutions as S
from tinygrad_tx.exercises.checker import close, errors
from tinygrad_tx.exercises.templates import solution_text, template
from tinygrad_tx.gradcheck import gradcheck
from tinygrad_tx.tensor import Tensor

N = 20   # hypothesis cases per check: each check stays well under a second


def planted(base, backward):
    """A Function with ``base``'s forward and a (wrong) ``backward``; named as the exercise's class."""
    return type(base.__name__, (base,), {"backward": staticmethod(backward)})


def failed(name, fn):
    report = check(name, fn, max_examples=N)
    assert not report.passed, report.text
    return report


# --------------------------------------------------------------------------- every rung

@pytest.mark.parametrize("name", list(LADDER))
def test_reference_solution_passes(name):
    report = check(name, LADDER[name].solution, max_examples=N)
    assert report.passed, report.text
    assert report.examples == N
    if LADDER[name].finite_differences:
        assert "finite differences (tinygrad_tx.gradcheck) agree" in report.text


@pytest.mark.parametrize("name", list(LADDER))
def test_template_is_the_solution_without_its_backward(name, tmp_path):
    ex = LADDER[name]
    path = tmp_path / f"exercise_{name}.py"
    path.write_text(template(ex, str(path)))
    text = path.read_text()
    assert "raise NotImplementedError" in text and all(h in text for h in ex.hints)
    assert S.__name__ not in text                                    # self-contained
    assert ex.solution.backward.__doc__.splitlines()[0].strip() not in text   # the answer is not there
    fn = load_function(path, ex)
    report = check(ex, fn, max_examples=3)
    assert not report.passed and report.tags == {"*": "not_implemented"}
    assert "backward is not written yet" in report.text
    fn.backward = ex.solution.backward          # the forward of the template is the solution's
    assert check(ex, fn, max_examples=5).passed


@pytest.mark.parametrize("name", [n for n, ex in LADDER.items() if ex.finite_differences])
def test_solutions_against_finite_differences(name):
    """Every reference Function (MulSolution, DivSolution, ... GPTBlockSolution) against
    central differences, independent of the library's gradient."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    ex = LADDER[name]

    @settings(max_examples=4, database=None, deadline=None, derandomize=True)
    @given(st.composite(lambda draw: ex.draw(draw, st))())
    def prop(case):
        names = list(case.arrays)
        gradcheck(lambda *ts: ex.call(ex.solution, dict(zip(names, ts)), case),
                  [np.ascontiguousarray(case.arrays[n]) for n in names])

    prop()


def test_amax_ties_share_the_gradient():
    """max has kinks at its ties (no finite differences): the rule itself, by hand."""
    x = Tensor(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 3.0]]), requires_grad=True)
    S.AmaxSolution.apply(x, dim=1).backward(np.array([2.0, 5.0]))
    assert np.array_equal(x.grad.numpy(), [[0, 1, 1], [0, 0, 5]])


# --------------------------------------------------------------------------- recognised mistakes

def test_missing_term_softmax():
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * g
    r = failed("softmax", planted(S.SoftmaxSolution, backward))
    assert r.tags == {"x": "missing_term"} and "missing the -⟨g, y⟩ term" in r.text
    assert "smallest failing case" in r.text and "largest error" in r.text


def test_missing_term_layer_norm():
    def backward(ctx, g):
        xhat, rstd, w = ctx.saved_tensors
        gh = g * w
        d = xhat.shape[-1]
        return (rstd * (gh - gh.mean(-1, keepdims=True)), (g * xhat).reshape(-1, d).sum(0),
                g.reshape(-1, d).sum(0))
    r = failed("layer_norm", planted(S.LayerNormSolution, backward))
    assert r.tags == {"x": "missing_term"}, r.text
    assert "missing the x̂ ∘ mean(ĝ ∘ x̂) term" in r.text
    assert "dL/dweight (" in r.text and "correct" in r.text


def test_variance_with_the_wrong_correction_batch_norm():
    def backward(ctx, g):
        xhat, r, w = ctx.saved_tensors
        axes, cs = ctx.axes, ctx.cs
        m = xhat.size // xhat.shape[1]
        d = g * w.reshape(cs)
        dx = (r / m) * (m * d - d.sum(axes, keepdims=True) - xhat * (d * xhat).sum(axes, keepdims=True) * m / (m - 1))
        return dx, (g * xhat).sum(axes), g.sum(axes)
    r = failed("batch_norm", planted(S.BatchNormSolution, backward))
    assert r.tags == {"x": "known_mistake"} and "wrong correction" in r.text


def test_missing_term_attention_names_the_input():
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        s = 1 / np.sqrt(q.shape[-1])
        dp = g @ np.swapaxes(v, -1, -2)
        ds = p * dp                                   # without -rowsum(dP ∘ P)
        return s * ds @ k, s * np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ g
    r = failed("attention", planted(S.AttentionSolution, backward))
    assert r.tags.get("q") == "missing_term" and "dL/dv" in r.text and "dL/dq" in r.text


def test_forgot_one_over_n():
    def backward(ctx, g):
        return np.broadcast_to(np.expand_dims(g, ctx.dim), ctx.shape)   # mean without / N
    r = failed("mean", planted(S.MeanSolution, backward))
    assert r.tags == {"x": "constant_factor"}, r.text
    assert "times too large: a forgotten 1/" in r.text and "the size of the reduced dimension dim" in r.text


def test_forgot_one_over_n_cross_entropy():
    def backward(ctx, g):
        p, target = ctx.saved_tensors
        dz = p.copy()
        dz[np.arange(len(p)), target] -= 1
        return dz * g, None
    r = failed("cross_entropy", planted(S.CrossEntropySolution, backward))
    assert r.tags == {"z": "constant_factor"} and "N, the number of positions the mean runs over" in r.text, r.text


def test_gpt_block_missing_residual():
    def backward(ctx, g):
        grads = list(S.GPTBlockSolution.backward(ctx, g))
        grads[0] = grads[0] - g                   # the straight path of both residuals forgotten
        return tuple(grads)
    r = failed("gpt_block", planted(S.GPTBlockSolution, backward))
    assert r.tags == {"x": "missing_term"} and "missing the residual path" in r.text
    assert "dL/dw_attn" in r.text and "also wrong on a larger case" in r.text


def test_off_by_two():
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return 2 * g * (1 - y * y)
    r = failed("tanh", planted(S.TanhSolution, backward))
    assert r.tags == {"x": "constant_factor"} and "2 times too large" in r.text, r.text


def test_forgot_the_attention_scale():
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        dq, dk, dv = S.attention_backward(g, q, k, v, p)
        return dq * np.sqrt(q.shape[-1]), dk * np.sqrt(q.shape[-1]), dv
    r = failed("attention", planted(S.AttentionSolution, backward))
    assert r.tags["q"] == "constant_factor" and "√E" in r.text, r.text


def test_sign_flip():
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g / b, g * a / (b * b)
    r = failed("div", planted(S.DivSolution, backward))
    assert r.tags == {"b": "sign_flip"} and "a sign flip" in r.text and "dL/da" in r.text


def test_transpose_square():
    def backward(ctx, g):
        ga, gb = S.MatMulSolution.backward(ctx, g)
        return ga, np.swapaxes(gb, -1, -2) if gb.ndim >= 2 else gb
    r = failed("matmul", planted(S.MatMulSolution, backward))
    assert r.tags.get("b") == "transpose", r.text
    assert "a transpose" in r.text


def test_transpose_returned_in_the_transposed_shape():
    class MM(ArrayFunction):     # 2-D only, so that every drawn case is (n, k) @ (k, m)
        forward = S.MatMulSolution.forward

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return b @ g.T, a.T @ g           # (G Bᵀ)ᵀ = B Gᵀ: dL/dA transposed
    ex = LADDER["matmul"]
    from tinygrad_tx.exercises.checker import diagnose, evaluate
    from tinygrad_tx.exercises.ladder import Case
    rng = np.random.default_rng(0)
    case = Case({"a": rng.standard_normal((2, 3)), "b": rng.standard_normal((3, 4))}, {}, 0)
    r = diagnose(ex, MM, evaluate(ex, MM, case))
    assert r.tags == {"a": "transpose"} and "you returned shape (3, 2)" in r.text


def test_missing_factor_and_known_mistakes_of_pow():
    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        return g * b * a ** (b - 1), g * a ** b      # forgot log a
    r = failed("pow", planted(S.PowSolution, backward))
    assert r.tags == {"b": "known_mistake"} and "forgot log a" in r.text


def test_repeated_indices_assigned_instead_of_accumulated():
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        dx = np.zeros(ctx.shape)
        dx[idx] = g
        return dx, None
    r = failed("getitem", planted(S.GetItemSolution, backward))
    assert r.tags == {"x": "known_mistake"} and "np.add.at" in r.text


def test_max_ties_all_get_full_gradient():
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return (x == np.expand_dims(y, ctx.dim)) * np.expand_dims(g, ctx.dim)
    r = failed("max", planted(S.AmaxSolution, backward))
    assert r.tags == {"x": "known_mistake"} and "tied" in r.text and "finite differences are meaningless" in r.text


def test_right_only_for_unbroadcast_shapes():
    def backward(ctx, g):                 # "undoes broadcasting" itself, with a mean instead of a sum
        a, b = ctx.saved_tensors

        def reduce(grad, shape):
            lead = grad.ndim - len(shape)
            axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and grad.shape[lead + i] > 1)
            return grad.mean(axis=axes).reshape(shape) if axes else grad
        return reduce(g * b, a.shape), reduce(g * a, b.shape)
    r = failed("mul", planted(S.MulSolution, backward))
    assert set(r.tags.values()) == {"broadcast"} and "right only for unbroadcast shapes" in r.text, r.text


def test_right_only_for_contiguous_inputs():
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        flat = y.ravel(order="K")         # memory order: a transposed reading of a column-major y
        return g * flat.reshape(y.shape)
    r = failed("exp", planted(S.ExpSolution, backward))
    assert r.tags == {"x": "noncontiguous"} and "right only for contiguous inputs" in r.text
    assert "non-contiguous inputs" in r.text


def test_wrong_dtype():
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return (g * (1 - y * y)).astype(np.float32)
    r = failed("tanh", planted(S.TanhSolution, backward))
    assert r.tags == {"x": "dtype"} and "dtype float32 for a float64 input" in r.text


def test_input_mutated_in_place():
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        x **= -1                              # writes into the caller's x
        return g * x
    r = failed("log", planted(S.LogSolution, backward))
    assert r.tags == {"x": "mutated"} and "x was changed in place" in r.text


def test_cotangent_mutated_in_place():
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        g *= y
        return g
    r = failed("exp", planted(S.ExpSolution, backward))
    assert r.tags == {"g (the incoming gradient)": "mutated"}
    # the values are right, so the report must not contradict itself (issue 35: it said "correct",
    # then "yet the library's gradient differs: check the forward")
    assert "dL/dx (" in r.text and ": correct" in r.text
    assert "yet the library's gradient differs" not in r.text
    assert "your gradients' values are right" in r.text


def test_right_only_through_sum():
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return 1 - y * y                      # ignores g
    r = failed("tanh", planted(S.TanhSolution, backward))
    assert r.tags == {"x": "ignores_g"} and "right only through .sum()" in r.text


def test_backward_raises_wrong_count_none_and_shape():
    def raises(ctx, g):
        (y,) = ctx.saved_tensors
        return g @ y.T @ y                    # a matmul with nonsense shapes
    r = failed("exp", planted(S.ExpSolution, raises))
    assert r.tags == {"*": "raised"} and "backward raised" in r.text

    def count(ctx, g):
        a, b = ctx.saved_tensors
        return g * b
    r = failed("mul", planted(S.MulSolution, count))
    assert r.tags == {"*": "count"} and "returned 1 gradient for the 2 positional arguments" in r.text

    def none(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, None
    r = failed("mul", planted(S.MulSolution, none))
    assert r.tags == {"*": "none"} and "None for dL/db" in r.text

    def keepdim(ctx, g):
        return np.expand_dims(g, ctx.dim)     # not broadcast back to x's shape
    r = failed("sum", planted(S.SumSolution, keepdim))
    assert set(r.tags.values()) == {"shape"} and "wrong shape" in r.text


def test_unrecognised_mistake_still_located():
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / x + 0.1 * x
    r = failed("log", planted(S.LogSolution, backward))
    assert r.tags == {"x": "unrecognised"} and "not a mistake I recognise" in r.text
    assert "finite differences (tinygrad_tx.gradcheck) disagree too" in r.text


def test_checker_helpers():
    assert close(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]))
    assert not close(np.array([1.0, 2.0]), np.array([1.0, 2.001]))
    assert not close(np.zeros(2), np.zeros(3))
    e = errors(np.array([[0.0, 1.0], [5.0, 3.0]]), np.array([[0.0, 1.0], [2.0, 3.0]]))
    assert e["index"] == (1, 0) and e["max_abs"] == 3.0 and e["mine"] == 5.0 and e["true"] == 2.0
    with pytest.raises(TypeError, match="subclass of tinygrad_tx.autograd.ArrayFunction"):
        check("exp", object)


# --------------------------------------------------------------------------- the command line

def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_start_check_list_solution(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    state = tmp_path / "progress.json"
    code, out, _ = run(capsys, "list", "--state", str(state))
    assert code == 0 and "0 of 21 passed" in out and "next: tinygrad-tx exercise start mul" in out
    code, out, _ = run(capsys, "start", "softmax", "--state", str(state))
    assert code == 0 and (tmp_path / "exercise_softmax.py").is_file()
    code, out, err = run(capsys, "start", "softmax", "--state", str(state))
    assert code == 1 and "exists" in err                              # never overwrites work
    code, out, _ = run(capsys, "check", "softmax", "--state", str(state), "--max-examples", "5")
    assert code == 1 and "not written yet" in out
    f = tmp_path / "exercise_softmax.py"
    f.write_text(f.read_text().replace('raise NotImplementedError("write the backward of softmax")',
                                       "(y,) = ctx.saved_tensors\n        return y * g"))
    code, out, _ = run(capsys, "check", "softmax", "--state", str(state), "--max-examples", "10")
    assert code == 1 and "missing the -⟨g, y⟩ term" in out
    f.write_text(f.read_text().replace("return y * g", "return y * (g - (g * y).sum(axis=ctx.dim, keepdims=True))"))
    code, out, _ = run(capsys, "check", "softmax", str(f), "--state", str(state), "--max-examples", "10")
    assert code == 0 and "PASSED" in out and "exercise solution softmax" in out
    saved = json.loads(state.read_text())["exercises"]["softmax"]
    assert saved["passed"] and saved["checks"] == 3 and saved["last"] == "passed"
    code, out, _ = run(capsys, "list", "--state", str(state))
    assert "1 of 21 passed" in out and "[x] 14. softmax" in out
    code, out, _ = run(capsys, "solution", "softmax", "--state", str(state))
    assert code == 0 and "def softmax_composite" in out and "class SoftmaxFn(ArrayFunction)" in out and "class SoftmaxSolution(ArrayFunction)" in out
    assert "you have not passed" not in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exercise_softmax.py", "progress.json"]  # no temp files


def test_cli_default_state_in_the_current_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "exercise", "solution", "layer_norm")
    assert code == 0 and "you have not passed layer_norm yet" in out and "def layer_norm_backward" in out
    state = json.loads((tmp_path / ".tinygrad-tx-exercises.json").read_text())
    assert state["exercises"]["layer_norm"] == {"solution_seen": True}
    code, out, _ = run(capsys, "list")
    assert "solution seen" in out


def test_cli_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "check", "nosuch")
    assert code == 2 and "invalid choice: 'nosuch'" in err
    code, _, err = run(capsys, "check", "exp", "missing.py")
    assert code == 1 and "missing.py" in err
    (tmp_path / "bad.py").write_text("def (:\n")
    code, _, err = run(capsys, "check", "exp", "bad.py")
    assert code == 1 and "syntax error at line 1" in err
    (tmp_path / "other.py").write_text("x = 1\n")
    code, _, err = run(capsys, "check", "exp", "other.py")
    assert code == 1 and "expected a Function subclass named Exp" in err
    (tmp_path / "broken.json").write_text("{not json")
    code, _, err = run(capsys, "list", "--state", "broken.json")
    assert code == 1 and "not valid JSON" in err
    code, _, err = run(capsys, "check", "exp", "--max-examples", "0")
    assert code == 2 and "positive integer" in err


# --------------------------------------------------------------------------- hostile solutions (issue 23)

MARKER = 'raise NotImplementedError("write the backward of exp")'


def _solution(tmp_path, capsys, name, backward=None, extra=""):
    """exercise_exp.py as 'start' writes it, its backward replaced by ``backward`` (code lines)."""
    assert run(capsys, "start", "exp", "-o", str(tmp_path / "t.py"), "--state", str(tmp_path / "s.json"))[0] == 0
    src = (tmp_path / "t.py").read_text()
    assert MARKER in src
    if backward is not None:
        src = src.replace(MARKER, backward.replace("\n", "\n        "))
    path = tmp_path / name
    path.write_text(src + extra)
    return path


@pytest.mark.parametrize("backward, said", [
    ("while True:\n    pass", "did not return within 1 s (an endless loop?)"),
    ("try:\n    while True:\n        pass\nexcept Exception:\n    return g", "did not return within 1 s"),
    ("import sys\nsys.exit(0)", "called sys.exit(0)"),
    ("import os\nos._exit(0)", "called sys.exit(0) (or os._exit)"),
])
def test_a_backward_that_hangs_or_exits_is_a_failed_check(tmp_path, capsys, backward, said):
    """A `while True` hung the checker; sys.exit(0) / os._exit(0) in the solution gave status 0 and no output."""
    path = _solution(tmp_path, capsys, "mine.py", backward)
    code, out, err = run(capsys, "check", "exp", str(path), "--state", str(tmp_path / "s.json"), "--timeout", "1",
                         "--max-examples", "5")
    assert code == 1 and "exp: FAILED." in out and f"your backward on x: " in out and said in out, out + err
    assert json.loads((tmp_path / "s.json").read_text())["exercises"]["exp"]["last"] == "failed: stopped"
    assert check("exp", S.ExpSolution, max_examples=3, timeout=1).passed     # the limit is lifted after the check


def test_a_file_that_exits_at_import_is_an_error(tmp_path, capsys):
    path = _solution(tmp_path, capsys, "mine.py", extra="\nimport os\nos._exit(0)\n")
    code, _, err = run(capsys, "check", "exp", str(path), "--state", str(tmp_path / "s.json"))
    assert code == 1 and f"{path}: importing the file called sys.exit(0)" in err


def test_a_directory_or_a_binary_file_is_named_as_such(tmp_path, capsys):
    """A directory was "file not found"; a binary file "syntax error at line None"."""
    state = str(tmp_path / "s.json")
    (tmp_path / "d").mkdir()
    code, _, err = run(capsys, "check", "exp", str(tmp_path / "d"), "--state", state)
    assert code == 1 and "Is a directory" in err and str(tmp_path / "d") in err and "not found" not in err
    for name, data, said in [("elf.py", b"\x7fELF\x02\x01\x00\x00binary", "byte 6 is b'\\x00'"),
                             ("img.py", b"\x89PNG\r\n\x1a\n\xff\xd8", "byte 0 is b'\\x89'")]:
        (tmp_path / name).write_bytes(data)
        code, _, err = run(capsys, "check", "exp", str(tmp_path / name), "--state", state)
        assert code == 1 and f"{tmp_path / name}: not a Python text file ({said}" in err, err
        assert "line None" not in err
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")     # declared: Python decodes it
    code, _, err = run(capsys, "check", "exp", str(tmp_path / "latin.py"), "--state", state)
    assert code == 1 and "expected a Function subclass named Exp" in err


def test_an_unwritable_state_names_the_users_path(tmp_path, capsys, monkeypatch):
    """A read-only --state directory named the internal temporary file in the error."""
    import tempfile

    def denied(prefix, suffix, dir):
        raise PermissionError(13, "Permission denied", os.path.join(dir, prefix + "abc123" + suffix))
    monkeypatch.setattr(tempfile, "mkstemp", denied)
    state = tmp_path / "ro" / "progress.json"
    code, _, err = run(capsys, "solution", "exp", "--state", str(state))
    assert code == 1 and f"cannot write the progress file {state}: Permission denied" in err
    assert "abc123" not in err and ".tmp" not in err
    code, _, err = run(capsys, "solution", "exp", "--state", str(tmp_path))
    assert code == 1 and "Is a directory" in err and str(tmp_path) in err


def test_register_exercise_commands_into_a_parser():
    import argparse
    parser = argparse.ArgumentParser(prog="tinygrad-tx")
    sub = parser.add_subparsers(dest="command")
    register_exercise_commands(sub)
    args = parser.parse_args(["exercise", "check", "gelu", "mine.py", "--seed", "3"])
    assert (args.action, args.name, args.file, args.seed, args.max_examples) == ("check", "gelu", "mine.py", 3, 30)
    assert callable(args.func)


def test_solution_shows_every_existing_rung():
    text = solution_text(LADDER["layer_norm"])
    assert "def layer_norm_composite" in text and "class LayerNormFn(ArrayFunction)" in text
    assert "(3) the library's default (fused) Function: tinygrad_tx.functional.normalization:LayerNormFn" in text
    try:
        import tinygrad_tx.functional.closed_form  # noqa: F401
        assert "(2) the plain closed-form Function" in text
    except ModuleNotFoundError:
        assert "(2)" not in text
    assert "class TransformerBlock" in solution_text(LADDER["gpt_block"])


def test_import_changes_nothing_process_wide():
    """Importing the package sets no NumPy error state and does not import hypothesis (only check does)."""
    import subprocess
    import sys
    from pathlib import Path
    code = ("import sys, numpy as np; before = np.geterr(); import tinygrad_tx.exercises; "
            "assert np.geterr() == before; assert 'hypothesis' not in sys.modules, 'hypothesis imported'")
    root = str(Path(__file__).resolve().parents[1])
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": root})


# --------------------------------------------------------------------------- the reference Functions against PyTorch

def _torch_gpt_block(t, c):
    import torch
    import torch.nn.functional as TF
    x = t["x"]
    b, n, ch = x.shape
    h = c.extra["n_head"]
    a1 = TF.layer_norm(x, (ch,), t["ln1_w"], t["ln1_b"])
    q, k, v = (p.reshape(b, n, h, ch // h).transpose(1, 2) for p in (a1 @ t["w_attn"]).split(ch, dim=-1))
    o = TF.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, n, ch)
    x = x + o @ t["w_proj"]
    a2 = TF.layer_norm(x, (ch,), t["ln2_w"], t["ln2_b"])
    return x + TF.gelu(a2 @ t["w_fc"], approximate="tanh") @ t["w_out"]


def _torch_twin(name):
    import torch
    import torch.nn.functional as TF

    def long(a, like):
        return torch.as_tensor(a, dtype=torch.long, device=like.device)
    return {
        "mul": lambda t, c: t["a"] * t["b"], "div": lambda t, c: t["a"] / t["b"], "pow": lambda t, c: t["a"] ** t["b"],
        "exp": lambda t, c: t["x"].exp(), "log": lambda t, c: t["x"].log(), "tanh": lambda t, c: t["x"].tanh(),
        "tanh_backward": lambda t, c: torch.autograd.grad(t["x"].tanh(), t["x"], t["g"], create_graph=True)[0],
        "sum": lambda t, c: t["x"].sum(c.extra["dim"]), "mean": lambda t, c: t["x"].mean(c.extra["dim"]),
        "matmul": lambda t, c: t["a"] @ t["b"], "max": lambda t, c: t["x"].amax(c.extra["dim"]),
        "getitem": lambda t, c: t["x"][long(c.extra["idx"], t["x"])],
        "embedding": lambda t, c: TF.embedding(long(c.extra["ids"], t["weight"]), t["weight"]),
        "softmax": lambda t, c: TF.softmax(t["x"], c.extra["dim"]),
        "log_softmax": lambda t, c: TF.log_softmax(t["x"], c.extra["dim"]),
        "cross_entropy": lambda t, c: TF.cross_entropy(t["z"], long(c.extra["target"], t["z"])),
        "layer_norm": lambda t, c: TF.layer_norm(t["x"], (t["x"].shape[-1],), t["weight"], t["bias"], c.extra["eps"]),
        "batch_norm": lambda t, c: TF.batch_norm(t["x"], None, None, t["weight"], t["bias"], training=True,
                                                 eps=c.extra["eps"]),
        "gelu": lambda t, c: TF.gelu(t["x"], approximate="tanh"),
        "attention": lambda t, c: TF.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=True),
        "gpt_block": _torch_gpt_block,
    }[name]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(LADDER))
def test_solutions_against_torch(name, dtype):
    """Each reference Function against PyTorch: output and every input's gradient with a random
    cotangent (tests/parity.py::check_parity; float64 to 1e-10, float32 within torch's own error)."""
    pytest.importorskip("torch")
    from hypothesis import assume, given, settings
    from hypothesis import strategies as st

    from tests.parity import check_parity
    from tinygrad_tx.exercises.checker import run_truth
    ex, twin = LADDER[name], _torch_twin(name)

    @settings(max_examples=4, database=None, deadline=None, derandomize=True)
    @given(st.composite(lambda draw: ex.draw(draw, st))())
    def prop(case):
        names = list(case.arrays)
        out, _ = run_truth(ex, case)
        _, truth = run_truth(ex, case, np.ones(out.shape))
        assume(all(np.any(truth[n]) for n in names))   # no gradient that is 0 by symmetry (softmax of one entry)
        check_parity(lambda *ts: ex.call(ex.solution, dict(zip(names, ts)), case),
                     lambda *ts: twin(dict(zip(names, ts)), case), *[case.arrays[n] for n in names],
                     dtype=dtype, name=f"exercise {ex.solution.__name__}")

    prop()


def test_readme_exercise_commands_run(tmp_path, capsys, monkeypatch):
    """The commands of the README's exercise section, run in a scratch directory, in order."""
    import re
    import shlex
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Learn backprop by writing it: exercises", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = [shlex.split(line.split("#", 1)[0]) for line in block.splitlines() if line.strip()]
    assert [c[:3] for c in commands] == [["tinygrad-tx", "exercise", a] for a in ("list", "start", "check", "solution")]
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        code = main(argv[1:] + (["--max-examples", "3"] if argv[2] == "check" else []))
        assert code == (1 if argv[2] == "check" else 0), argv       # the fresh file's backward is not written
    assert "backward is not written yet" in capsys.readouterr().out


def test_seed_draws_another_fixed_set():
    a = check("softmax", S.SoftmaxSolution, max_examples=5, seed=1)
    b = check("softmax", S.SoftmaxSolution, max_examples=5, seed=1)
    assert a.passed and b.passed and a.text == b.text


# --------------------------------------------------------------------------- wrong axes, batched .T, the learner's line

def test_softmax_inner_product_over_the_wrong_axis():
    """⟨g, y⟩ summed over another axis than dim (keepdims kept, so the shapes fit): named, not
    'not a mistake I recognise'."""
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        wrong = 0 if ctx.dim % y.ndim != 0 else y.ndim - 1
        return y * (g - (g * y).sum(axis=wrong, keepdims=True))
    r = failed("softmax", planted(S.SoftmaxSolution, backward))
    assert r.tags == {"x": "wrong_axis"}, r.text
    assert "over the wrong axis" in r.text and "not a mistake I recognise" not in r.text


def test_log_softmax_sum_over_the_wrong_axis():
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        wrong = 0 if ctx.dim % y.ndim != 0 else y.ndim - 1
        return g - np.exp(y) * g.sum(axis=wrong, keepdims=True)
    fn = planted(S.LogSoftmaxSolution, backward)
    r = failed("log_softmax", fn)
    assert r.tags == {"x": "wrong_axis"}, r.text


def test_layer_norm_means_over_the_wrong_axis():
    """dL/dx with both of its means taken over axis 0 instead of the normalised last axis."""
    from tinygrad_tx.exercises.checker import classify, evaluate
    from tinygrad_tx.exercises.ladder import Case
    ex = LADDER["layer_norm"]
    rng = np.random.default_rng(3)
    case = Case({"x": rng.standard_normal((3, 4)), "weight": rng.standard_normal(4), "bias": rng.standard_normal(4)},
                {"eps": 1e-5}, 3)
    oc = evaluate(ex, S.LayerNormSolution, case)
    x, w, eps = case.arrays["x"], case.arrays["weight"], 1e-5
    mean = lambda a: a.mean(axis=0, keepdims=True)                   # noqa: E731 - the planted mistake
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    r, xh, gh = 1 / np.sqrt(var + eps), (x - mu) / np.sqrt(var + eps), oc.g * w
    mine = r * (gh - mean(gh) - xh * mean(gh * xh))
    LN = planted(S.LayerNormSolution, lambda ctx, g: (mine,) + tuple(S.LayerNormSolution.backward(ctx, g))[1:])
    wrong = evaluate(ex, LN, case)
    assert wrong.wrong == ["x"] and classify(ex, LN, [wrong], "x")[0] == "wrong_axis"


def test_batched_transpose_with_dot_T_is_named_at_the_learners_line():
    """`.T` on a batched operand reverses every axis: NumPy raises inside matmul, and the report
    names the learner's own line (not numpy's) and the fix, swapaxes(-1, -2)."""
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        if a.ndim < 3 and b.ndim < 3:
            return S.MatMulSolution.backward(ctx, g)
        return np.matmul(g, b.T), np.matmul(a.T, g)    # the planted line
    r = failed("matmul", planted(S.MatMulSolution, backward))
    assert r.tags.get("*") == "batched_transpose" or "batched_transpose" in r.tags.values(), r.text
    assert "test_exercises.py" in r.text and "np.matmul(g, b.T)" in r.text, r.text
    assert "numeric.py" not in r.text, r.text
    assert "np.swapaxes(x, -1, -2)" in r.text


def test_an_error_inside_numpy_is_reported_at_the_learners_line():
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return np.tensordot(g, y, axes=([0, 1, 2, 3, 4], [0, 1, 2, 3, 4]))   # raises inside numpy
    r = failed("tanh", planted(S.TanhSolution, backward))
    line = next(ln for ln in r.text.splitlines() if "backward raised" in ln)
    assert "of test_exercises.py: return np.tensordot(g, y" in line and "numeric.py" not in line, line


def test_progress_is_printed_during_a_long_check(capsys, monkeypatch):
    """A check that runs longer than PROGRESS_AFTER seconds says what it is doing on stderr."""
    import time
    from tinygrad_tx.exercises import checker
    monkeypatch.setattr(checker, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(checker, "PROGRESS_EVERY", 0.05)

    calls = []

    def backward(ctx, g):
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.2)          # one slow case: the progress thread speaks meanwhile
        (y,) = ctx.saved_tensors
        return g * (1 - y * y) * 2
    report = check("tanh", planted(S.TanhSolution, backward), max_examples=N, progress=True)
    err = capsys.readouterr().err
    assert not report.passed and "exercise check tanh:" in err and "cases" in err, err
    quiet = check("tanh", planted(S.TanhSolution, backward), max_examples=3)
    assert not quiet.passed and capsys.readouterr().err == ""
