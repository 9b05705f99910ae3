"""``tinygrad_tx.compile``'s correctness contract (the table in its module docstring), entry by entry:
every Python-level read a replay depends on is either guarded (checked on each call, recorded anew
when it changes) or refused at the recording (one :class:`CompileWarning`, eager results).

Each case below is a function and three calls whose values change between calls; it is run once
eagerly and once compiled, each from a fresh setup, and the compiled results (outputs, gradients,
parameters) must equal eager's bit for bit, with at most one warning. ``test_audit_count`` runs the
whole list and reports how many cases remain wrong (the target is 0)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tinygrad_tx as tg
import tinygrad_tx.nn.functional as F
from tinygrad_tx import nn
from tinygrad_tx.compile import CompileWarning

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _x(k, shape=(4, 3), dtype=np.float64):
    """A different array at each call ``k``: signs and magnitudes change."""
    rng = np.random.default_rng(k)
    return tg.tensor(rng.standard_normal(shape).astype(dtype))


# Each case returns ``(fn, calls)``: ``calls`` are three functions of ``fn`` that make one call
# (possibly changing some state first) and return what is compared.

@case
def boolean_mask_size():
    return (lambda x: x[x > 0] * 2), [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def nonzero_size():
    return (lambda x: x.nonzero()), [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def masked_select_size():
    return (lambda x: tg.masked_select(x, x > 0.3)), [lambda f, k=k: f(_x(k)) for k in range(3)]


class Cfg:
    def __init__(self, scale):
        self.scale = scale


@case
def object_argument_by_id():
    return (lambda x, cfg: x * cfg.scale), [lambda f, k=k: f(_x(0), Cfg(float(k + 1))) for k in range(3)]


@case
def numpy_integer_slice_bound():
    return (lambda x, n: x[:n] * 1), [lambda f, k=k: f(_x(0), np.int64(k + 1)) for k in range(3)]


@case
def numpy_float_argument():
    return (lambda x, s: x * s), [lambda f, k=k: f(_x(0), np.float64(k + 0.5)) for k in range(3)]


@case
def leaf_made_inside_fgsm():
    def fgsm(x):
        x = x.clone().requires_grad_()
        (x * x).sum().backward()
        return x.grad
    return fgsm, [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def leaf_made_inside_returned():
    def fgsm(x):
        x = x.detach().clone().requires_grad_()
        (x.sin()).sum().backward()
        return x.grad, x
    return fgsm, [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def allclose_branch():
    return (lambda x, y: x * 2 if tg.allclose(x, y) else y * 3), \
        [lambda f, k=k: f(_x(0), _x(k % 2)) for k in range(3)]


@case
def equal_branch():
    return (lambda x, y: x * 2 if tg.equal(x, y) else y * 3), \
        [lambda f, k=k: f(_x(0), _x(k % 2)) for k in range(3)]


@case
def one_element_slice_bound():
    return (lambda x, n: x[:n] * 1), [lambda f, k=k: f(_x(0), tg.tensor(k + 1)) for k in range(3)]


@case
def one_element_full_like():
    return (lambda x, v: tg.full_like(x, v)), [lambda f, k=k: f(_x(0), tg.tensor(float(k))) for k in range(3)]


@case
def one_element_huber_delta():
    return (lambda x, y, d: F.huber_loss(x, y, delta=d)), \
        [lambda f, k=k: f(_x(0), _x(1), tg.tensor(0.2 + k)) for k in range(3)]


@case
def one_element_dropout_p():
    def fn(x, p):
        return F.dropout(x, p=p)
    def call(f, k):
        tg.manual_seed(0)
        return f(_x(0), tg.tensor(0.2 * (k + 1)))
    return fn, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def item_read():
    return (lambda x: x * x.sum().item()), [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def float_read():
    return (lambda x: x * float(x.sum())), [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def bool_read():
    return (lambda x: x * 2 if bool(x.sum() > 0) else x * 3), [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def int_read():
    return (lambda x: x[: int(x.abs().sum()) % 4 + 1] * 1), [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def is_contiguous_branch():
    inputs = [_x(0), _x(1).t().contiguous().t(), _x(2)]
    return (lambda x: x * 2 if x.is_contiguous() else x * 3), [lambda f, k=k: f(inputs[k]) for k in range(3)]


@case
def stride_branch():
    inputs = [_x(0), _x(1).t().contiguous().t(), _x(2)]
    return (lambda x: x * x.stride()[0]), [lambda f, k=k: f(inputs[k]) for k in range(3)]


@case
def data_ptr_read():
    a, b = _x(0), _x(0)        # the same values in other memory

    def fn(x):
        return x * 2 if x.data_ptr() == a.data_ptr() else x * 3
    return fn, [lambda f, t=t: f(t) for t in (a, b, a)]


@case
def grad_is_none_branch():
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def step(x):
        (x * w).sum().backward()
        return w.grad * (2 if w.grad is None else 1)    # reads .grad's presence: always set here

    def first_grad(x):
        had = w.grad is None
        (x * w).sum().backward()
        return w.grad * (5.0 if had else 1.0)

    def call(f, k):
        if k == 1:
            w.grad = None
        return f(_x(k, (3,)))
    return first_grad, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def repr_branch():
    return (lambda x: x * 2 if "-" in repr(x) else x * 3), \
        [lambda f, k=k: f(tg.tensor([1.0, 2.0]) * (1 - 2 * (k % 2))) for k in range(3)]


@case
def negative_zero_argument():
    return (lambda x, s: x / s), [lambda f, s=s: f(_x(0), s) for s in (0.0, -0.0, 0.0)]


@case
def nan_argument():
    return (lambda x, s: x + s), [lambda f, s=s: f(_x(0), s) for s in (float("nan"), 1.0, float("nan"))]


@case
def mutable_default_mutated():
    def fn(x, acc=[]):
        acc.append(1)
        return x * len(acc)
    return fn, [lambda f: f(_x(0)) for _ in range(3)]


@case
def mutable_default_changed_outside():
    scale = [2.0]

    def fn(x, s=scale):
        return x * s[0]

    def call(f, k):
        scale[0] = float(k + 1)
        return f(_x(0))
    return fn, [lambda f, k=k: call(f, k) for k in range(3)]


class _Plain:
    pass


class _ScaledModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = _Plain()
        self.cfg.scale = 1.0
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return self.lin(x) * self.cfg.scale


@case
def module_plain_object_attribute():
    tg.manual_seed(0)
    m = _ScaledModule()

    def call(f, k):
        m.cfg.scale = float(k + 1)
        return f(_x(0))
    return m, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def module_plain_object_replaced():
    tg.manual_seed(0)
    m = _ScaledModule()

    def call(f, k):
        m.cfg = _Plain()
        m.cfg.scale = float(k + 1)
        return f(_x(0))
    return m, [lambda f, k=k: call(f, k) for k in range(3)]


class _Static:
    @staticmethod
    def scaled(x):
        return x * _G_SCALE


_G_SCALE = 1.0


def _global_scale_calls():
    """Three calls, each after binding the global ``_G_SCALE`` to another number."""
    def call(f, k):
        global _G_SCALE
        _G_SCALE = float(k + 1)
        return f(_x(0))
    return [lambda f, k=k: call(f, k) for k in range(3)]


@case
def global_in_staticmethod():
    def fn(x):
        return _Static.scaled(x)
    return fn, _global_scale_calls()


class _StaticModule(nn.Module):
    @staticmethod
    def scale(x):
        return x * _G_SCALE

    def forward(self, x):
        return self.scale(x)


@case
def global_in_module_staticmethod():
    m = _StaticModule()
    return m, _global_scale_calls()


def _helper(x):
    return x * _G_SCALE


@case
def global_in_plain_function():
    def fn(x):
        return _helper(x)
    return fn, _global_scale_calls()


@case
def manual_seed_inside():
    def fn(x, s):
        tg.manual_seed(s)
        return F.dropout(x, 0.5)
    return fn, [lambda f, k=k: f(_x(0), k % 2) for k in range(3)]


@case
def manual_seed_inside_same_seed():
    def fn(x):
        tg.manual_seed(3)
        return F.dropout(x, 0.5)

    def call(f, k):
        tg.manual_seed(k)
        a = f(_x(0))
        return a, F.dropout(_x(1), 0.5)       # the stream after the call
    return fn, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def forward_hook_added_after_recording():
    tg.manual_seed(0)
    m = nn.Linear(3, 2)

    def call(f, k):
        if k == 1:
            m.register_forward_hook(lambda mod, inp, out: out * 10)
        with tg.no_grad():
            return f(_x(0))
    return m, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def forward_hook_removed_after_recording():
    tg.manual_seed(0)
    m = nn.Linear(3, 2)
    handle = m.register_forward_hook(lambda mod, inp, out: out * 10)

    def call(f, k):
        if k == 1:
            handle.remove()
        with tg.no_grad():
            return f(_x(0))
    return m, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def leaf_hook_added_after_recording():
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def step(x):
        w.grad = None
        (x * w).sum().backward()
        return w.grad

    def call(f, k):
        if k == 1:
            w.register_hook(lambda g: g * 3)
        return f(_x(k, (3,)))
    return step, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def leaf_hook_present():
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w.register_hook(lambda g: g * 3)

    def step(x):
        w.grad = None
        (x * w).sum().backward()
        return w.grad
    return step, [lambda f, k=k: f(_x(k, (3,))) for k in range(3)]


@case
def training_mode():
    tg.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))

    def call(f, k):
        m.train(k != 1)
        tg.manual_seed(0)
        with tg.no_grad():
            return f(_x(0))
    return m, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def parameter_requires_grad_changed():
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    lin = nn.Linear(3, 1)

    def step(x):
        out = lin(x * w).sum()
        out.backward()
        return out, lin.weight.grad

    def call(f, k):
        lin.weight.requires_grad_(k != 1)
        lin.weight.grad = None
        lin.bias.grad = None
        return f(_x(k, (2, 3)))
    tg.manual_seed(0)
    lin.reset_parameters()
    return step, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def input_requires_grad_changed():
    def step(x):
        return (x * 2).requires_grad
    return step, [lambda f, k=k: f(_x(0).requires_grad_(k == 1)) for k in range(3)]


@case
def input_dtype_changed():
    return (lambda x: x * 1.1), [lambda f, k=k: f(_x(0, dtype=[np.float64, np.float32, np.float64][k]))
                                 for k in range(3)]


@case
def input_shape_changed():
    return (lambda x: x.sum(0)), [lambda f, k=k: f(_x(0, (k + 1, 2))) for k in range(3)]


@case
def grad_mode_changed():
    w = tg.tensor([1.0, 2.0], requires_grad=True)

    def fn(x):
        return (x * w).requires_grad

    def call(f, k):
        with tg.set_grad_enabled(k != 1):
            return f(_x(0, (2,)))
    return fn, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def global_number():
    def fn(x):
        return x * _G_SCALE
    return fn, _global_scale_calls()


@case
def closure_number():
    box = [1.0]
    scale = 1.0

    def fn(x):
        return x * scale

    def call(f, k):
        nonlocal scale
        scale = float(k + 1)
        return f(_x(0))
    return fn, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def masked_size_read_into_python():
    return (lambda x: x * len(x[x > 0])), [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def nonzero_size_read_into_python():
    return (lambda x: x * x.nonzero().shape[0]), [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def masked_shape_makes_a_tensor():
    return (lambda x: tg.zeros(x[x > 0].shape)), [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def masked_numel_and_mean():
    return (lambda x: x[x > 0].mean() * x[x > 0].numel()), [lambda f, k=k: f(_x(k)) for k in range(3)]


@case
def object_argument_mutated():
    cfg = Cfg(1.0)

    def call(f, k):
        cfg.scale = float(k + 1)
        return f(_x(0), cfg)
    return (lambda x, c: x * c.scale), [lambda f, k=k: call(f, k) for k in range(3)]


class _Prop:
    def __init__(self):
        self._s = 1.0

    @property
    def scale(self):
        return self._s * 2


@case
def object_property():
    cfg = _Prop()

    def call(f, k):
        cfg._s = float(k + 1)
        return f(_x(0), cfg)
    return (lambda x, c: x * c.scale), [lambda f, k=k: call(f, k) for k in range(3)]


class _ClassScaled(nn.Module):
    scale = 1.0

    def forward(self, x):
        return x * self.scale


@case
def module_class_attribute():
    m = _ClassScaled()

    def call(f, k):
        _ClassScaled.scale = float(k + 1)
        return f(_x(0))
    return m, [lambda f, k=k: call(f, k) for k in range(3)]


_NESTED = {"opt": {"lr": 1.0}}
_LONG = [1.0] * 40


@case
def global_nested_container_item():
    def fn(x):
        return x * _NESTED["opt"]["lr"]

    def call(f, k):
        _NESTED["opt"]["lr"] = float(k + 1)
        return f(_x(0))
    return fn, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def global_long_list_item():
    def fn(x):
        return x * _LONG[17]

    def call(f, k):
        _LONG[17] = float(k + 1)
        return f(_x(0))
    return fn, [lambda f, k=k: call(f, k) for k in range(3)]


class _ListModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [1.0] * 40

    def forward(self, x):
        return x * self.scales[3]


@case
def module_long_list_attribute():
    m = _ListModule()

    def call(f, k):
        m.scales[3] = float(k + 1)
        return f(_x(0))
    return m, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def python_random_inside():
    import random

    def fn(x):
        return x * random.random()

    def call(f, k):
        random.seed(k)
        return f(_x(0))
    return fn, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def numpy_global_random_inside():
    def fn(x):
        return x * np.random.rand()

    def call(f, k):
        np.random.seed(k)
        return f(_x(0))
    return fn, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def module_attribute_replaced_tensor():
    tg.manual_seed(0)
    m = nn.Linear(3, 2)
    m.extra = tg.ones(2)

    def forward(x):
        return m(x) * m.extra

    def call(f, k):
        m.extra = tg.full((2,), float(k + 1))
        with tg.no_grad():
            return f(_x(0))
    return forward, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def optimizer_lr_changed_outside():
    tg.manual_seed(0)
    m = nn.Linear(3, 1)
    opt = tg.optim.SGD(m.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = m(x).sum()
        loss.backward()
        opt.step()
        return loss

    def call(f, k):
        opt.param_groups[0]["lr"] = 0.1 * (k + 1)
        return f(_x(k)), m.weight
    return step, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def int_argument_vs_float():
    return (lambda x, s: (x * s).dtype), [lambda f, s=s: f(_x(0).long(), s) for s in (2, 2.0, True)]


def _hooked_after_recording(register):
    """A two-layer model under no_grad; ``register(model)`` runs before the second call."""
    tg.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 2))

    def call(f, k):
        if k == 1:
            register(m)
        with tg.no_grad():
            return f(_x(0))
    return m, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def submodule_forward_hook_added_after_recording():
    return _hooked_after_recording(lambda m: m[1].register_forward_hook(lambda mod, inp, out: out * 10))


@case
def forward_pre_hook_added_after_recording():
    return _hooked_after_recording(lambda m: m[2].register_forward_pre_hook(lambda mod, inp: (inp[0] * 0,)))


@case
def input_hook_added_after_recording():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def step(v):
        x.grad = None
        (x * v).sum().backward()
        return x.grad

    def call(f, k):
        if k == 1:
            x.register_hook(lambda g: g * 2)
        return f(_x(k, (3,)))
    return step, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def eval_inside_train_between():
    tg.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))

    def fn(x):
        out = m(x)
        m.eval()
        return out, m(x)

    def call(f, k):
        m.train()
        tg.manual_seed(k)
        with tg.no_grad():
            return f(_x(0))
    return fn, [lambda f, k=k: call(f, k) for k in range(3)]


@case
def argument_list_of_tensors_changes_length():
    return (lambda xs: sum(xs[1:], xs[0])), [lambda f, k=k: f([_x(i) for i in range(k + 1)]) for k in range(3)]


@case
def dtype_argument():
    return (lambda x, d: x.to(d) * 3), [lambda f, d=d: f(_x(0), d) for d in (tg.float32, tg.float64, tg.float32)]


@case
def default_dtype_changed():
    def call(f, k):
        old = tg.get_default_dtype()
        tg.set_default_dtype([tg.float32, tg.float64, tg.float32][k])
        try:
            return f(_x(0))
        finally:
            tg.set_default_dtype(old)
    return (lambda x: x * tg.ones(3)), [lambda f, k=k: call(f, k) for k in range(3)]


@case
def tolist_of_argument():
    return (lambda x, n: x * tg.tensor(n.tolist())), \
        [lambda f, k=k: f(_x(0, (3,)), tg.tensor([1.0, k, -k])) for k in range(3)]


@case
def parameter_data_replaced():
    tg.manual_seed(0)
    m = nn.Linear(3, 2)

    def call(f, k):
        m.weight.data = tg.full((2, 3), float(k + 1))
        with tg.no_grad():
            return f(_x(0))
    return m, [lambda f, k=k: call(f, k) for k in range(3)]


# ---------------------------------------------------------------------------- running a case

def _numpy(x):
    if isinstance(x, tg.Tensor):
        return ("T", x._data.copy(), x.dtype, x.requires_grad, None if x.grad is None else x.grad._data.copy())
    if isinstance(x, (tuple, list)):
        return tuple(_numpy(v) for v in x)
    if isinstance(x, (float, np.floating)) and np.isnan(x):
        return "nan"
    return x


def _same(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True) and \
            np.array_equal(np.signbit(a), np.signbit(b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    return type(a) is type(b) and a == b


def run_case(name):
    """(equal to eager, number of compile warnings, why not)"""
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        fn, calls = CASES[name]()
        f = tg.compile(fn) if compiled else fn
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = []
            for call in calls:
                try:
                    out.append(_numpy(call(f)))
                except Exception as e:     # eager's error is compared too
                    out.append(("E", type(e).__name__))
        n = sum(issubclass(c.category, CompileWarning) for c in caught)
        results.append(out)
    same = all(_same(u, v) for u, v in zip(*results))
    return same, n


@pytest.mark.parametrize("name", sorted(CASES))
def test_replay_equals_eager_or_one_warning(name):
    same, n = run_case(name)
    assert same, f"{name}: the compiled calls differ from eager"
    assert n <= 1, f"{name}: {n} warnings"


def test_audit_count(capsys):
    outcomes = {n: run_case(n) for n in CASES}
    wrong = [n for n, (same, warned) in outcomes.items() if not same or warned > 1]
    with capsys.disabled():
        print(f"\ncompile audit: {len(CASES)} cases tried, {len(wrong)} wrong: {wrong}")
    assert not wrong


def test_torch_compile_under_run_keys_objects_and_numpy_scalars_by_value(tmp_path, capsys):
    """Through the torch shim (``tinygrad-tx run``): ``torch.compile`` of a function taking a
    fresh config object and a NumPy integer at each call gives eager's results (Python reuses the
    freed object's id; a key by id replayed the first call's result forever)."""
    from tinygrad_tx.torch_shim import run_file
    script = tmp_path / "cfg.py"
    script.write_text(
        "import numpy as np\n"
        "import torch\n"
        "class Cfg:\n"
        "    def __init__(self, s):\n"
        "        self.scale = s\n"
        "def f(x, cfg, n):\n"
        "    return x[:n] * cfg.scale\n"
        "cf = torch.compile(f)\n"
        "x = torch.arange(6.0)\n"
        "same = [torch.equal(cf(x, Cfg(float(s)), np.int64(s + 1)), f(x, Cfg(float(s)), np.int64(s + 1)))\n"
        "        for s in range(4)]\n"
        "print(all(same))\n")
    assert run_file(str(script)) == 0
    assert capsys.readouterr().out.strip() == "True"
