"""Random number generators (torch's ``torch.Generator``) and the sampling kernels.

``Generator`` is torch's CPU generator: a Mersenne twister (mt19937) seeded by ``init_genrand``
with the low 32 bits of the seed, held in NumPy's ``MT19937`` bit generator, plus torch's cached
second Box–Muller sample. The random functions transform its words exactly as torch's CPU
kernels do (``torch_streams.py``), so ``manual_seed(s)`` followed by the same calls gives the
same numbers as ``torch.manual_seed(s)``, bit for bit.

``Generator`` also **is** a ``numpy.random.Generator`` (a subclass, on that same MT19937), so
code that takes an ``np.random.Generator`` takes it unchanged; NumPy's own methods
(``standard_normal``, ``permutation``, ...) draw from the same words with NumPy's transforms,
which are not torch's. Anything else passed as ``generator=`` that is a plain
``np.random.Generator`` gets torch's transforms applied to its own 32-bit words.

``get_state``/``set_state`` use torch's byte layout (``CPUGeneratorImplState``, 5056 bytes: the
legacy THGeneratorState with the seed, ``left``, ``seeded``, ``next``, the 624 state words as
uint64, the cached double normal sample, then the cached float one), so a state from
``torch.get_rng_state().numpy()`` loads here and ours loads in torch.

As in torch, a fresh ``Generator()`` starts from the fixed seed 67280421310721, while the
global default generator starts from a random seed (``tinygrad_tx.initial_seed()`` tells which).
The global generator (``tinygrad_tx.default_generator``, seeded by ``tinygrad_tx.manual_seed``)
is also what ``tinygrad_tx.tensor.default_generator()`` returns.
"""
from __future__ import annotations

import importlib
import numbers
import struct

import numpy as np

from . import torch_streams as _ts
from .core import seam as _seam
from .core.device import check as _check_device
from .core.dtypes import default_float
from .core.dtypes import resolve as _resolve_dtype

_tensor = importlib.import_module("tinygrad_tx.tensor")   # the module (tinygrad_tx.tensor is also a function)
from .errors import InvalidArgumentError  # noqa: E402  (after the tensor module, which it imports)


def _reseeded(generator, how: str) -> None:
    """A generator's stream is reset (``manual_seed``, ``set_state``): a compiled call being
    recorded refuses it (its replay would not reset the stream, and the reset may leave the state
    as it was, so the recorder cannot see it by the state alone)."""
    _seam.unsupported(f"{how}() inside the function (a replay would not reset the random stream)")


DEFAULT_SEED = 67280421310721       # torch's seed of a fresh torch.Generator()
_U64 = 1 << 64
_N = 624                            # mt19937's state words
STATE_BYTES = 5056                  # sizeof(CPUGeneratorImplState), see Generator.get_state
_LEGACY_BYTES = 5048                # sizeof(THGeneratorState), which torch's set_state also takes
_LAYOUT = struct.Struct("<Qiiq624Qdddi4x")    # the legacy part: 5048 bytes


def _check_seed(seed, strict: bool) -> int:
    """A seed as torch takes it: an int in [-2**63, 2**64 - 1]; a negative seed s means
    2**64 + s. ``strict`` (Generator.manual_seed) refuses bools, floats and strings;
    the module-level ``manual_seed`` first converts with ``int()``, as torch's does."""
    if strict:
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise RuntimeError(f"manual_seed expected an int seed, but got {seed!r} of type "
                               f"{type(seed).__name__}")
    else:
        try:
            seed = int(seed)
        except (TypeError, ValueError) as e:   # the class int() raised, as torch lets it through
            raise type(e)(f"manual_seed: seed must be an int (or convertible with int()), "
                          f"got {seed!r}") from None
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError(f"manual_seed: seed {seed} is out of range; it must be in "
                         f"[-2**63, 2**64 - 1]")
    return seed % _U64


def _fresh_seed() -> int:
    """A non-deterministic 64-bit seed from the operating system's entropy."""
    return int(np.random.SeedSequence().entropy) % _U64


def init_genrand(seed: int) -> np.ndarray:
    """mt19937's state after ``init_genrand(seed & 0xffffffff)`` (Matsumoto & Nishimura's
    seeding, which torch uses): s[0] = seed, s[i] = 1812433253 * (s[i-1] ^ (s[i-1] >> 30)) + i."""
    key = [seed & 0xFFFFFFFF]
    for i in range(1, _N):
        prev = key[-1]
        key.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF)
    return np.array(key, dtype=np.uint32)


