"""``tinygrad_tx.compile``: a recorded program replays bit-identically to eager (losses, gradients,
parameters after N AdamW steps, dropout included), retraces when a guard changes, refuses what it
cannot replay (falling back to eager with one warning), and ``code`` is the program it runs."""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import tinygrad_tx as tg
from tinygrad_tx import nn, optim
from tinygrad_tx.compile import CompiledFunction, CompileRefused
from tinygrad_tx.models import GPTLanguageModel
import tinygrad_tx.nn.functional as F


def _gpt(attn_impl, dropout):
    tg.manual_seed(0)
    model = GPTLanguageModel(11, d_model=16, n_heads=2, n_layers=2, block_size=8, dropout=dropout,
                             attn_impl=attn_impl)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    opt = optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}], lr=3e-3)
    return model, opt


def _mlp(dropout=0.2):
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 12), nn.GELU(), nn.Dropout(dropout), nn.Linear(12, 12), nn.Tanh(),
                          nn.Linear(12, 3))
    return model, optim.AdamW(model.parameters(), lr=1e-2)


def _train(make, batches, compiled, **kwargs):
    """N training steps (zero_grad, forward, backward, AdamW step) with one generator stream for
    the dropout masks; the losses, and every parameter and gradient after the last step."""
    model, opt = make(**kwargs)

    def step(x, y):
        opt.zero_grad()
        out = model(x, y)[1] if isinstance(model, GPTLanguageModel) else F.cross_entropy(model(x), y)
        out.backward()
        opt.step()
        return out

    fn = tg.compile(step) if compiled else step
    tg.manual_seed(7)
    losses = [fn(x, y)._data.copy() for x, y in batches]
    return (losses, [p._data.copy() for p in model.parameters()],
            [p.grad._data.copy() for p in model.parameters()], fn)


def _assert_identical(a, b):
    for u, v in zip(a[0], b[0]):
        assert np.array_equal(u, v), (u, v)
    for which in (1, 2):
        assert len(a[which]) == len(b[which])
        for u, v in zip(a[which], b[which]):
            assert u.dtype == v.dtype and np.array_equal(u, v)


def _gpt_batches(n, B=3, T=8, seed=0):
    rng = np.random.default_rng(seed)
    return [(tg.tensor(rng.integers(0, 11, (B, T))), tg.tensor(rng.integers(0, 11, (B, T)))) for _ in range(n)]


def _mlp_batches(n, B=6, seed=1):
    rng = np.random.default_rng(seed)
    return [(tg.tensor(rng.standard_normal((B, 5)).astype(np.float32)), tg.tensor(rng.integers(0, 3, B)))
            for _ in range(n)]


@pytest.mark.parametrize("attn_impl", ["fused", "naive"])
def test_gpt_training_step_replays_bit_identically(attn_impl):
    """Five AdamW steps of the tutorial GPT with dropout 0.1 (weight decay on matrices, tied
    embedding): losses, gradients and parameters equal eager's exactly; the steps after the first
    (and, for the naive attention, whose causal-mask cache is filled on the first call, the
    third on) were replays."""
    batches = _gpt_batches(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eager = _train(_gpt, batches, False, attn_impl=attn_impl, dropout=0.1)
        compiled = _train(_gpt, batches, True, attn_impl=attn_impl, dropout=0.1)
    _assert_identical(eager, compiled)
    fn = compiled[3]
    assert fn.eager_reason is None and sum(map(len, fn.programs.values())) == 1
    assert "keep_mask" in fn.code          # the dropout masks are drawn again at every call


def test_mlp_replays_and_a_new_batch_shape_retraces():
    batches = _mlp_batches(3) + _mlp_batches(3, B=4, seed=2) + _mlp_batches(2, seed=3)
    eager = _train(_mlp, batches, False)
    compiled = _train(_mlp, batches, True)
    _assert_identical(eager, compiled)
    assert len(compiled[3].programs) == 2          # batch 6, then batch 4 (then batch 6 again: replayed)


def test_a_replayed_optimizer_step_moves_the_parameters_into_flat_buffers():
    """The program frees its names of the parameters at their last use, so the replayed AdamW step
    finds each parameter's array held by its Tensor alone and takes the fused path (one flat buffer
    per group, as eager's second step does) rather than stepping parameter by parameter."""
    model, opt = _mlp(0.0)

    def step(x, y):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    fn = tg.compile(step, fullgraph=True)
    for x, y in _mlp_batches(3):
        fn(x, y)
    assert len(opt._flat_states) == 1
    flat = next(iter(opt._flat_states.values())).params
    assert all(p._data.base is flat.data for p in model.parameters())


def test_training_flag_is_a_guard():
    """model.eval() between calls changes the program (no dropout): a new one is recorded."""
    x = tg.tensor(np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32))
    results = []
    for compiled in (False, True):
        model, _ = _mlp(0.5)
        fwd = tg.compile(model) if compiled else model
        tg.manual_seed(1)
        out = []
        with tg.no_grad():
            for mode in ("train", "train", "eval", "eval", "train"):
                getattr(model, mode)()
                out.append(fwd(x)._data.copy())
        results.append(out)
        if compiled:
            assert [len(p) for p in fwd.programs.values()] == [2]   # train, eval; train again replays
    for u, v in zip(*results):
        assert np.array_equal(u, v)


