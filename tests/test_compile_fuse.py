"""``tinygrad_tx.compile(fn, fuse=True)``: chains of elementwise steps of the recorded program run as
generated C loops. Training steps of the tutorial GPT judged against torch (float64 to 1e-10;
float32 within the kit's rule: our error against a float64 oracle at most 4x torch-float32's);
NaN/Inf behave as eager; the bias add + GELU chain is one kernel; without kernels, fuse does
nothing."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import reference
import tinygrad_tx as tg
import tinygrad_tx.nn.functional as F
from reference.testing import DEVICE
from tinygrad_tx import kernels, nn, optim
from tinygrad_tx.models import GPTLanguageModel
from tinygrad_tx.testing.compare import check_f32, rel_err

needs_cc = pytest.mark.skipif(not kernels.mode().startswith("c ("), reason="C kernels off (no compiler)")


def _groups(m):
    return [{"params": [p for p in m.parameters() if p.ndim >= 2], "weight_decay": 0.1},
            {"params": [p for p in m.parameters() if p.ndim < 2], "weight_decay": 0.0}]


def _batches(n, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, 11, (3, 8)), rng.integers(0, 11, (3, 8))) for _ in range(n)]


def _ours(dtype, batches, fuse=True, compiled=True, dropout=0.0, weights=None):
    """AdamW steps of the tutorial GPT (tied embedding, weight decay on matrices) under
    compile(fuse=...); (losses, parameters, gradients, the compiled function)."""
    tg.manual_seed(0)
    model = GPTLanguageModel(11, d_model=16, n_heads=2, n_layers=2, block_size=8, dropout=dropout)
    if weights is not None:
        model.load_state_dict({k: tg.tensor(v) for k, v in weights.items()})
    model = model.double() if dtype == np.float64 else model
    opt = optim.AdamW(_groups(model), lr=3e-3)

    def step(x, y):
        opt.zero_grad()
        loss = model(x, y)[1]
        loss.backward()
        opt.step()
        return loss

    fn = tg.compile(step, fuse=fuse) if compiled else step
    tg.manual_seed(7)
    losses = [fn(tg.tensor(x), tg.tensor(y))._data.astype(np.float64) for x, y in batches]
    return (np.array(losses), [p._data.astype(np.float64) for p in model.parameters()],
            [p.grad._data.astype(np.float64) for p in model.parameters()], fn)


def _torch(dtype, batches, weights):
    twin = reference.GPTLanguageModel(11, d_model=16, n_heads=2, n_layers=2, block_size=8, dropout=0.0)
    twin = twin.to(dtype).to(DEVICE)
    twin.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float32)).to(dtype).to(DEVICE)
                          for k, v in weights.items()})
    topt = torch.optim.AdamW(_groups(twin), lr=3e-3)
    losses = []
    for x, y in batches:
        topt.zero_grad()
        loss = twin(torch.from_numpy(x).to(DEVICE), torch.from_numpy(y).to(DEVICE))[1]
        loss.backward()
        topt.step()
        losses.append(loss.item())
    return (np.array(losses), [p.detach().cpu().double().numpy() for p in twin.parameters()],
            [p.grad.detach().cpu().double().numpy() for p in twin.parameters()])


def _weights():
    tg.manual_seed(0)
    m = GPTLanguageModel(11, d_model=16, n_heads=2, n_layers=2, block_size=8, dropout=0.0)
    return {k: np.array(v) for k, v in m.state_dict().items()}


@needs_cc
def test_gpt_fused_training_steps_float64_match_torch():
    """Four AdamW steps of the float64 GPT under compile(fuse=True): losses, gradients and
    parameters within 1e-10 of torch's; the replays ran fused kernels (bias add + GELU, bias add +
    residual add, GELU's backward, ...)."""
    batches, weights = _batches(4), _weights()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses, params, grads, fn = _ours(np.float64, batches, weights=weights)
    t_losses, t_params, t_grads = _torch(torch.float64, batches, weights)
    assert fn.eager_reason is None and sum(map(len, fn.programs.values())) == 1
    assert "fused" in fn.code and "bias_add_gelu" in fn.code and fn.kernels.count("void fused") >= 4
    assert rel_err(losses, t_losses) <= 1e-10
    for a, b in zip(params + grads, t_params + t_grads):
        assert np.abs(b).max() > 0
        assert rel_err(a, b) <= 1e-10


