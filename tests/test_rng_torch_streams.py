"""Same seed, same numbers as PyTorch: every random function bit-equal (``np.array_equal``) to
torch 2.13's CPU stream, over dtypes, shapes (0-d, empty, across normal's 16-element blocks) and
seeds, with the global generator and with an explicit ``generator=``; nn layers' default
initialisation, dropout masks, samplers and the generator state bytes too."""
import numpy as np
import pytest

import tinygrad_tx as tg

torch = pytest.importorskip("torch")

SEEDS = (0, 1, 42, 2**40 + 7)
SHAPES = ((), (0,), (1,), (5,), (15,), (16,), (17,), (31,), (33,), (4, 8), (3, 7, 5))
FLOATS = ("float32", "float64")

pytestmark = pytest.mark.cpu_only(reason="torch's CPU generator (mt19937) is the reference: CUDA's Philox streams differ by design")


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _same(a, b):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    assert np.array_equal(a, b, equal_nan=True), (a.ravel()[:6], b.ravel()[:6])


def _states_equal():
    assert np.array_equal(torch.get_rng_state().numpy(), tg.get_rng_state().numpy())


FACTORIES = {
    "rand": lambda m, s, dt, g: m.rand(s, dtype=getattr(m, dt), generator=g),
    "randn": lambda m, s, dt, g: m.randn(s, dtype=getattr(m, dt), generator=g),
    "uniform_": lambda m, s, dt, g: m.empty(s, dtype=getattr(m, dt)).uniform_(-0.37, 1.91, generator=g),
    "normal_": lambda m, s, dt, g: m.empty(s, dtype=getattr(m, dt)).normal_(0.3, 1.7, generator=g),
    "exponential_": lambda m, s, dt, g: m.empty(s, dtype=getattr(m, dt)).exponential_(2.5, generator=g),
    "geometric_": lambda m, s, dt, g: m.empty(s, dtype=getattr(m, dt)).geometric_(0.3, generator=g),
    "cauchy_": lambda m, s, dt, g: m.empty(s, dtype=getattr(m, dt)).cauchy_(0.5, 2.0, generator=g),
    "log_normal_": lambda m, s, dt, g: m.empty(s, dtype=getattr(m, dt)).log_normal_(0.2, 0.5, generator=g),
    "bernoulli_": lambda m, s, dt, g: m.empty(s, dtype=getattr(m, dt)).bernoulli_(0.3, generator=g),
    "random_": lambda m, s, dt, g: m.empty(s, dtype=getattr(m, dt)).random_(generator=g),
    "random_(lo,hi)": lambda m, s, dt, g: m.empty(s, dtype=getattr(m, dt)).random_(-5, 100, generator=g),
    "normal(t,t)": lambda m, s, dt, g: m.normal(m.ones(s, dtype=getattr(m, dt)), m.full(s, 2.0, dtype=getattr(m, dt)), generator=g),
    "normal(t,f)": lambda m, s, dt, g: m.normal(m.ones(s, dtype=getattr(m, dt)), 0.5, generator=g),
    "normal(f,f,size)": lambda m, s, dt, g: m.normal(0.5, 2.0, size=s, dtype=getattr(m, dt), generator=g),
    "bernoulli(p)": lambda m, s, dt, g: m.bernoulli(m.full(s, 0.4, dtype=getattr(m, dt)), generator=g),
    "poisson": lambda m, s, dt, g: m.poisson(m.rand(s, dtype=getattr(m, dt), generator=g) * 30, generator=g),
}


