"""Random number generators (torch's ``torch.Generator``) and the sampling kernels.

``Generator`` **is** a ``numpy.random.Generator`` (a subclass, on NumPy's PCG64 bit
generator), with torch's methods added: ``manual_seed`` (returns the generator),
``seed``, ``initial_seed``, ``get_state``/``set_state`` and ``device``. Every NumPy method
(``standard_normal``, ``random``, ``integers``, ``permutation``, ``choice``, ...) is there
too, so code that takes an ``np.random.Generator`` (``nn.init``, dropout, ``DataLoader``)
takes a ``tinygrad_tx.Generator`` unchanged, and ``numpy_generator`` returns the object
itself for code that wants to say so.

Streams: ``Generator().manual_seed(s)`` draws exactly what ``np.random.default_rng(s)``
draws (PCG64 seeded through ``SeedSequence(s)``); torch's own generator is a Mersenne
twister, so the *values* differ from torch's, never the distributions. As in torch, a
fresh ``Generator()`` starts from the fixed seed 67280421310721, while the global default
generator starts from a random seed (``tinygrad_tx.initial_seed()`` tells which).

The global generator (``tinygrad_tx.default_generator``, seeded by
``tinygrad_tx.manual_seed``) is also what ``tinygrad_tx.tensor.default_generator()``
returns, so everything that draws from "the global generator" draws from one stream.

The ``draw_*`` kernels at the bottom fill a shape with samples of one distribution in a
given dtype; the factories and the in-place ``Tensor.normal_``-style methods use them.
Values are drawn in float64 and rounded to the requested dtype, as ``nn.init`` does.
"""
from __future__ import annotations

import importlib
import numbers

import numpy as np

from .device import check as _check_device
from .dtypes import default_float
from .dtypes import resolve as _resolve_dtype

_tensor = importlib.import_module("tinygrad_tx.tensor")   # the module (tinygrad_tx.tensor is also a function)
from ._factory_args import InvalidArgumentError  # noqa: E402  (after the tensor module, which it imports)


def _reseeded(generator, how: str) -> None:
    """A generator's stream is reset (``manual_seed``, ``set_state``): a compiled call being
    recorded refuses it (its replay would not reset the stream, and the reset may leave the state
    as it was, so the recorder cannot see it by the state alone)."""
    from .autograd import recording
    if recording.recorder is not None:
        recording.recorder.unsupported(f"{how}() inside the function (a replay would not reset the random stream)")


DEFAULT_SEED = 67280421310721       # torch's seed of a fresh torch.Generator()
_U64 = 1 << 64
STATE_BYTES = 48                    # see Generator.get_state


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


class Generator(np.random.Generator):
    """A random number generator: ``torch.Generator``'s methods on a NumPy PCG64 generator.

    >>> g = Generator().manual_seed(0)
    >>> float(g.random()) == float(np.random.default_rng(0).random())
    True
    """

    def __init__(self, device="cpu"):
        self._device = _check_device(device)
        super().__init__(np.random.PCG64(DEFAULT_SEED))
        self._initial_seed = DEFAULT_SEED

    # ------------------------------------------------------------------ torch's methods
    def manual_seed(self, seed) -> "Generator":
        """Reset the stream to the one ``np.random.default_rng(seed)`` draws; returns self."""
        seed = _check_seed(seed, strict=True)
        _reseeded(self, "manual_seed")
        self.bit_generator.state = np.random.PCG64(seed).state
        self._initial_seed = seed
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
        """The full state as a uint8 Tensor of 48 bytes (torch returns a uint8 Tensor too;
        its layout is its own): PCG64's 128-bit ``state`` and ``inc``, the buffered-uint32
        flag and value (4 bytes each), and the initial seed (8 bytes), all little-endian.
        ``set_state`` of those bytes resumes the stream exactly."""
        s = self.bit_generator.state
        raw = b"".join([s["state"]["state"].to_bytes(16, "little"),
                        s["state"]["inc"].to_bytes(16, "little"),
                        int(s["has_uint32"]).to_bytes(4, "little"),
                        int(s["uinteger"]).to_bytes(4, "little"),
                        self._initial_seed.to_bytes(8, "little")])
        return _tensor.Tensor._from_op(np.frombuffer(raw, dtype=np.uint8).copy(), None)

    def set_state(self, new_state) -> "Generator":
        """Restore a state returned by ``get_state`` (a uint8 Tensor or array of 48 bytes)."""
        arr = new_state._data if isinstance(new_state, _tensor.Tensor) else new_state
        if not isinstance(arr, np.ndarray) or arr.dtype != np.uint8:
            raise TypeError(f"set_state: the RNG state must be a uint8 Tensor (from get_state()), "
                            f"got {type(new_state).__name__}"
                            + (f" of dtype {arr.dtype}" if isinstance(arr, np.ndarray) else ""))
        if arr.size != STATE_BYTES:
            raise ValueError(f"set_state: expected a state of {STATE_BYTES} bytes, got {arr.size}")
        raw = arr.reshape(-1).tobytes()
        _reseeded(self, "set_rng_state")
        state = {"bit_generator": "PCG64",
                 "state": {"state": int.from_bytes(raw[0:16], "little"),
                           "inc": int.from_bytes(raw[16:32], "little")},
                 "has_uint32": int.from_bytes(raw[32:36], "little"),
                 "uinteger": int.from_bytes(raw[36:40], "little")}
        try:
            self.bit_generator.state = state
        except (ValueError, TypeError) as e:
            raise ValueError(f"set_state: not a valid generator state ({e})") from None
        self._initial_seed = int.from_bytes(raw[40:48], "little")
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