@needs_cc
def test_gpt_fused_training_steps_float32_within_torchs_float32_error():
    """The same in float32: each loss, gradient and parameter's error against torch-float64 (the
    oracle, from the same float32 weights) at most 4x torch-float32's own, plus the floor."""
    batches, weights = _batches(4, seed=1), _weights()
    losses, params, grads, fn = _ours(np.float32, batches, weights=weights)
    assert "fused" in fn.code
    oracle = _torch(torch.float64, batches, weights)
    theirs = _torch(torch.float32, batches, weights)
    check_f32("losses", rel_err(losses, oracle[0]), rel_err(theirs[0], oracle[0]))
    for k, (o, t, e) in enumerate(zip(params + grads, theirs[1] + theirs[2], oracle[1] + oracle[2])):
        check_f32(f"tensor {k}", rel_err(o, e), rel_err(t, e))


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpt_with_dropout_fused_matches_eager(dtype):
    """With dropout 0.1 (the masks drawn again at each call, dropout + residual add and its
    backward fused): losses, gradients and parameters after four steps equal eager's to
    float32 / float64 rounding (here the chains compute eager's own operations in its order)."""
    batches = _batches(4, seed=2)
    eager = _ours(dtype, batches, compiled=False, dropout=0.1)
    fused = _ours(dtype, batches, dropout=0.1)
    assert "dropout_bw" in fused[3].code and "dropout_add" in fused[3].code
    tol = 1e-10 if dtype == np.float64 else 1e-5
    assert rel_err(fused[0], eager[0]) <= tol
    for a, b in zip(fused[1] + fused[2], eager[1] + eager[2]):
        assert rel_err(a, b) <= tol


@needs_cc
def test_bias_add_and_gelu_are_one_kernel():
    """``F.gelu(x @ W.T + b)`` and ``nn.Linear`` then ``nn.GELU``: the bias add and GELU (its
    derivative beside it) are one generated loop, and GELU's backward a second; the C shows one
    statement per step, named after its value."""
    tg.manual_seed(0)
    W = tg.randn(6, 5, dtype=tg.float64, requires_grad=True)
    b = tg.randn(6, dtype=tg.float64, requires_grad=True)

    def f(x):
        loss = (F.gelu(x @ W.T + b) * x[:, :1]).sum()
        loss.backward()
        return loss

    fn = tg.compile(f, fuse=True)
    x = tg.randn(4, 5, dtype=tg.float64)
    for _ in range(2):
        W.grad = b.grad = None
        fn(x)
    forward = fn.code.split("# backward")[0]
    assert forward.count("fused") == 1 and "add_gelu(" in forward and "GeluFn.forward" not in forward
    c = fn.kernels
    assert "add_4 = " in c and "gelu_5 = add_4 * gelu_5_cdf" in c and "gelu_5_d = " in c
    # the same values as eager
    W2 = tg.tensor(W._data.copy(), requires_grad=True)
    b2 = tg.tensor(b._data.copy(), requires_grad=True)
    loss = (F.gelu(x @ W2.T + b2) * x[:, :1]).sum()
    loss.backward()
    assert rel_err(W.grad._data, W2.grad._data) <= 1e-12 and rel_err(b.grad._data, b2.grad._data) <= 1e-12

    tg.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(5, 8), nn.GELU(), nn.Linear(8, 2))

    def g(x):
        loss = mlp(x).pow(2).mean()
        loss.backward()
        return loss

    gn = tg.compile(g, fuse=True)
    x32 = tg.randn(4, 5)
    gn(x32)
    forward = gn.code.split("# backward")[0]
    gelu_lines = [line for line in forward.splitlines() if "gelu" in line.split("=")[0]]
    assert len(gelu_lines) == 1 and "bias_add_gelu(" in gelu_lines[0] and "GeluFn" not in forward
    assert "_mm = LinearFn.forward(" in forward and ", None)" in forward   # x Wᵀ without the bias