@pytest.mark.parametrize("explicit", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_float_functions_bit_equal(name, seed, explicit):
    fn = FACTORIES[name]
    if explicit:
        tgen, ggen = torch.Generator().manual_seed(seed), tg.Generator().manual_seed(seed)
    else:
        torch.manual_seed(seed)
        tg.manual_seed(seed)
        tgen = ggen = None
    for dt in FLOATS:
        for shape in SHAPES:
            _same(fn(torch, shape, dt, tgen), fn(tg, shape, dt, ggen))
    if explicit:
        assert np.array_equal(tgen.get_state().numpy(), ggen.get_state().numpy())
    else:
        _states_equal()


@pytest.mark.parametrize("seed", SEEDS)
def test_integer_functions_bit_equal(seed):
    torch.manual_seed(seed)
    tg.manual_seed(seed)
    for shape in SHAPES:
        for lo, hi in ((0, 10), (-3, 3), (0, 2**31), (-5, 2**40), (-2**62, 2**62)):
            _same(torch.randint(lo, hi, shape), tg.randint(lo, hi, shape))
        for dt in ("int64", "int32", "int16", "uint8", "bool", "float32", "float64"):
            _same(torch.empty(shape, dtype=getattr(torch, dt)).random_(),
                  tg.empty(shape, dtype=getattr(tg, dt)).random_())
        _same(torch.randint_like(torch.ones(shape), 3, 9), tg.randint_like(tg.ones(shape), 3, 9))
    for n in (0, 1, 2, 5, 50, 1000):
        _same(torch.randperm(n), tg.randperm(n))
    _states_equal()


@pytest.mark.parametrize("seed", SEEDS)
def test_like_and_float16(seed):
    torch.manual_seed(seed)
    tg.manual_seed(seed)
    for shape in SHAPES:
        x, y = torch.ones(shape), tg.ones(shape)
        _same(torch.rand_like(x), tg.rand_like(y))
        _same(torch.randn_like(x), tg.randn_like(y))
        _same(torch.rand(shape, dtype=torch.float16), tg.rand(shape, dtype=tg.float16))
        _same(torch.empty(shape, dtype=torch.float16).uniform_(-0.37, 1.91),
              tg.empty(shape, dtype=tg.float16).uniform_(-0.37, 1.91))
    _states_equal()


@pytest.mark.parametrize("seed", SEEDS)
def test_multinomial_bit_equal(seed):
    torch.manual_seed(seed)
    tg.manual_seed(seed)
    for dt in FLOATS:
        for shape in ((5,), (3, 7), (4, 27)):
            p, q = torch.rand(shape, dtype=getattr(torch, dt)), tg.rand(shape, dtype=getattr(tg, dt))
            for k, repl in ((1, False), (1, True), (3, False), (shape[-1], False), (9, True)):
                _same(torch.multinomial(p, k, repl), tg.multinomial(q, k, repl))
    _states_equal()


def test_scalar_normal_cache_carries_over():
    """Odd-sized small normals leave torch's second Box–Muller sample in the generator."""
    torch.manual_seed(3)
    tg.manual_seed(3)
    for n in (1, 3, 1, 2, 5, 16, 1):
        _same(torch.randn(n, dtype=torch.float64), tg.randn(n, dtype=tg.float64))
        _states_equal()


def test_in_place_fill_of_a_transposed_tensor_follows_memory_order():
    torch.manual_seed(5)
    tg.manual_seed(5)
    for fill in ("uniform_", "normal_", "exponential_"):
        _same(getattr(torch.empty(5, 7).t(), fill)(), getattr(tg.empty(5, 7).t(), fill)())


def test_state_round_trips_with_torch():
    torch.manual_seed(11)
    tg.manual_seed(11)
    _states_equal()                             # fresh: torch's left=1, next=0
    torch.randn(3, dtype=torch.float64)
    tg.randn(3, dtype=tg.float64)               # leaves a cached normal sample
    _states_equal()
    state = torch.get_rng_state()
    tg.set_rng_state(tg.tensor(state.numpy()))
    _same(torch.rand(700), tg.rand(700))        # across a twist of the 624-word block
    torch.set_rng_state(torch.from_numpy(tg.get_rng_state().numpy()))
    _same(torch.randn(9), tg.randn(9))
    assert tg.initial_seed() == torch.initial_seed() == 11
    with pytest.raises(ValueError):
        tg.set_rng_state(tg.zeros(48, dtype=tg.uint8))


@pytest.mark.parametrize("seed", (0, 1234))
def test_module_default_initialisation(seed):
    layers = [
        lambda m: m.nn.Linear(3, 4), lambda m: m.nn.Linear(37, 19, bias=False),
        lambda m: m.nn.Embedding(27, 10), lambda m: m.nn.Conv1d(3, 5, 3), lambda m: m.nn.Conv2d(2, 4, 3),
        lambda m: m.nn.LayerNorm(8), lambda m: m.nn.RNN(4, 6), lambda m: m.nn.GRU(4, 6),
        lambda m: m.nn.LSTM(4, 6, num_layers=2), lambda m: m.nn.MultiheadAttention(8, 2),
        lambda m: m.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16),
    ]
    torch.manual_seed(seed)
    tg.manual_seed(seed)
    for make in layers:
        a, b = make(torch), make(tg)
        ta = dict(a.named_parameters())
        tb = dict(b.named_parameters())
        assert list(ta) == list(tb)
        for k in ta:
            _same(ta[k], tb[k])
    _states_equal()