class Generator(np.random.Generator):
    """A random number generator: torch's CPU ``torch.Generator`` (mt19937), whose draws
    through tinygrad_tx's random functions equal torch's bit for bit.

    >>> g = Generator().manual_seed(0)
    >>> [int(w) for w in g._words32(2)] == list(np.random.RandomState(0).randint(0, 2**32, 2, dtype=np.uint64))
    True
    """

    def __init__(self, device="cpu"):
        self._device = _check_device(device)
        super().__init__(np.random.MT19937(0))
        self._next_double_normal = None
        self._next_float_normal = None
        self.manual_seed(DEFAULT_SEED)

    # ------------------------------------------------------------------ the words
    def _words32(self, n: int) -> np.ndarray:
        """The next n 32-bit words of torch's ``random()`` (uint64 array)."""
        self._fresh = False
        return self.bit_generator.random_raw(n).astype(np.uint64)

    # ------------------------------------------------------------------ torch's methods
    def manual_seed(self, seed) -> "Generator":
        """Reseed: torch's ``mt19937(seed)`` (``init_genrand`` of the seed's low 32 bits),
        dropping the cached normal samples; returns self."""
        seed = _check_seed(seed, strict=True)
        _reseeded(self, "manual_seed")
        self.bit_generator.state = {"bit_generator": "MT19937",
                                    "state": {"key": init_genrand(seed), "pos": _N}}
        self._initial_seed = seed
        self._next_double_normal = self._next_float_normal = None
        self._fresh = True     # torch says next = 0 until the first draw (get_state tells)
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed chosen."""
        seed = _fresh_seed()
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._initial_seed

    @property
    def device(self):
        return self._device

    @property
    def numpy_generator(self) -> np.random.Generator:
        """The ``np.random.Generator`` that draws: this object itself (it is one)."""
        return self

    def get_state(self):
        """The full state as a uint8 Tensor of 5056 bytes in torch's layout
        (``CPUGeneratorImplState``): seed (u64), left (i32), seeded (i32), next (u64), the 624
        state words (u64 each), normal_x, normal_y, normal_rho (f64), normal_is_valid (i32),
        padding, then next_float_normal_sample (f32), its validity (bool), padding. Only
        normal_y (the cached double sample) and the float sample carry values."""
        st = self.bit_generator.state["state"]
        pos = int(st["pos"])
        nxt = 0 if (pos == _N and self._fresh) else pos
        left = _N - pos + 1
        dbl = self._next_double_normal
        raw = _LAYOUT.pack(self._initial_seed, left, 1, nxt, *(int(k) for k in st["key"]),
                           0.0, 0.0 if dbl is None else dbl, 0.0, int(dbl is not None))
        flt = self._next_float_normal
        raw += struct.pack("<f?3x", 0.0 if flt is None else flt, flt is not None)
        return _tensor.Tensor._from_op(np.frombuffer(raw, dtype=np.uint8).copy(), None)

    def set_state(self, new_state) -> "Generator":
        """Restore a state from ``get_state`` (ours or torch's: a uint8 Tensor or array of
        5056 bytes, or torch's legacy 5048)."""
        arr = new_state._data if isinstance(new_state, _tensor.Tensor) else new_state
        if not isinstance(arr, np.ndarray) or arr.dtype != np.uint8:
            raise TypeError(f"set_state: the RNG state must be a uint8 Tensor (from get_state()), "
                            f"got {type(new_state).__name__}"
                            + (f" of dtype {arr.dtype}" if isinstance(arr, np.ndarray) else ""))
        if arr.size not in (STATE_BYTES, _LEGACY_BYTES):
            raise ValueError(f"set_state: expected either a THGeneratorState of size {_LEGACY_BYTES} or a "
                             f"CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG state "
                             f"size to be {arr.size}")
        raw = arr.reshape(-1).tobytes()
        _reseeded(self, "set_rng_state")
        fields = _LAYOUT.unpack(raw[:_LEGACY_BYTES])
        seed, left, _seeded, nxt = fields[:4]
        key = np.array(fields[4:4 + _N], dtype=np.uint64)
        normal_y, valid = fields[4 + _N + 1], fields[-1]
        if not 1 <= left <= _N or not 0 <= nxt <= _N or (key >> np.uint64(32)).any():
            raise ValueError(f"set_state: not a valid generator state (left={left}, next={nxt})")
        pos = _N if left == 1 else nxt
        self.bit_generator.state = {"bit_generator": "MT19937",
                                    "state": {"key": key.astype(np.uint32), "pos": pos}}
        self._initial_seed = seed
        self._fresh = left == 1 and nxt == 0
        self._next_double_normal = normal_y if valid else None
        self._next_float_normal = None
        if len(raw) == STATE_BYTES:
            flt, flt_valid = struct.unpack("<f?3x", raw[_LEGACY_BYTES:])
            self._next_float_normal = flt if flt_valid else None
        return self

    def __reduce__(self):   # pickles as a tinygrad_tx.Generator, not a plain NumPy one
        return (_restore, (self.get_state()._data.tobytes(), str(self._device)))

    def __repr__(self):
        return f"tinygrad_tx.Generator(device='{self._device}', initial_seed={self._initial_seed})"

    __str__ = __repr__


def _restore(raw: bytes, device: str) -> Generator:
    return Generator(device).set_state(np.frombuffer(raw, dtype=np.uint8))


# ============================================================================ the global generator

default_generator = Generator()
default_generator.seed()                  # torch's global generator starts from a random seed
_tensor._rng = default_generator          # tensor.default_generator() returns this same object


def _default() -> Generator:
    """The global generator (``tensor.default_generator()`` returns the same object)."""
    return default_generator


def get_generator(generator, arg: str = "generator") -> np.random.Generator:
    """``generator`` (a tinygrad_tx.Generator or any np.random.Generator), or the global one."""
    if generator is None:
        return _default()
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"{arg} must be a tinygrad_tx.Generator (or a numpy.random.Generator), "
                        f"got {type(generator).__name__}")
    return generator