def _chain(x, w):
    h = (x * w + 1.0).exp() - x
    h = h.tanh() + (h / w).log() + tg.maximum(h, x) + tg.where(x > 0, h, x * 0.5) + h ** 2
    return h + F.relu(x) + x.sigmoid() + F.silu(w) + (h * w).sqrt()


@needs_cc
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_nan_and_inf_flow_through_a_fused_chain_as_in_eager(dtype):
    """NaN, ±Inf, -0.0, huge and subnormal inputs through exp, tanh, log (of negatives and 0),
    division by 0, maximum (NaN wins), where and pow: outputs and gradients (a random cotangent)
    have NaN and Inf where eager has them, and the finite values agree."""
    tiny = np.finfo(np.float32 if dtype == tg.float32 else np.float64).tiny / 4
    vals = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, tiny, -tiny, 1e30, -1e30, 0.5, -2.0, 3.0,
                     88.0, -100.0, 1e-3, 7.0], dtype=np.float64)
    x_np = np.stack([vals, vals[::-1]]).astype(np.float32 if dtype == tg.float32 else np.float64)
    w_np = np.stack([vals[::-1], np.roll(vals, 3)]).astype(x_np.dtype)
    g_np = np.random.default_rng(0).standard_normal(x_np.shape).astype(x_np.dtype)

    def f(x, w, g):
        y = _chain(x, w)
        (y * g).sum().backward()          # the cotangent g, through a product that is fused too
        return y

    results = []
    for fuse in (False, True):
        x = tg.tensor(x_np.copy(), requires_grad=True)
        w = tg.tensor(w_np.copy(), requires_grad=True)
        g = tg.tensor(g_np)
        fn = tg.compile(f, fuse=True) if fuse else f
        with np.errstate(all="ignore"):
            for _ in range(2):
                x.grad = w.grad = None
                y = fn(x, w, g)
        results.append((y._data, x.grad._data, w.grad._data))
        if fuse:
            assert fn.code.count("fused") >= 2
    tol = 1e-12 if dtype == tg.float64 else 1e-5
    for a, b in zip(*results):
        assert np.array_equal(np.isnan(a), np.isnan(b))
        assert np.array_equal(np.isposinf(a), np.isposinf(b)) and np.array_equal(np.isneginf(a), np.isneginf(b))
        fin = np.isfinite(b)
        assert np.all(np.abs(a[fin] - b[fin]) <= tol * np.maximum(np.abs(b[fin]), 1))


@needs_cc
def test_broadcast_inputs_trailing_and_scalar_fuse_others_stay_as_recorded():
    """A bias (trailing dimension) and a one-element tensor are read inside the loop; a (B, 1, D)
    input broadcast along the middle dimension leaves its step unfused; the results equal eager's
    in float64."""
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(s) for s in [(3, 4, 5), (5,), (), (3, 1, 5), (4, 5)]]

    def f(x, bias, s, mid, last):
        y = ((x + bias) * s).tanh() * last
        z = (y + mid).exp() * 2.0
        z.backward(tg.ones_like(z))
        return z

    def run(fuse):
        ts = [tg.tensor(a.copy(), requires_grad=True) for a in xs]
        fn = tg.compile(f, fuse=True) if fuse else f
        for _ in range(2):
            for t in ts:
                t.grad = None
            out = fn(*ts)
        return [out._data] + [t.grad._data for t in ts], fn

    fused, fn = run(True)
    eager, _ = run(False)
    for a, b in zip(fused, eager):
        assert rel_err(a, b) <= 1e-12
    forward = fn.code.split("# backward")[0]
    assert "Add.forward(ctx" in forward            # y + mid: broadcast along the middle dimension
    assert "fused1_" in forward and "TanhFn" not in forward


@needs_cc
def test_threads_split_the_loop_with_the_same_result():
    rng = np.random.default_rng(4)
    x_np, b_np = rng.standard_normal((300, 512)), rng.standard_normal(512)

    def f(x, b):
        y = F.gelu(x + b) * 3.0
        y.backward(tg.ones_like(y))
        return y

    out = []
    for threads in (1, 2):
        old = tg.get_num_threads()
        tg.set_num_threads(threads)
        try:
            x, b = tg.tensor(x_np, requires_grad=True), tg.tensor(b_np, requires_grad=True)
            fn = tg.compile(f, fuse=True)
            for _ in range(2):
                x.grad = b.grad = None
                y = fn(x, b)
            out.append((y._data, x.grad._data, b.grad._data))
        finally:
            tg.set_num_threads(old)
    for a, b in zip(*out):
        assert np.array_equal(a, b)