def test_code_is_the_program_and_runs_on_its_own():
    """``code`` is valid Python; executed from its text (with the names it reads) on two copies of
    one model, it gives what eager gives: loss, gradients and parameters."""
    batches = _mlp_batches(3)
    model, opt = _mlp()
    twin, twin_opt = _mlp()

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = tg.compile(step)
    tg.manual_seed(3)
    fn(*batches[0])
    code = fn.code
    assert code.startswith("def program(ARGS):") and "# forward" in code and "# backward" in code
    assert code.index("# forward") < code.index("# backward") < code.index("# update")
    assert "LinearFn.forward(" in code or "Linear.forward(" in code
    namespace = dict(fn.last.namespace)
    exec(compile(code, "<compiled code>", "exec"), namespace)
    tg.manual_seed(4)
    loss = namespace["program"](list(batches[1]))
    # the eager twin, brought to the same state
    tg.manual_seed(3)
    twin_opt.zero_grad()
    F.cross_entropy(twin(batches[0][0]), batches[0][1]).backward()
    twin_opt.step()
    tg.manual_seed(4)
    twin_opt.zero_grad()
    twin_loss = F.cross_entropy(twin(batches[1][0]), batches[1][1])
    twin_loss.backward()
    twin_opt.step()
    assert np.array_equal(loss._data, twin_loss._data)
    for p, q in zip(model.parameters(), twin.parameters()):
        assert np.array_equal(p._data, q._data) and np.array_equal(p.grad._data, q.grad._data)


def _refusal_cases():
    w = nn.Parameter(tg.tensor(np.linspace(-1, 1, 6).reshape(2, 3)))

    def item_in_middle(x):
        s = (x * w).sum()
        return x * s.item()

    def branch_on_value(x):
        return x * 2.0 if (x.sum() > 0) else x * 3.0

    def tolist(x):
        return tg.tensor((x * 2.0).tolist())

    def numpy_of_value(x):
        return tg.tensor((x * 2.0).detach().numpy() + 1.0)

    def inplace_edit(x):
        y = x * 2.0
        y.add_(1.0)
        return y * w

    def random_factory(x):
        return x + tg.randn(*x.shape, dtype=x.dtype)

    def isclose(x):      # isclose's mask is made outside a Function and not recorded
        return (x * 2.0).masked_fill(x.isclose(x * 1.0), 0.0)

    def hook(x):
        y = (x * w)
        y.register_hook(lambda g: g * 2.0)
        y.sum().backward()
        return w.grad * 1.0 if w.grad is not None else None

    def graph_result(x):
        return x * w

    kept = []

    def keeps_a_tensor(x):     # a computed tensor stored outside the function: a side effect
        y = x * w
        kept.append(y)
        return y.detach() * 1.0

    def contains(x):
        return x * 2.0 if 0.5 in (x * 1.0) else x * 3.0

    def repeat_by_sign(x):     # repeats read from a tensor's values by library code (a broadcast view)
        flat = x.reshape(-1)
        return flat.repeat_interleave((flat > 0).long()) * 1.0

    def clip_grads(x):     # the in-place scaling of .grad is not a recorded call: refused
        w.grad = None
        (x * w).sum().backward()
        nn.utils.clip_grad_norm_([w], 0.5)
        return w.grad * 1.0

    return {"item": item_in_middle, "bool": branch_on_value, "tolist": tolist, "numpy": numpy_of_value,
            "inplace": inplace_edit, "randn": random_factory, "isclose": isclose, "hook": hook,
            "graph result": graph_result, "clip grads": clip_grads, "kept": keeps_a_tensor,
            "contains": contains, "repeat_interleave": repeat_by_sign}, w