def manual_seed(seed) -> Generator:
    """Seed the global generator (``torch.manual_seed``); returns it. After
    ``manual_seed(s)`` the global stream is ``np.random.default_rng(s)``'s."""
    _default()
    return default_generator.manual_seed(_check_seed(seed, strict=False))


def seed() -> int:
    """Seed the global generator from the operating system's entropy; returns the seed."""
    return _default().seed()


def initial_seed() -> int:
    """The seed the global generator was last seeded with."""
    return _default().initial_seed()


def get_rng_state():
    """The global generator's state (see ``Generator.get_state``)."""
    return _default().get_state()


def set_rng_state(new_state) -> None:
    """Restore the global generator's state from ``get_rng_state()``."""
    _default().set_state(new_state)


# ============================================================================ sampling kernels
# Each returns a fresh ndarray of ``shape`` in ``dtype`` (anything dtypes.resolve takes).

def _float_dtype(dtype, op: str) -> np.dtype:
    dt = _resolve_dtype(dtype) if dtype is not None else default_float()
    if dt.kind != "f":
        raise TypeError(f"{op}: needs a floating-point dtype, got {dt}")
    return dt


def _number(value, arg: str, op: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {arg} must be a real number, got {value!r}")
    return float(value)


def _count(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _shaped(flat: np.ndarray, shape, layout=None) -> np.ndarray:
    """The draws ``flat`` (in torch's order) as an array of ``shape``. With ``layout`` (the
    array an in-place fill replaces) they go in its memory order, as TensorIterator visits a
    permuted tensor: the axis of the largest stride first."""
    shape = tuple(shape)
    if layout is None or layout.ndim < 2 or layout.flags.c_contiguous:
        return flat.reshape(shape)
    order = sorted(range(layout.ndim), key=lambda ax: -abs(layout.strides[ax]))
    block = flat.reshape([shape[ax] for ax in order])
    return block.transpose(np.argsort(order))


def _contiguous(layout) -> bool:
    return layout is None or layout.flags.c_contiguous


def draw_uniform(shape, dtype=None, low: float = 0.0, high: float = 1.0, generator=None,
                 layout=None) -> np.ndarray:
    """Samples of U[low, high) exactly as torch's ``uniform_`` (see ``torch_streams.uniform``)."""
    low, high = _number(low, "low", "uniform_"), _number(high, "high", "uniform_")
    dt = _float_dtype(dtype, "uniform_")
    if not low <= high:
        raise InvalidArgumentError(f"uniform_: expects low <= high, but got low={low}, high={high}")
    flat = _ts.uniform(get_generator(generator), _count(shape), dt, low, high)
    return _shaped(flat, shape, layout)


def draw_normal(shape, dtype=None, mean: float = 0.0, std: float = 1.0, generator=None,
                layout=None) -> np.ndarray:
    """Samples of N(mean, std²) exactly as torch's ``normal_`` (``torch_streams.normal``)."""
    mean, std = _number(mean, "mean", "normal_"), _number(std, "std", "normal_")
    dt = _float_dtype(dtype, "normal_")
    if not std >= 0:
        raise InvalidArgumentError(f"normal_: expects std >= 0.0, but found std {std}")
    flat = _ts.normal(get_generator(generator), _count(shape), dt, mean, std, _contiguous(layout))
    return _shaped(flat, shape, layout)


def draw_exponential(shape, dtype=None, lambd: float = 1.0, generator=None, layout=None) -> np.ndarray:
    """Samples of Exp(lambd) (density lambd·exp(-lambd·x)) as torch's ``exponential_``."""
    lambd = _number(lambd, "lambd", "exponential_")
    dt = _float_dtype(dtype, "exponential_")
    if not lambd > 0:
        raise InvalidArgumentError(f"exponential_: expects lambda > 0.0, but found lambda={lambd}")
    return _shaped(_ts.exponential(get_generator(generator), _count(shape), dt, lambd), shape, layout)


def draw_geometric(shape, dtype=None, p: float = 0.5, generator=None, layout=None) -> np.ndarray:
    """Samples of the number of Bernoulli(p) trials up to the first success (1, 2, ...), as
    torch's ``geometric_``."""
    p = _number(p, "p", "geometric_")
    dt = _resolve_dtype(dtype) if dtype is not None else default_float()
    if not 0 < p < 1:
        raise InvalidArgumentError(f"geometric_: expects p to be in (0, 1), but got p={p}")
    return _shaped(_ts.geometric(get_generator(generator), _count(shape), dt, p), shape, layout)


def draw_cauchy(shape, dtype=None, median: float = 0.0, sigma: float = 1.0, generator=None,
                layout=None) -> np.ndarray:
    """Samples of Cauchy(median, sigma) as torch's ``cauchy_``."""
    median, sigma = _number(median, "median", "cauchy_"), _number(sigma, "sigma", "cauchy_")
    dt = _float_dtype(dtype, "cauchy_")
    if not sigma > 0:
        raise InvalidArgumentError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _shaped(_ts.cauchy(get_generator(generator), _count(shape), dt, median, sigma), shape, layout)


def draw_log_normal(shape, dtype=None, mean: float = 1.0, std: float = 2.0, generator=None,
                    layout=None) -> np.ndarray:
    """Samples of exp(N(mean, std²)) as torch's ``log_normal_``."""
    mean, std = _number(mean, "mean", "log_normal_"), _number(std, "std", "log_normal_")
    dt = _float_dtype(dtype, "log_normal_")
    if not std > 0:
        raise InvalidArgumentError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _shaped(_ts.log_normal(get_generator(generator), _count(shape), dt, mean, std), shape, layout)


def _check_probabilities(p: np.ndarray, op: str):
    if p.dtype.kind != "f":
        raise TypeError(f"{op}: probabilities must be floating point, got dtype {p.dtype}")
    if p.size and not ((p >= 0) & (p <= 1)).all():    # NaN fails both comparisons
        bad = p[~((p >= 0) & (p <= 1))].flat[0]
        raise InvalidArgumentError(f"{op}: expects every probability to be in [0, 1], but got {bad}")


def draw_bernoulli(p, shape=None, dtype=None, generator=None) -> np.ndarray:
    """1 with probability p, else 0: ``u < p`` with u uniform on [0, 1). ``p`` is a float
    or an array broadcastable to ``shape`` (default: p's shape); float32 by default."""
    if isinstance(p, _tensor.Tensor):
        p = p._data
    if isinstance(p, np.ndarray):
        _check_probabilities(p, "bernoulli_")
    else:
        p = _number(p, "p", "bernoulli_")
        if not 0 <= p <= 1:
            raise InvalidArgumentError(f"bernoulli_: expects p to be in [0, 1], but got p={p}")
    shape = np.shape(p) if shape is None else tuple(shape)
    if np.ndim(p):
        try:
            np.broadcast_shapes(np.shape(p), shape)
        except ValueError:
            raise InvalidArgumentError(f"bernoulli_: probabilities of shape {np.shape(p)} do not broadcast "
                             f"to shape {shape}") from None
    dt = _resolve_dtype(dtype) if dtype is not None else default_float()
    gen = get_generator(generator)
    if np.ndim(p):
        mask = _ts.bernoulli_tensor(gen, np.broadcast_to(p, shape))
    else:
        mask = _ts.bernoulli_scalar(gen, _count(shape), p).reshape(shape)
    return mask.astype(dt)


def draw_integers(shape, dtype, low: int, high: int, generator=None) -> np.ndarray:
    """Integers uniform on [low, high) (``random_``/``randint``), in ``dtype`` (checked to hold them)."""
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"random_: {name} must be an int, got {v!r}")
    low, high = int(low), int(high)
    if not low < high:
        raise InvalidArgumentError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dt = _resolve_dtype(dtype) if dtype is not None else np.dtype(np.int64)
    if dt.kind in "iub":
        lo, hi = (0, 1) if dt.kind == "b" else (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
        if low < lo or high - 1 > hi:
            raise InvalidArgumentError(f"random_: the range [{low}, {high}) does not fit in dtype {dt} "
                             f"([{lo}, {hi}])")
    elif dt.kind == "f" and max(abs(low), abs(high - 1)) > 2 ** np.finfo(dt).nmant + 1:
        raise InvalidArgumentError(f"random_: [{low}, {high}) holds integers that dtype {dt} cannot represent exactly")
    if not (high - 1 < (1 << 63) and low >= -(1 << 63)):
        raise InvalidArgumentError(f"random_: [{low}, {high}) is outside the int64 range")
    return _ts.integers(get_generator(generator), _count(shape), dt, low, high).reshape(shape)