def test_without_kernels_fuse_does_nothing(monkeypatch):
    """TINYGRAD_TX_KERNELS=0: compile(fuse=True) records the plain program (no kernel, no
    warning), bit-identical to compile(); a compiler named by CC that is missing gives the
    kernels' one warning and the plain program too."""
    def run(fuse):
        tg.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 8), nn.GELU(), nn.Linear(8, 3))
        opt = optim.AdamW(model.parameters(), lr=1e-2)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = tg.compile(step, fuse=fuse)
        rng = np.random.default_rng(0)
        x, y = tg.tensor(rng.standard_normal((6, 5)).astype(np.float32)), tg.tensor(rng.integers(0, 3, 6))
        losses = [fn(x, y)._data.copy() for _ in range(3)]
        return losses, [p._data.copy() for p in model.parameters()], fn

    try:
        monkeypatch.setenv("TINYGRAD_TX_KERNELS", "0")
        kernels.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            plain = run(False)
            fused = run(True)
        assert "fused" not in fused[2].code and fused[2].kernels == "" and plain[2].kernels == ""
        assert fused[2].code == plain[2].code
        for a, b in zip(plain[0] + plain[1], fused[0] + fused[1]):
            assert np.array_equal(a, b)

        monkeypatch.delenv("TINYGRAD_TX_KERNELS")
        monkeypatch.setenv("CC", "/nonexistent/tgx-cc")
        kernels.reset()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fused = run(True)
        assert "fused" not in fused[2].code
        assert len([w for w in caught if "C kernels off" in str(w.message)]) == 1
    finally:
        monkeypatch.undo()
        kernels.reset()


@needs_cc
def test_without_fuse_compile_is_unchanged_and_kernels_is_empty():
    def f(x):
        y = (x * 2.0).exp() + x
        y.backward(tg.ones_like(y))
        return y

    x = tg.randn(4, 3, requires_grad=True)
    fn = tg.compile(f)
    fn(x)
    assert fn.kernels == "" and "fused" not in fn.code and "Exp.forward" in fn.code
    with pytest.raises(RuntimeError, match="nothing recorded"):
        tg.compile(f, fuse=True).kernels


@needs_cc
def test_cli_compile_show_kernels_prints_the_program_and_its_c(capsys):
    from tinygrad_tx import cli
    assert cli.main(["compile", "--layers", "1", "--d-model", "16", "--steps", "3", "--show", "--kernels"]) == 0
    out = capsys.readouterr().out
    program, c = out.split("/* generated by tinygrad_tx.compile(fuse=True)")
    assert "= fused2_bias_add_gelu(" in program and "OPT0.step()" in program
    assert "void fused2_bias_add_gelu(" in c and "/* GeluFn */" in c
    assert "3 AdamW steps: losses, gradients and parameters" in c


def _random_program(seed):
    """A random straight-line function of elementwise ops over a (4, 6) input, a bias (6,), a
    (1, 6) row and a (4, 6) weight, with reductions read back in the middle (a one-element
    operand), values read by several later steps, and a random cotangent on several outputs."""
    rng = np.random.default_rng(seed)
    steps = []
    for k in range(int(rng.integers(6, 14))):
        names = ["add", "sub", "mul", "div", "neg", "exp", "tanh", "where", "max", "pow", "gelu", "sum", "relu",
                 "sigmoid", "silu", "sqrt"]
        op = names[int(rng.integers(0, len(names)))]
        steps.append((op, int(rng.integers(0, 100)), int(rng.integers(0, 100))))
    n_out = int(rng.integers(1, 4))

    def f(x, b, row, w, gs):
        pool = [x, b, row, w]
        for op, i, j in steps:
            a, c = pool[i % len(pool)], pool[j % len(pool)]
            if op == "add":
                v = a + c
            elif op == "sub":
                v = a - c
            elif op == "mul":
                v = a * c
            elif op == "div":
                v = a / (c * c + 1.0)
            elif op == "neg":
                v = -a
            elif op == "exp":
                v = (a * 0.1).exp()
            elif op == "tanh":
                v = a.tanh()
            elif op == "where":
                v = tg.where(a > 0, a, c)
            elif op == "max":
                v = tg.maximum(a, c)
            elif op == "pow":
                v = a ** 2
            elif op == "gelu":
                v = F.gelu(a)
            elif op == "relu":
                v = F.relu(a)
            elif op == "sigmoid":
                v = a.sigmoid()
            elif op == "silu":
                v = F.silu(a)
            elif op == "sqrt":
                v = (a * a + 0.5).sqrt()
            else:
                v = a.sum() * 0.1
            pool.append(v)
        outs = [v for v in pool[4:] if v.shape == (4, 6)][-n_out:] or [x * 1.0]
        loss = sum((o * g).sum() for o, g in zip(outs, gs))
        loss.backward()
        return tuple(o.detach() for o in outs)

    return f