REASONS = {"item": "reads a value", "bool": "reads a value", "tolist": "reads a value", "numpy": "reads a value",
           "contains": "reads a value", "inplace": "in-place", "clip grads": "in-place", "randn": "random numbers",
           "isclose": "made inside the function", "hook": "hook", "graph result": "carries a graph",
           "kept": "kept outside", "repeat_interleave": "NumPy array"}


@pytest.mark.parametrize("case", sorted(REASONS))
def test_what_cannot_be_replayed_falls_back_to_eager_with_one_warning(case):
    rng = np.random.default_rng(0)
    xs = [tg.tensor(rng.standard_normal((2, 3)) * s) for s in (1.0, -1.0, 1.0, -1.0)]
    results = []
    for compiled in (False, True):
        cases, w = _refusal_cases()
        fn = tg.compile(cases[case]) if compiled else cases[case]
        tg.manual_seed(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = []
            for x in xs:
                w.grad = None
                y = fn(x)
                out.append(None if y is None else y._data.copy())
        results.append(out)
        if compiled:
            assert fn.eager_reason is not None and not fn.programs
            messages = [str(c.message) for c in caught if "tinygrad_tx.compile" in str(c.message)]
            assert len(messages) == 1, messages
            assert REASONS[case] in fn.eager_reason, fn.eager_reason
    for u, v in zip(*results):
        assert (u is None and v is None) or np.array_equal(u, v)


def test_fullgraph_raises_instead():
    def f(x):
        return x * float(x.sum())
    fn = tg.compile(f, fullgraph=True)
    with pytest.raises(CompileRefused, match="reads a value into Python"):
        fn(tg.tensor([1.0, 2.0]))


def test_forward_under_no_grad_and_module_compile():
    model, _ = _mlp(0.0)
    twin, _ = _mlp(0.0)
    model.compile()
    assert isinstance(model.forward, CompiledFunction)
    x = tg.tensor(np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32))
    with tg.no_grad():
        for _ in range(3):
            assert np.array_equal(model(x)._data, twin(x)._data)
    assert model.forward.last is not None
    clone = copy.deepcopy(model)          # its own programs, over its own parameters
    clone[0].weight._data[...] = 0.5
    with tg.no_grad():
        assert np.array_equal(clone(x)._data, clone.forward.fn(x)._data)
        assert not np.array_equal(clone(x)._data, model(x)._data)


def test_torch_compile_under_run_is_this_compile(tmp_path, capsys):
    from tinygrad_tx.torch_shim import run_file
    script = tmp_path / "step.py"
    script.write_text(
        "import torch\n"
        "lin = torch.nn.Linear(3, 2)\n"
        "opt = torch.optim.SGD(lin.parameters(), lr=0.1)\n"
        "@torch.compile\n"
        "def step(x):\n"
        "    opt.zero_grad()\n"
        "    loss = lin(x).square().mean()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    return loss\n"
        "x = torch.ones(4, 3)\n"
        "losses = [step(x) for _ in range(3)]\n"
        "print(type(step).__name__, step.last is not None, losses[2].item() < losses[0].item())\n")
    assert run_file(str(script)) == 0
    assert capsys.readouterr().out.strip() == "CompiledFunction True True"


def test_a_replaced_parameter_is_a_failed_guard():
    """``model.hidden.weight = Parameter(...)`` between calls: the program recorded for the old
    parameter is not replayed on it; a new one is recorded (results as eager's)."""
    x = tg.tensor(np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32))
    outs = []
    for compiled in (False, True):
        model, _ = _mlp(0.0)
        fwd = tg.compile(model) if compiled else model
        with tg.no_grad():
            first = fwd(x)._data.copy()
            fwd(x)
            model[0].weight = nn.Parameter(tg.tensor(np.ones((12, 5), dtype=np.float32)))
            outs.append((first, fwd(x)._data.copy()))
        if compiled:
            assert [len(p) for p in fwd.programs.values()] == [2]
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])


