"""``tinygrad_tx.autograd.gradcheck`` / ``gradgradcheck`` with torch's signatures: a right custom
backward passes, a wrong one is caught (GradcheckError, a RuntimeError, naming the input and the
worst element; False with raise_exception=False) exactly where torch's catches it; the testing
kit's array-level gradgradcheck; a PyTorch script with a custom Function, create_graph and
functional.hessian prints the same numbers through ``tinygrad-tx run``."""
from __future__ import annotations

import contextlib
import io
import re
import runpy
import sys
import textwrap

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from tinygrad_tx import cli
from tinygrad_tx.testing import GradcheckError as KitGradcheckError, gradgradcheck as kit_gradgradcheck

pytestmark = pytest.mark.cpu_only(reason="the same custom Functions run on torch as written (CPU tensors)")

A = np.array([0.3, -0.7, 1.2])


def square_fn(lib, factor=2.0, detach=False):
    """x² with a backward ``factor·g·x`` (wrong unless factor is 2); ``detach``: a backward whose
    first derivative is right but that hides x from the second."""
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return factor * g * (x.detach() if detach else x)
    return Square


def _x(lib):
    return lib.tensor(A, requires_grad=True)


@pytest.mark.parametrize("check", ["gradcheck", "gradgradcheck"])
@pytest.mark.parametrize("factor, detach", [(2.0, False), (3.0, False), (2.0, True)])
@pytest.mark.parametrize("fast_mode", [False, True])
def test_same_verdict_as_torch(check, factor, detach, fast_mode):
    verdicts = [getattr(lib.autograd, check)(square_fn(lib, factor, detach).apply, (_x(lib),), raise_exception=False,
                                             fast_mode=fast_mode)
                for lib in (torch, tg)]
    assert verdicts[0] == verdicts[1]
    # a backward off by a constant factor is still linear and self-consistent: gradgradcheck passes it
    assert verdicts[1] == (not detach if check == "gradgradcheck" else factor == 2.0)


def test_a_wrong_backward_raises_naming_the_input_and_the_worst_element():
    x, w = _x(tg), tg.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    with pytest.raises(tg.autograd.GradcheckError) as info:
        tg.autograd.gradcheck(lambda a, b: a * b + square_fn(tg, 3.0).apply(b), (x, w))
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "Jacobian mismatch for output 0 with respect to input 1" in msg
    assert re.search(r"The worst element: d output\[0\]\.flat\[2\] / d input\[1\]\.flat\[2\]: numerical 7\.2\d*, "
                     r"analytical 10\.2 ", msg), msg
    with pytest.raises(tg.autograd.GradcheckError, match="with respect to input 0"):
        tg.autograd.gradgradcheck(lambda a: square_fn(tg, detach=True).apply(a) * a, (x,))


def test_gradcheck_of_several_outputs_and_non_tensor_arguments():
    w = tg.tensor(np.array([[0.5, -1.0, 2.0]]), requires_grad=True)
    f = lambda a, k, b: ((a * b).tanh() * k, (a.exp() * b).sum())   # noqa: E731
    assert tg.autograd.gradcheck(f, (_x(tg), 2.0, w))
    assert tg.autograd.gradgradcheck(f, (_x(tg), 2.0, w))
    assert tg.autograd.gradgradcheck(lambda a: a.exp() * a, _x(tg), tg.tensor(np.ones(3)), eps=1e-6)


def test_gradcheck_needs_an_input_that_requires_grad():
    for lib in (torch, tg):
        with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
            lib.autograd.gradcheck(lambda a: a * 2, (lib.tensor(A),))


def test_the_kits_gradgradcheck_checks_second_derivatives():
    b = np.array([[1.0, 2.0, -0.5], [0.5, -1.0, 2.0]])
    assert kit_gradgradcheck(lambda x, w: (w * x).tanh() * x.exp(), [A, b])
    with pytest.raises(KitGradcheckError):
        kit_gradgradcheck(square_fn(tg, detach=True).apply, [A])


SCRIPT = textwrap.dedent("""
    import torch

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 3 * grad * x * x

    x = torch.tensor([0.5, -1.25, 2.0], dtype=torch.float64, requires_grad=True)
    y = (Cube.apply(x) * x.exp()).sum()
    g, = torch.autograd.grad(y, x, create_graph=True)
    h, = torch.autograd.grad((g * g).sum(), x)
    H = torch.autograd.functional.hessian(lambda t: (Cube.apply(t) * t.tanh()).sum(), x)
    print([round(v, 10) for v in g.tolist()])
    print([round(v, 10) for v in h.tolist()])
    print([[round(v, 10) for v in row] for row in H.tolist()])
    print(torch.autograd.gradcheck(Cube.apply, (x,)), torch.autograd.gradgradcheck(Cube.apply, (x,)))
""")


def test_a_pytorch_script_runs_through_tinygrad_tx_run(tmp_path, capsys):
    script = tmp_path / "custom_fn.py"
    script.write_text(SCRIPT)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        runpy.run_path(str(script), run_name="__main__")   # under torch
    expected = buf.getvalue()
    assert "torch" in sys.modules and expected.count("\n") == 4
    assert cli.main(["run", str(script)]) == 0
    assert capsys.readouterr().out == expected