@needs_cc
@pytest.mark.parametrize("seed", range(40))
def test_random_elementwise_programs_fused_equal_eager(seed):
    """40 random programs (float64): the fused replay's outputs and gradients within 1e-12 of
    eager's, whatever the chains found (values read again later, reductions in between, a bias,
    a row, one-element operands)."""
    rng = np.random.default_rng(1000 + seed)
    arrays = [rng.standard_normal(s) for s in [(4, 6), (6,), (1, 6), (4, 6)]]
    gs_np = [rng.standard_normal((4, 6)) for _ in range(3)]
    f = _random_program(seed)

    def run(fuse):
        ts = [tg.tensor(a.copy(), requires_grad=True) for a in arrays]
        gs = [tg.tensor(g) for g in gs_np]
        fn = tg.compile(f, fuse=True) if fuse else f
        with np.errstate(all="ignore"):
            for _ in range(3):
                for t in ts:
                    t.grad = None
                outs = fn(*ts, gs)
        return [o._data for o in outs] + [t.grad._data if t.grad is not None else np.zeros(1) for t in ts], fn

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fused, fn = run(True)
    eager, _ = run(False)
    assert fn.eager_reason is None
    for a, b in zip(fused, eager):
        assert a.shape == b.shape
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True), (seed, fn.code)


@needs_cc
def test_argument_names_that_are_c_names_do_not_collide():
    """Arguments named like the C library's functions, a loop variable or an output pointer
    (``exp``, ``i``, ``out_x``) become other C identifiers in the kernel."""
    def f(exp, i, out_x, v_exp):
        y = (exp * i + out_x).tanh() * v_exp
        (y * 2.0).sum().backward()
        return y

    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((3, 4)) for _ in range(4)]

    def run(fuse):
        ts = [tg.tensor(a.copy(), requires_grad=True) for a in arrays]
        fn = tg.compile(f, fuse=True) if fuse else f
        for _ in range(2):
            for t in ts:
                t.grad = None
            y = fn(*ts)
        return [y._data] + [t.grad._data for t in ts], fn

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fused, fn = run(True)
    eager, _ = run(False)
    assert "fused" in fn.code and "v_exp" in fn.kernels and "v_out_x" in fn.kernels
    for a, b in zip(fused, eager):
        assert rel_err(a, b) <= 1e-12


@needs_cc
def test_a_failed_build_runs_the_program_unfused_with_one_warning(monkeypatch):
    from tinygrad_tx.compile import fuse, fuse_kernels
    from tinygrad_tx.kernels import build

    def broken(src):
        raise build.KernelBuildError("cc: error: no such flag")

    monkeypatch.setattr(fuse, "build_library", broken)
    monkeypatch.setattr(fuse_kernels, "_warned", [])

    def f(x):
        y = (x * 2.0).exp() + x
        y.sum().backward()
        return y

    x = tg.randn(4, 3, requires_grad=True)
    fn = tg.compile(f, fuse=True)
    with pytest.warns(RuntimeWarning, match="could not be built.*no such flag"):
        fn(x)
    assert fn.kernels == "" and "Exp.forward" in fn.code
    x.grad = None
    assert rel_err(fn(x)._data, f(tg.tensor(x._data.copy(), requires_grad=True))._data) == 0