def test_a_replay_checks_its_inputs_as_eager_does():
    """The GPT's token-id check is re-run by the replay: an id out of range raises there too
    (np.take would wrap a negative id round silently)."""
    model, opt = _gpt("fused", 0.0)

    def step(x, y):
        opt.zero_grad()
        loss = model(x, y)[1]
        loss.backward()
        opt.step()
        return loss

    fn = tg.compile(step)
    (x, y), = _gpt_batches(1)
    fn(x, y)
    fn(x, y)
    assert "check_token_ids(" in fn.code
    bad = tg.tensor(np.where(x._data == 0, -1, x._data))
    with pytest.raises(ValueError, match="idx"):
        step(bad, y)
    with pytest.raises(ValueError, match="idx"):
        fn(bad, y)


def test_reading_a_gradient_after_backward_replays():
    """The squared norm of the gradients, computed in the step after backward: the program reads
    each parameter's .grad where the step reads it."""
    batches = _mlp_batches(4)
    results = []
    for compiled in (False, True):
        model, opt = _mlp(0.0)

        def step(x, y):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            norm2 = sum((p.grad * p.grad).sum() for p in model.parameters())
            opt.step()
            return norm2

        fn = tg.compile(step) if compiled else step
        results.append([fn(x, y)._data.copy() for x, y in batches])
        if compiled:
            assert fn.eager_reason is None and ".grad._data" in fn.code
    for u, v in zip(*results):
        assert np.array_equal(u, v)


def test_a_mask_compared_from_the_input_is_recomputed():
    """``masked_fill(x > 0, 0)``: the comparison is made outside a Function; the replay repeats it
    on each call's input (it is not frozen), as ``~mask`` and ``&``. (isclose is still refused.)"""
    w = nn.Parameter(tg.tensor(np.linspace(-1, 1, 6).reshape(2, 3)))

    def f(x):
        y = x * w
        return y.masked_fill(x > 0, 0.0) + y.masked_fill(~(y < 0.25) & (x != 0), 1.0)

    fn = tg.compile(f)
    rng = np.random.default_rng(0)
    with tg.no_grad():
        for _ in range(4):
            x = tg.tensor(rng.standard_normal((2, 3)))
            assert np.array_equal(fn(x)._data, f(x)._data)
    assert fn.eager_reason is None and "greater" in fn.code


# ---------------------------------------------------------------------------- Python values read by name

SCALE = 1.0          # a global number the step below reads (test_a_global_number_is_a_guard)


def _scaled_step(model, opt, x):
    opt.zero_grad()
    loss = (model(x) ** 2).mean() * SCALE
    loss.backward()
    opt.step()
    return loss


def _linear_and_sgd():
    tg.manual_seed(0)
    model = nn.Linear(3, 2)
    return model, optim.SGD(model.parameters(), lr=0.1)


X3 = tg.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))


def _both(make_step, settings):
    """Eager and compiled runs of ``make_step() -> (step, set_value, model)``: before each call
    ``set_value(s)`` for s in ``settings``; the losses and final parameters of each, and the
    compiled function."""
    runs = []
    for compiled in (False, True):
        step, set_value, model = make_step()
        fn = tg.compile(step) if compiled else step
        losses = []
        for s in settings:
            set_value(s)
            losses.append(fn()._data.copy())
        runs.append((losses, [p._data.copy() for p in model.parameters()], fn))
    (eager, eager_params, _), (comp, comp_params, fn) = runs
    for u, v in zip(eager + eager_params, comp + comp_params):
        assert np.array_equal(u, v), (u, v)
    assert fn.eager_reason is None
    return fn


def _programs(fn):
    return sum(map(len, fn.programs.values()))