def _round_below(values: np.ndarray, high: float, dt: np.dtype) -> np.ndarray:
    """Rounding float64 draws in [low, high) to a narrower dtype can land on ``high``
    itself; move those (rare) values to the largest number below it, keeping [low, high)."""
    out = values.astype(dt)
    top = dt.type(high)
    if dt != np.float64 and out.size and float(top) == high:
        np.minimum(out, np.nextafter(top, dt.type(-np.inf)), out=out)
    return out


def draw_uniform(shape, dtype=None, low: float = 0.0, high: float = 1.0, generator=None) -> np.ndarray:
    """Samples of U[low, high): ``low + (high - low) * u``, u uniform on [0, 1) in float64."""
    low, high = _number(low, "low", "uniform_"), _number(high, "high", "uniform_")
    dt = _float_dtype(dtype, "uniform_")
    if not low <= high:
        raise InvalidArgumentError(f"uniform_: expects low <= high, but got low={low}, high={high}")
    u = get_generator(generator).random(shape)
    return _round_below(low + (high - low) * u if (low, high) != (0.0, 1.0) else u, high, dt)


def draw_normal(shape, dtype=None, mean: float = 0.0, std: float = 1.0, generator=None) -> np.ndarray:
    """Samples of N(mean, std²): ``mean + std * z``, z standard normal in float64."""
    mean, std = _number(mean, "mean", "normal_"), _number(std, "std", "normal_")
    dt = _float_dtype(dtype, "normal_")
    if not std >= 0:
        raise InvalidArgumentError(f"normal_: expects std >= 0.0, but found std {std}")
    z = get_generator(generator).standard_normal(shape)
    return (z if (mean, std) == (0.0, 1.0) else mean + std * z).astype(dt)


def draw_exponential(shape, dtype=None, lambd: float = 1.0, generator=None) -> np.ndarray:
    """Samples of Exp(lambd) (density lambd·exp(-lambd·x)): ``e / lambd``, e standard exponential."""
    lambd = _number(lambd, "lambd", "exponential_")
    dt = _float_dtype(dtype, "exponential_")
    if not lambd > 0:
        raise InvalidArgumentError(f"exponential_: expects lambda > 0.0, but found lambda={lambd}")
    return (get_generator(generator).standard_exponential(shape) / lambd).astype(dt)


def draw_geometric(shape, dtype=None, p: float = 0.5, generator=None) -> np.ndarray:
    """Samples of the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    p = _number(p, "p", "geometric_")
    dt = _resolve_dtype(dtype) if dtype is not None else default_float()
    if not 0 < p < 1:
        raise InvalidArgumentError(f"geometric_: expects p to be in (0, 1), but got p={p}")
    return get_generator(generator).geometric(p, shape).astype(dt)


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
    return (get_generator(generator).random(shape) < p).astype(dt)


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
    draws = get_generator(generator).integers(low, high, size=shape, dtype=np.int64) \
        if high - 1 < (1 << 63) and low >= -(1 << 63) else None
    if draws is None:
        raise InvalidArgumentError(f"random_: [{low}, {high}) is outside the int64 range")
    return draws.astype(dt)