def test_init_functions():
    torch.manual_seed(2)
    tg.manual_seed(2)
    for name, kw in (("uniform_", {"a": -2, "b": 3}), ("normal_", {"std": 0.02}),
                     ("kaiming_uniform_", {}), ("kaiming_normal_", {"mode": "fan_out"}),
                     ("xavier_uniform_", {"gain": 1.3}), ("xavier_normal_", {}),
                     ("trunc_normal_", {}), ("trunc_normal_", {"std": 0.02}),
                     ("trunc_normal_", {"mean": 0.0, "std": 1.0, "a": 1.5, "b": 2.5})):
        for shape in ((4, 5), (16, 3, 3), (40, 33)):
            _same(getattr(torch.nn.init, name)(torch.empty(shape), **kw),
                  getattr(tg.nn.init, name)(tg.empty(shape), **kw))
    _states_equal()


@pytest.mark.parametrize("p", (0.1, 0.3, 0.5))
def test_dropout_masks(p):
    torch.manual_seed(9)
    tg.manual_seed(9)
    for dt in FLOATS:
        x, y = torch.randn(6, 35, dtype=getattr(torch, dt)), tg.randn(6, 35, dtype=getattr(tg, dt))
        _same(torch.nn.functional.dropout(x, p), tg.nn.functional.dropout(y, p))
        _same(torch.nn.Dropout(p)(x), tg.nn.Dropout(p)(y))
        _same(torch.nn.functional.dropout2d(x.reshape(2, 3, 5, 7), p),
              tg.nn.functional.dropout2d(y.reshape(2, 3, 5, 7), p))
    _states_equal()


def test_samplers_and_loader():
    from torch.utils import data as td
    from tinygrad_tx.utils import data as gd
    for seed in (0, 7):
        torch.manual_seed(seed)
        tg.manual_seed(seed)
        assert list(td.RandomSampler(range(10))) == list(gd.RandomSampler(range(10)))
        assert (list(td.RandomSampler(range(10), replacement=True, num_samples=40))
                == list(gd.RandomSampler(range(10), replacement=True, num_samples=40)))
        assert ([list(s) for s in td.random_split(range(10), [3, 7])]
                == [list(s) for s in gd.random_split(range(10), [3, 7])])
        assert ([b.tolist() for b in td.DataLoader(list(range(20)), batch_size=6, shuffle=True)]
                == [b.tolist() for b in gd.DataLoader(list(range(20)), batch_size=6, shuffle=True)])
        w = [0.1, 2, 3, 0, 1.5]
        assert list(td.WeightedRandomSampler(w, 12)) == list(gd.WeightedRandomSampler(w, 12))
        _states_equal()


def test_bigram_training_prints_torch_losses():
    """A tutorial-style bigram model trained a few steps from one seed on both sides: the same
    weights, batches and losses (no state copied between them)."""
    losses = {}
    for m in (torch, tg):
        m.manual_seed(1337)
        data = m.randint(0, 27, (400,))
        W = m.randn(27, 27, requires_grad=True)
        out = []
        for _ in range(5):
            ix = m.randint(0, 399, (32,))
            xs, ys = data[ix], data[ix + 1]
            logits = W[xs]
            loss = m.nn.functional.cross_entropy(logits, ys)
            W.grad = None
            loss.backward()
            with m.no_grad():
                W -= 10.0 * W.grad
            out.append(f"{loss.item():.4f}")
        g = m.Generator().manual_seed(2147483647)
        probs = m.softmax(W.detach()[0], 0)
        out.append(m.multinomial(probs, 5, replacement=True, generator=g).tolist())
        losses[m] = out
    assert losses[torch] == losses[tg]


def test_gpt_training_and_sampling_match_torch():
    """tinygrad_tx.models' GPT and its torch twin, each built, trained three AdamW steps (with
    dropout) and sampled from one seed: the same printed losses and the same sampled tokens."""
    from reference import generation as RG
    from reference.gpt import GPTLanguageModel as TorchGPT
    from tinygrad_tx.generation import generate
    from tinygrad_tx.models.gpt import GPTLanguageModel as OurGPT
    runs = {}
    for m, cls, gen in ((torch, TorchGPT, RG.generate), (tg, OurGPT, generate)):
        m.manual_seed(1337)
        model = cls(27, d_model=16, n_heads=2, n_layers=2, block_size=8, dropout=0.1)
        opt = m.optim.AdamW(model.parameters(), lr=1e-2)
        data = m.randint(0, 27, (300,))
        out = []
        for _ in range(3):
            ix = m.randint(0, 300 - 9, (4,))
            x = m.stack([data[i:i + 8] for i in ix.tolist()])
            y = m.stack([data[i + 1:i + 9] for i in ix.tolist()])
            _, loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(f"{loss.item():.4f}")
        model.eval()
        ids = gen(model, m.zeros((2, 1), dtype=m.int64), 10, stop_token=None)
        out.append(np.asarray(ids.tolist() if hasattr(ids, "tolist") else ids).tolist())
        runs[m] = out
    assert runs[torch] == runs[tg], runs