def test_a_global_number_is_a_guard():
    """The issue's reproduction: a global number read by a function the step calls was frozen at
    the first call; now a changed value records a new program (an unchanged one replays)."""
    global SCALE

    def make():
        model, opt = _linear_and_sgd()

        def set_scale(s):
            global SCALE
            SCALE = s
        return (lambda: _scaled_step(model, opt, X3)), set_scale, model

    try:
        fn = _both(make, [1.0, 2.0, 3.0, 3.0, 1.0])
    finally:
        SCALE = 1.0
    assert _programs(fn) == 3                      # 1.0, 2.0, 3.0; then replays


def test_a_closure_number_is_a_guard():
    def make():
        model, opt = _linear_and_sgd()
        scale = 1.0

        def step():
            opt.zero_grad()
            loss = (model(X3) ** 2).mean() * scale
            loss.backward()
            opt.step()
            return loss

        def set_scale(s):
            nonlocal scale
            scale = s
        return step, set_scale, model

    fn = _both(make, [1.0, 0.5, 0.5, 2.0])
    assert _programs(fn) == 3


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.scale = 1.0

    def forward(self, x):
        return self.lin(x) * self.scale


class _Outer(nn.Module):
    """Reads a number of its child through ``self`` in forward."""

    def __init__(self):
        super().__init__()
        self.inner = _Scaled()
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        return self.drop(self.inner.lin(x)) / self.inner.scale


@pytest.mark.parametrize("where", ["attribute", "child attribute", "dropout p", "eps"])
def test_a_module_number_is_a_guard(where):
    """``model.scale = ...`` between calls (the module compiled, or a step calling it); a child's
    number read through ``self`` in forward; a library module's number (a dropout's p, a layer
    norm's eps): each equal to eager at every call."""
    def make():
        tg.manual_seed(0)
        model = _Scaled() if where == "attribute" else _Outer()
        if where == "eps":
            model.inner.lin = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))
        opt = optim.SGD(model.parameters(), lr=0.1)

        def set_value(v):
            tg.manual_seed(1)           # the same dropout masks in both runs
            if where == "attribute":
                model.scale = v
            elif where == "child attribute":
                model.inner.scale = v
            elif where == "dropout p":
                model.drop.p = v - 1.0
            else:
                model.inner.lin[1].eps = v
        return (lambda: _scaled_step(model, opt, X3)), set_value, model

    fn = _both(make, [1.0, 1.5, 1.5, 1.25, 1.0])
    assert _programs(fn) == 3


def test_an_unchanged_value_does_not_record_again():
    """Globals, closure numbers, module attributes and small dicts of numbers all read by name and
    all unchanged: one program, replayed."""
    model = _Outer()
    opt = optim.SGD(model.parameters(), lr=0.1)
    cfg = {"weight": 0.5}

    def step():
        return _scaled_step(model, opt, X3).detach() * cfg["weight"]

    fn = tg.compile(step)
    for _ in range(5):
        fn()
    assert _programs(fn) == 1 and fn.eager_reason is None
    assert fn.last.reads.changed() is None
    cfg["weight"] = 0.25                  # a small dict of numbers is compared by value
    assert fn.last.reads.changed() is not None


def test_a_global_tensor_is_read_live_and_rebinding_it_records_again():
    """A tensor the function reads by name (not an argument): an in-place change is read by the
    replay; the name bound to another tensor is a failed guard."""
    def make():
        model, opt = _linear_and_sgd()
        x = tg.tensor(X3._data.copy())

        def step():
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        def set_x(s):
            nonlocal x
            if s == "edit":
                with tg.no_grad():
                    x.mul_(2.0)
            elif s == "rebind":
                x = tg.tensor(X3._data * 3.0)
        return step, set_x, model

    fn = _both(make, [None, "edit", None, "rebind", None])
    assert _programs(fn) == 2                      # the edit is read live; the new tensor retraces


def test_a_number_changed_inside_the_call_is_refused():
    """A counter incremented by the function: the replay would not repeat the increment, so the
    function runs eagerly (with one warning naming it)."""
    calls = 0

    def step(x):
        nonlocal calls
        calls += 1
        return x * 2.0

    fn = tg.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            fn(X3)
    assert calls == 3 and fn.eager_reason is not None and "`calls`" in fn.eager_reason
    assert "changed during the call" in fn.eager_reason and len(caught) == 1


def test_a_number_changing_at_every_call_gives_up_naming_it():
    """A value that differs at every call (read from a small dict of numbers): each call records
    a new program, correct each time; past ``max_programs`` it runs eagerly, naming the value."""
    state = {"lr": 1.0}

    def step(x):
        return x * state["lr"]

    fn = CompiledFunction(step, max_programs=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(5):
            state["lr"] = float(k)
            assert np.array_equal(fn(X3)._data, step(X3)._data)
    assert fn.eager_reason is not None and "`state`" in fn.eager_reason, fn.eager_reason
    assert len(caught) == 1


def test_an_object_attribute_read_by_name_is_a_guard():
    """``cfg.scale`` on a plain object the function reads by name."""
    import types

    def make():
        model, opt = _linear_and_sgd()
        cfg = types.SimpleNamespace(scale=1.0, name="run")

        def step():
            opt.zero_grad()
            loss = (model(X3) ** 2).mean() * cfg.scale
            loss.backward()
            opt.step()
            return loss

        def set_scale(s):
            cfg.scale = s
        return step, set_scale, model

    fn = _both(make, [1.0, 2.0, 2.0, 0.5])
    assert _programs(fn) == 3


def test_an_lr_scheduler_outside_keeps_one_program():
    """The optimizer's hyperparameters are read live by its replayed ``step()``: a scheduler
    stepped between calls changes the learning rate without a new recording."""
    def make():
        model, opt = _linear_and_sgd()
        sched = optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)

        def set_value(k):
            if k:
                sched.step()
        return (lambda: _scaled_step(model, opt, X3)), set_value, model

    fn = _both(make, [0, 1, 1, 1])
    assert _programs(fn) == 1


def test_an_attribute_name_is_not_a_global_guard():
    """``opt.step()`` names the attribute ``step``, not a global: a global loop counter ``step``
    changing at every call is no guard (one program)."""
    model, opt = _linear_and_sgd()
    ns = {"model": model, "opt": opt, "X3": X3, "step": 0}
    exec("def train():\n    opt.zero_grad()\n    loss = (model(X3) ** 2).mean()\n    loss.backward()\n"
         "    opt.step()\n    return loss\n", ns)
    fn = tg.compile(ns["train"])
    for k in range(4):
        ns["step"] = k
        fn()
    assert _programs(fn) == 1 and fn.eager_reason is None


def test_a_tensor_from_an_iterator_runs_eagerly():
    """A batch taken with ``next(it)`` inside the step is a new tensor at every call that no name
    holds: read live it would replay the first batch forever (it did: losses 0.127, 0.102, ...
    against eager's 0.200, 0.160, ...). It is refused, and every call equals eager."""
    rng = np.random.default_rng(0)
    batches = [tg.tensor(rng.standard_normal((4, 3)).astype(np.float32)) for _ in range(4)]

    def run(compiled):
        tg.manual_seed(0)
        m = nn.Linear(3, 2)
        o = optim.SGD(m.parameters(), lr=0.1)
        it = iter(batches)

        def step():
            x = next(it)
            o.zero_grad()
            loss = (m(x) ** 2).mean()
            loss.backward()
            o.step()
            return loss

        fn = tg.compile(step) if compiled else step
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            losses = [fn().item() for _ in batches]
        return losses, fn

    (eager, _), (compiled, fn) = run(False), run(True)
    assert compiled == eager
    assert fn.eager_reason is not None and "cannot repeat" in fn.eager_reason, fn.eager_reason


def test_grad_set_to_none_inside_the_function_replays_as_eager():
    """``w.grad = None`` inside a compiled step: the replay wrote ``del T_tensor`` after its last use
    (the assignment's target ``T_tensor.grad`` was taken for a local name), so its first read of
    ``T_tensor`` raised UnboundLocalError on the second call."""
    import warnings
    w = tg.tensor(np.ones(3), requires_grad=True)

    def step(x):
        w.grad = None
        loss = (w * x).sum()
        loss.backward()
        return loss
    compiled = tg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # replayed, not refused
        for i in range(3):
            x = np.arange(3.0) + i
            assert compiled(tg.tensor(x)).item() == float(np.sum(x))
            assert w.grad.tolist() == x.tolist()
