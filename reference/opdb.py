"""The op database: one entry per public op, read by the generic checks of tests/test_opdb.py.

Modelled on the idea of torch's OpInfo (one record per op, the tests iterate the records), written
for this project. An :class:`Op` says

* ``name``: the public name (``tinygrad_tx.<name>`` and/or ``Tensor.<name>``), and ``aliases``:
  other public spellings of the same op (``absolute`` for ``abs``), covered by the same entry;
* ``call(torch, *args, **kwargs)``: the op written once against torch's names, so that it runs on
  both engines (``torch`` is ``tinygrad_tx`` or ``torch``): ``call(torch, ...)`` *is* the torch
  counterpart. ``pick(torch, result)`` makes one tensor of a tuple result (``split``: the pieces
  flattened and concatenated; ``max(dim)``: the values);
* ``samples(dtype, seed)``: :class:`Sample` s -- the shapes that break things: 0-d, empty, size-1
  dims, broadcasting, a transposed (non-contiguous) leaf and a *view of a view* (a strided slice of
  a transposed tensor, made inside the call on both engines, so the op sees that layout and the
  gradient flows back through it). Negative strides are not legal: ``from_numpy`` refuses them, as
  torch's does, and ``flip`` copies in both. The family generators (``unary``, ``binary``,
  ``same_shape``, ``reduction``, ``ternary``) also take ``size=``: then one contiguous sample of
  that size (what bench/ops_table.py times); ``shapes_of`` lists its cases in ``samples.cases``;
* ``dtypes``: the float dtypes whose values and gradients are compared (float64 to 1e-10;
  float32 against torch float32's own error w.r.t. a float64 oracle: ``reference.testing``'s
  rule), and ``exact_dtypes``: the integer/bool dtypes it also takes (results compared exactly);
* ``functions``: the engine Function classes its graph is made of (checked against the graph);
* flags: ``grad`` (first derivative; False: forward only), ``gradgrad`` (second derivative),
  ``inplace`` (the name of its in-place method), ``view`` (returns a view of its first input),
  ``out`` (takes ``out=``), ``compile`` (``tinygrad_tx.compile`` replays it);
* ``xfail``: check name -> the bug that makes it fail (strict xfails in the tests).

Adding an op means: its file, and its entry here. The per-op benchmark (bench/ops_table.py) reads
this database too: every entry with a first derivative and float32 is a row there. This module
imports no torch (``torch`` is always a parameter), so the benchmark's tinygrad_tx worker loads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from tinygrad_tx.testing.values import non_contiguous


@dataclass
class Sample:
    args: tuple                    # NumPy arrays (float ones differentiated) and plain values
    kwargs: dict = field(default_factory=dict)
    label: str = ""
    layouts: tuple = ()            # per arg: "" or "vv" (a view of a view, made inside the call)
    grad: tuple | None = None      # indices to differentiate (None: every float array)

    @property
    def empty(self) -> bool:
        return any(isinstance(a, np.ndarray) and a.size == 0 for a in self.args)


@dataclass
class Op:
    name: str
    call: Callable
    samples: Callable
    functions: tuple = ()
    aliases: tuple = ()
    dtypes: tuple = ("float64", "float32")
    exact_dtypes: tuple = ()
    grad: bool = True
    gradgrad: bool = True
    inplace: str | Callable | None = None   # the in-place method's name, or call(torch, x, *args, **kwargs)
    view: bool = False
    out: bool = False               # takes out= (none does yet: passing it must raise, never be ignored)
    compile: bool | str = True      # False: compile refuses it (warns, runs eagerly); "rerecords": guarded
    pick: Callable | None = None
    zero_grad: bool = False        # its gradient is 0 almost everywhere (floor, sign)
    zero_region: bool = False      # 0 on a region (relu < 0, max's losers): a sample may land in it
    inplace_torch_grad: bool = True  # False: torch has no derivative for the in-place form (acosh_):
                                     # its out-of-place op written back with copy_ is the reference
    grad_args: tuple | None = None  # the float args differentiated (None: all)
    family: str = ""
    xfail: dict = field(default_factory=dict)

    def run(self, lib, *args, **kwargs):
        """The op on ``lib`` (tinygrad_tx or torch), one tensor out."""
        r = self.call(lib, *args, **kwargs)
        return self.pick(lib, r) if self.pick is not None else r


# ----------------------------------------------------------------------------- values

def draw(shape, rng, domain="real", dtype="float64"):
    """Values of ``shape`` in ``domain``, as ``dtype``."""
    shape = tuple(shape)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype in ("int64", "int32", "uint8"):
        if domain in ("away", "nonzero", "positive", "gt1"):     # divisors: no 0
            sign = 1 if dtype == "uint8" or domain in ("positive", "gt1") else rng.choice([-1, 1], shape)
            return np.asarray(rng.integers(1, 6, shape) * sign).astype(dtype)
        return np.asarray(rng.integers(0 if dtype == "uint8" else -4, 6, shape)).astype(dtype)
    if domain == "real":
        a = rng.standard_normal(shape)
    elif domain == "positive":
        a = rng.uniform(0.5, 2.5, shape)
    elif domain == "unit":                        # asin, atanh, erfinv: (-0.9, 0.9)
        a = rng.uniform(-0.9, 0.9, shape)
    elif domain == "unit01":                      # logit: (0.1, 0.9)
        a = rng.uniform(0.1, 0.9, shape)
    elif domain == "gt1":                         # acosh
        a = rng.uniform(1.2, 3.0, shape)
    elif domain in ("away", "nonzero"):           # kinks and poles avoided: |x| in [0.3, 2)
        a = rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    elif domain == "distinct":                    # max/sort without ties
        n = int(np.prod(shape)) if shape else 1
        a = (rng.permutation(n).astype(np.float64) * 0.37 - n * 0.1).reshape(shape)
    elif domain == "few":                         # mode: repeated values
        a = rng.integers(-2, 3, shape) * 0.5
    elif domain == "matrix":                      # det, inverse: diagonally dominant (det > 0, well conditioned)
        a = 0.5 * rng.standard_normal(shape)
        if len(shape) >= 2 and shape[-1] in (shape[-2], shape[-2] + 1):
            k = shape[-1] - shape[-2]     # (n, n+1): the base of a view of a view, whose diagonal is k=1's
            idx = np.arange(shape[-2])
            a[..., idx, idx + k] += 3.0
    elif domain == "offgrid":                     # floor/round/fmod: away from the integers' jumps
        a = np.floor(rng.uniform(-3, 3, shape)) + rng.uniform(0.1, 0.4, shape)
    else:
        raise ValueError(domain)
    return np.asarray(a, dtype=dtype)


def vv_base_shape(shape):
    """The base shape whose view of a view (:func:`apply_layout`) has ``shape``."""
    shape = tuple(shape)
    if len(shape) == 1:
        return (2 * shape[0] + 1,)
    return shape[:-2] + (shape[-1], shape[-2] + 1)


def apply_layout(t, layout):
    """The same view of a view on either engine: a strided slice of a slice (1-d), the rows
    1: of a transposed tensor (n-d)."""
    if layout != "vv":
        return t
    if t.dim() == 1:
        return t[1:][::2]
    return t.transpose(-1, -2)[..., 1:, :]


def _arr(shape, rng, domain, dtype, layout):
    if layout == "vv":
        return draw(vv_base_shape(shape), rng, domain, dtype)
    a = draw(shape, rng, domain, dtype)
    return non_contiguous(a) if layout == "T" else a


def make(specs, dtype, seed, kwargs=None, label="", grad=None):
    """One Sample from ``specs``: per arg ``(shape, domain[, layout])`` or a plain value."""
    rng = np.random.default_rng(seed)
    args, layouts = [], []
    for s in specs:
        if isinstance(s, tuple) and len(s) >= 2 and isinstance(s[0], tuple):
            layout = s[2] if len(s) > 2 else ""
            args.append(_arr(s[0], rng, s[1], dtype, layout))
            layouts.append("vv" if layout == "vv" else "")
        else:
            args.append(s)
            layouts.append("")
    return Sample(tuple(args), dict(kwargs or {}), label, tuple(layouts), grad)


# ----------------------------------------------------------------------------- sample families

UNARY_SHAPES = [((), ""), ((0,), ""), ((1, 3), ""), ((3, 4), ""), ((2, 3, 4), "T"), ((3, 4), "vv"),
                ((5,), "vv"), ((2, 1, 3), "")]


def unary(domain="real", **kw):
    def samples(dtype, seed, size=None):
        if size is not None:                      # one contiguous operand of ``size`` (the per-op bench)
            return [make([(tuple(size), domain)], dtype, seed, kw, f"{tuple(size)}")]
        return [make([(s, domain, lay)], dtype, seed + i, kw, f"{s}{lay}") for i, (s, lay) in enumerate(UNARY_SHAPES)]
    return samples


BINARY_SHAPES = [(((3, 4), ""), ((3, 4), "")), (((3, 1), ""), ((1, 4), "")), (((), ""), ((2, 3), "")),
                 (((2, 3), "T"), ((3,), "")), (((0, 3), ""), ((3,), "")), (((3, 4), "vv"), ((4,), "")),
                 (((2, 1, 3), ""), ((2, 3), "vv")), (((2, 3), ""), ((), ""))]


def binary(d0="real", d1="real", scalar=None, **kw):
    """Pairs with broadcasting, 0-d, empty and non-contiguous operands; ``scalar``: also a
    Python number as the second operand."""
    def samples(dtype, seed, size=None):
        if size is not None:                      # two operands of ``size``
            return [make([(tuple(size), d0), (tuple(size), d1)], dtype, seed, kw, f"{tuple(size)}")]
        out = [make([(a, d0, la), (b, d1, lb)], dtype, seed + i, kw, f"{a}{la},{b}{lb}")
               for i, ((a, la), (b, lb)) in enumerate(BINARY_SHAPES)]
        if scalar is not None:
            out.append(make([((2, 3), d0), scalar], dtype, seed + 99, kw, f"(2,3),{scalar}"))
        return out
    return samples


def same_shape(n, domains=None, **kw):
    """``n`` operands of one shape (with broadcasting of the last)."""
    domains = domains or ["real"] * n

    def samples(dtype, seed, size=None):
        if size is not None:                      # ``n`` operands of ``size``
            return [make([(tuple(size), d) for d in domains], dtype, seed, kw, f"{tuple(size)}")]
        shapes = [[(3, 4)] * n, [(2, 3, 4)] * (n - 1) + [(4,)], [()] * n, [(0, 2)] * n]
        return [make([(s, d) for s, d in zip(ss, domains)], dtype, seed + i, kw, str(ss))
                for i, ss in enumerate(shapes)]
    return samples


def reduction(domain="real", dims=(None, -1, (0, 1), 0), keepdim=True, empty=True, extra=None, **kw):
    """Full and per-dim reductions (negative, tuple dims, keepdim), 0-d, size-1 and empty inputs."""
    def samples(dtype, seed, size=None):
        if size is not None:                      # one operand of ``size``, reduced over dims[0]
            d = dims[0]
            return [make([(tuple(size), domain)], dtype, seed, dict(kw, **({} if d is None else {"dim": d})),
                         f"{tuple(size)} dim={d}")]
        out = []
        for i, d in enumerate(dims):
            k = dict(kw, **({} if d is None else {"dim": d}))
            out.append(make([((3, 4), domain)], dtype, seed + i, k, f"(3,4) dim={d}"))
            if keepdim and d is not None:
                out.append(make([((2, 3, 4), domain, "T")], dtype, seed + 10 + i, dict(k, keepdim=True),
                                f"(2,3,4)T dim={d} keepdim"))
        out.append(make([((4, 5), domain, "vv")], dtype, seed + 20, dict(kw, **({"dim": 1} if dims[1:] else {})),
                        "(4,5)vv"))
        out.append(make([((1, 3), domain)], dtype, seed + 21, dict(kw, **({"dim": 0} if dims[1:] else {})),
                        "(1,3) dim=0"))
        out.append(make([((), domain)], dtype, seed + 22, dict(kw, **({} if None in dims else {"dim": 0})), "()"))
        if empty:
            out.append(make([((0, 3), domain)], dtype, seed + 23, dict(kw, **({"dim": 1} if dims[1:] else {})),
                            "(0,3) dim=1"))
        return out + (extra(dtype, seed) if extra else [])
    return samples


TERNARY_SHAPES = [(((3, 4), ""), ((3, 4), ""), ((3, 4), "")), (((2, 3, 4), "T"), ((3, 4), ""), ((4,), "")),
                  (((), ""), ((2, 3), ""), ((), "")), (((0, 3), ""), ((3,), ""), ((0, 3), "")),
                  (((3, 4), "vv"), ((1, 4), ""), ((3, 1), "")), (((2, 1, 3), ""), ((2, 3), "vv"), ((3,), ""))]


def ternary(d0="real", d1="real", d2="real", **kw):
    """Three operands with broadcasting, 0-d, empty and non-contiguous ones (addcmul, addcdiv)."""
    def samples(dtype, seed, size=None):
        if size is not None:                      # three operands of ``size``
            return [make([(tuple(size), d) for d in (d0, d1, d2)], dtype, seed, kw, f"{tuple(size)}")]
        return [make([(a, d0, la), (b, d1, lb), (c, d2, lc)], dtype, seed + i, kw, f"{a}{la},{b}{lb},{c}{lc}")
                for i, ((a, la), (b, lb), (c, lc)) in enumerate(TERNARY_SHAPES)]
    return samples


def shapes_of(*cases, domain="real"):
    """Explicit samples: each case ``(specs, kwargs)``. They take no size; ``samples.cases`` holds
    them for a reader that scales them (bench/ops_table.py)."""
    def samples(dtype, seed):
        return [make(specs, dtype, seed + i, kw, f"{[s[0] if isinstance(s, tuple) else s for s in specs]} {kw}")
                for i, (specs, kw) in enumerate(cases)]
    samples.cases = cases
    return samples


def _first(torch, r):
    return r[0]


def _flat_cat(torch, r):
    return torch.cat([t.reshape(-1) for t in r])


def _values_of(torch, r):
    return r[0] if isinstance(r, tuple) else r


def fn(name):
    """``torch.<name>(*args)``."""
    call = lambda torch, *a, **k: getattr(torch, name)(*a, **k)   # noqa: E731
    call.top_level = name
    return call


def meth(name):
    """``args[0].<name>(*args[1:])``."""
    return lambda torch, x, *a, **k: getattr(x, name)(*a, **k)


# ----------------------------------------------------------------------------- the database

FUNCTIONS: dict = {  # the engine Functions each op's graph holds (checked by test_opdb)
    "abs": ('Abs',), "acos": ('Acos',), "acosh": ('Acosh',), "asin": ('Asin',), "asinh": ('Asinh',),
    "atan": ('Atan',), "atanh": ('Atanh',), "ceil": ('Ceil',), "cos": ('Cos',), "cosh": ('Cosh',), "erf": ('Erf',),
    "erfc": ('Erfc',), "erfinv": ('Erfinv',), "exp": ('Exp',), "exp2": ('Exp2',), "expm1": ('Expm1',),
    "floor": ('Floor',), "frac": ('Frac',), "log": ('Log',), "log10": ('Log10',), "log1p": ('Log1p',),
    "log2": ('Log2',), "neg": ('Neg',), "reciprocal": ('Reciprocal',), "relu": ('ReluFn',), "round": ('Round',),
    "rsqrt": ('Rsqrt',), "sigmoid": ('SigmoidFn',), "sign": ('Sign',), "sgn": ('Sign',), "sin": ('Sin',),
    "sinc": ('Sinc',), "sinh": ('Sinh',), "sqrt": ('Sqrt',), "square": ('Square',), "tan": ('Tan',),
    "tanh": ('TanhFn',), "trunc": ('Trunc',), "logit": ('Logit',), "nan_to_num": ('NanToNum',), "selu": ('EluFn',),
    "celu": ('EluFn',), "gelu": ('GeluFn',), "softmax": ('SoftmaxFn',), "log_softmax": ('LogSoftmaxFn',),
    "logsumexp": ('LogSumExp',), "clone": ('Clone',), "add": ('Add',), "sub": ('Sub',), "mul": ('Mul',),
    "div": ('Div',), "atan2": ('Atan2',), "maximum": ('Maximum',), "minimum": ('Minimum',), "hypot": ('Hypot',),
    "copysign": ('Copysign',), "fmod": ('Fmod',), "remainder": ('Remainder',), "xlogy": ('Xlogy',),
    "float_power": ('Pow',), "pow": ('Pow',), "lerp": ('Lerp',), "where": ('Where',), "clamp": ('Clamp',),
    "clamp_min": ('Clamp',), "clamp_max": ('Clamp',), "dist": ('Sub', 'VectorNorm'),
    "prelu": ('PReluFn', 'Reshape'), "sum": ('Sum',), "mean": ('Mean',), "nansum": ('NanSum',),
    "nanmean": ('Div', 'NanSum'), "prod": ('Prod',), "amax": ('Amax',), "amin": ('Amax',), "max": ('MaxAll',),
    "min": ('MaxAll',), "std": ('Std',), "var": ('Var',), "std_mean": ('Mean', 'Std'), "var_mean": ('Mean', 'Var'),
    "norm": ('VectorNorm',), "median": ('MedianAll',), "aminmax": ('Amax',), "cumsum": ('CumSum',),
    "cumprod": ('CumProd',), "logcumsumexp": ('LogCumSumExp',), "cummax": ('CumExtreme',),
    "cummin": ('CumExtreme',), "trace": ('Diagonal', 'Sum'), "kthvalue": ('SelectAlongDim',),
    "topk": ('SelectAlongDim',), "sort": ('SelectAlongDim',), "msort": ('SelectAlongDim',),
    "reshape": ('Reshape',), "view": ('Reshape',), "transpose": ('Permute',), "permute": ('Permute',),
    "t": ('Permute',), "squeeze": ('Reshape',), "unsqueeze": ('Reshape',), "flatten": ('Reshape',),
    "unflatten": ('Reshape',), "narrow": ('GetItem',), "diagonal": ('Diagonal',), "movedim": ('Permute',),
    "moveaxis": ('Permute',), "swapaxes": ('Permute',), "swapdims": ('Permute',), "expand": ('Expand',),
    "broadcast_to": ('Expand',), "ravel": ('Reshape',), "unfold": ('UnfoldFn',), "flip": ('Flip',),
    "fliplr": ('Flip',), "flipud": ('Flip',), "roll": ('Roll',), "rot90": ('Flip', 'Permute'),
    "repeat": ('Repeat',), "tile": ('Repeat',), "repeat_interleave": ('RepeatInterleave',), "tril": ('Triangle',),
    "triu": ('Triangle',), "diag": ('Clone', 'Diagonal'), "diag_embed": ('DiagEmbed',), "atleast_1d": ('Reshape',),
    "atleast_2d": ('Reshape',), "atleast_3d": ('Reshape',), "split": ('GetItem',), "chunk": ('GetItem',),
    "tensor_split": ('GetItem',), "unbind": ('GetItem',), "hsplit": ('GetItem',), "vsplit": ('GetItem',),
    "dsplit": ('GetItem',), "cat": ('Cat',), "stack": ('Stack',), "broadcast_tensors": ('Expand',),
    "meshgrid": ('Expand', 'Reshape'), "gather": ('Gather',), "take": ('Take',), "take_along_dim": ('Gather',),
    "index_select": ('IndexSelect',), "masked_fill": ('MaskedFill',), "masked_select": ('MaskedSelect',),
    "index_add": ('IndexAdd',), "index_copy": ('IndexCopy',), "index_fill": ('IndexFill',),
    "scatter": ('Scatter',), "scatter_add": ('ScatterAdd',), "matmul": ('MatMul',), "mm": ('MatMul',),
    "bmm": ('MatMul',), "mv": ('MatMul',), "dot": ('MatMul',), "inner": ('MatMul', 'Permute'),
    "outer": ('Mul', 'Reshape'), "addmm": ('Add', 'MatMul'), "addmv": ('Add', 'MatMul'),
    "baddbmm": ('Add', 'MatMul'), "einsum": ('MatMul', 'Permute', 'Reshape'),
    "cosine_similarity": ('Add', 'Div', 'Mul', 'Sum', 'VectorNorm'),
    "pairwise_distance": ('Add', 'Sub', 'VectorNorm'), "layer_norm": ('LayerNormFn',), "rms_norm": ('RMSNormFn',),
    "expand_as": ('Expand',), "view_as": ('Reshape',), "reshape_as": ('Reshape',),
    "scatter_reduce": ('ScatterReduce',), "index_put": ('IndexPut',), "masked_scatter": ('MaskedScatter',),
    "conv1d": ('Conv', 'Reshape'), "conv2d": ('Conv',), "conv_transpose1d": ('ConvTranspose', 'Reshape'),
    "conv_transpose2d": ('ConvTranspose',), "max_pool1d": ('MaxPool', 'Reshape'), "max_pool2d": ('MaxPool',),
    "avg_pool1d": ('AvgPool', 'Reshape'), "adaptive_avg_pool1d": ('AdaptiveAvgPool', 'Reshape'),
    "pixel_shuffle": ('Permute', 'Reshape'), "pixel_unshuffle": ('Permute', 'Reshape'),
    "embedding": ('EmbeddingFn',), "deg2rad": ('Mul',), "rad2deg": ('Mul',), "addcmul": ('Add', 'Mul'),
    "addcdiv": ('Add', 'Div', 'Mul'), "ldexp": ('Mul', 'Pow'), "select": ('Select',), "addr": ('Add', 'Mul', 'Reshape'),
    "addbmm": ('Add', 'MatMul', 'Sum'), "det": ('LinalgDet',), "logdet": ('LinalgSlogdet', 'Where'),
    "slogdet": ('LinalgSlogdet',), "inverse": ('LinalgInvEx',), "fill_diagonal_": ('Clone', 'Where'),
}


OPS: list[Op] = []


_family = ["pointwise"]


# compile refuses these (one CompileWarning, the call runs eagerly: not wrong, not replayed): their
# code makes a tensor outside a Function (a 0-d fill value, an index array computed in NumPy)
COMPILE_REFUSED = {"nonzero", "argwhere", "unique", "bincount", "bucketize", "searchsorted", "mode", "histogram",
                   "histc", "isfinite","isinf","isnan","isneginf","isposinf","signbit","logical_not","bitwise_not","isclose","nanmean","argmax","argmin","all","any","count_nonzero","cummax","cummin","kthvalue","topk","sort","msort","argsort","repeat_interleave","take_along_dim","index_select","index_add","index_copy","index_fill","cosine_similarity",
                   "gcd", "lcm", "fill_diagonal_", "logdet"}
# explain has no page for these: positive and conj_physical (of a real tensor) return their input
# itself (torch's too), no op is applied
EXPLAIN_UNKNOWN = {"positive", "conj_physical"}


def add(*ops):
    for op in ops:
        if op.name in COMPILE_REFUSED:
            op.compile = False
        if op.name in EXPLAIN_UNKNOWN:
            op.xfail.setdefault("explain", "explain has no page: the op returns its input, applying nothing")
        op.family = op.family or _family[0]
        op.functions = op.functions or FUNCTIONS.get(op.name, ())
    OPS.extend(ops)


def family(name):
    _family[0] = name


family("pointwise")
# pointwise unary: name, domain, in-place, zero gradient, aliases, exact dtypes (ints taken)
_UNARY = [
    ("abs", "away", True, False, ("absolute",), ("int64",)),
    ("acos", "unit", True, False, ("arccos",), ()),
    ("acosh", "gt1", True, False, ("arccosh",), ()),
    ("asin", "unit", True, False, ("arcsin",), ()),
    ("asinh", "real", True, False, ("arcsinh",), ()),
    ("atan", "real", True, False, ("arctan",), ()),
    ("atanh", "unit", True, False, ("arctanh",), ()),
    ("ceil", "offgrid", True, True, (), ()),
    ("cos", "real", True, False, (), ()),
    ("cosh", "real", True, False, (), ()),
    ("erf", "real", True, False, (), ()),
    ("erfc", "real", True, False, (), ()),
    ("erfinv", "unit", True, False, (), ()),
    ("exp", "real", True, False, (), ()),
    ("exp2", "real", True, False, (), ()),
    ("expm1", "real", True, False, (), ()),
    ("floor", "offgrid", True, True, (), ()),
    ("frac", "offgrid", True, False, (), ()),
    ("log", "positive", True, False, (), ()),
    ("log10", "positive", True, False, (), ()),
    ("log1p", "positive", True, False, (), ()),
    ("log2", "positive", True, False, (), ()),
    ("neg", "real", True, False, ("negative",), ("int64",)),
    ("reciprocal", "away", True, False, (), ()),
    ("relu", "away", True, False, (), ("int64",)),
    ("round", "offgrid", True, True, (), ()),
    ("rsqrt", "positive", True, False, (), ()),
    ("sigmoid", "real", True, False, (), ()),
    ("sign", "away", True, True, (), ("int64",)),
    ("sgn", "away", True, True, (), ("int64",)),
    ("sin", "real", True, False, (), ()),
    ("sinc", "away", True, False, (), ()),
    ("sinh", "real", True, False, (), ()),
    ("sqrt", "positive", True, False, (), ()),
    ("square", "real", True, False, (), ("int64",)),
    ("tan", "unit", True, False, (), ()),
    ("tanh", "real", True, False, (), ()),
    ("trunc", "offgrid", True, True, ("fix",), ()),
    ("logit", "unit01", True, False, (), ()),
    ("positive", "real", False, False, (), ("int64",)),
    ("deg2rad", "real", True, False, (), ()),
    ("rad2deg", "real", True, False, (), ()),
    ("conj_physical", "real", True, False, (), ("int64",)),
]
for _n, _d, _ip, _zg, _al, _ex in _UNARY:
    add(Op(_n, fn(_n), unary(_d), aliases=_al, inplace=f"{_n}_" if _ip else None, zero_grad=_zg,
           exact_dtypes=_ex, gradgrad=not _zg, zero_region=_n == "relu",
           inplace_torch_grad=_n not in ("acosh", "asinh", "atanh")))

add(
    Op("nan_to_num", fn("nan_to_num"), unary("real", nan=0.5, posinf=3.0), inplace="nan_to_num_"),
    Op("selu", lambda torch, x: torch.nn.functional.selu(x), unary("away")),
    # alpha 2 (exact 1/alpha): with alpha 1.3 torch's float64 derivative carries a float32-rounded 1/alpha
    # (1.5e-8 off the exact e^(x/alpha)); ours is exact
    Op("celu", lambda torch, x, **k: torch.nn.functional.celu(x, **k), unary("away", alpha=2.0)),
    Op("gelu", lambda torch, x, **k: torch.nn.functional.gelu(x, **k), unary("real")),
    # functional/shrink.py, the example of adding an op (docs/engine.md): a dead zone |x| <= lambd
    Op("hardshrink", fn("hardshrink"), unary("real", lambd=0.5), zero_region=True, functions=("HardshrinkFn",)),
    Op("softshrink", lambda torch, x, **k: torch.nn.functional.softshrink(x, **k), unary("real", lambd=0.5),
       zero_region=True, functions=("SoftshrinkFn",)),
    Op("softmax", fn("softmax"), reduction("real", dims=(-1, 0), keepdim=False, empty=False), zero_region=True),
    Op("log_softmax", fn("log_softmax"), reduction("real", dims=(-1, 0), keepdim=False, empty=False),
       zero_region=True),
    Op("logsumexp", fn("logsumexp"), reduction("real", dims=(-1, (0, 1), 0))),
    Op("isfinite", fn("isfinite"), unary("real"), grad=False, exact_dtypes=("int64",)),
    Op("isinf", fn("isinf"), unary("real"), grad=False),
    Op("isnan", fn("isnan"), unary("real"), grad=False),
    Op("isneginf", fn("isneginf"), unary("real"), grad=False),
    Op("isposinf", fn("isposinf"), unary("real"), grad=False),
    Op("signbit", fn("signbit"), unary("away"), grad=False),
    Op("logical_not", fn("logical_not"), unary("away"), grad=False, inplace="logical_not_",
       exact_dtypes=("int64", "bool")),
    Op("bitwise_not", fn("bitwise_not"), unary("real"), grad=False, dtypes=(), exact_dtypes=("int64", "bool"),
       inplace="bitwise_not_"),
    Op("clone", meth("clone"), unary("real")),
    Op("contiguous", meth("contiguous"), unary("real")),
)

# pointwise binary: name, domains, in-place, scalar operand, zero grad, aliases, exact dtypes
_BINARY = [
    ("add", "real", "real", True, 2.5, ("int64",), ()),
    ("sub", "real", "real", True, 2.5, ("int64",), ("subtract",)),
    ("mul", "real", "real", True, 2.5, ("int64", "bool"), ("multiply",)),
    ("div", "real", "away", True, 2.5, ("int64",), ("divide", "true_divide")),
    ("atan2", "real", "away", True, None, (), ("arctan2",)),
    ("maximum", "distinct", "real", False, None, ("int64",), ()),
    ("minimum", "distinct", "real", False, None, ("int64",), ()),
    ("hypot", "away", "away", True, None, (), ()),
    ("copysign", "away", "away", True, 2.5, (), ()),   # second derivative: below
    ("fmod", "real", "away", True, 1.5, ("int64",), ()),
    ("remainder", "real", "away", True, 1.5, ("int64",), ()),
    ("xlogy", "real", "positive", True, 2.5, (), ()),
    ("float_power", "positive", "real", True, 2.0, (), ()),
]
for _n, _d0, _d1, _ip, _sc, _ex, _al in _BINARY:
    add(Op(_n, fn(_n), binary(_d0, _d1, scalar=_sc), aliases=_al, inplace=f"{_n}_" if _ip else None,
           exact_dtypes=_ex, zero_region=_n in ("maximum", "minimum", "fmod", "remainder"),
           grad_args=(0,) if _n == "copysign" else None,
           # copysign's d2/dx2 is 0 (|x|·sign(y) is linear on each side); torch's double backward of
           # grad·result/x leaves rounding noise there, which a relative error calls 100 %
           gradgrad=_n != "copysign"))

add(
    Op("pow", fn("pow"), binary("positive", "real", scalar=2.5), inplace="pow_"),
    Op("floor_divide", fn("floor_divide"), binary("real", "away", scalar=1.5), grad=False,
       inplace="floor_divide_", exact_dtypes=("int64",)),
    Op("lerp", fn("lerp"), same_shape(3), inplace="lerp_"),
    Op("addcmul", fn("addcmul"), ternary(value=0.5), inplace="addcmul_"),
    Op("addcdiv", fn("addcdiv"), ternary("real", "real", "away", value=-1.5), inplace="addcdiv_"),
    Op("ldexp", fn("ldexp"), binary("real", "real"), inplace="ldexp_"),
    Op("where", lambda torch, c, x, y: torch.where(c > 0, x, y), same_shape(3), grad_args=(1, 2), zero_region=True),
    Op("clamp", fn("clamp"), same_shape(1, min=-0.5, max=0.7), aliases=("clip",), inplace="clamp_",
       exact_dtypes=("int64",)),
    Op("clamp_min", fn("clamp_min"), same_shape(1, min=-0.5), inplace="clamp_min_"),
    Op("clamp_max", fn("clamp_max"), same_shape(1, max=0.4), inplace="clamp_max_"),
    Op("dist", fn("dist"), binary("real", "real"), gradgrad=True),
    Op("prelu", lambda torch, x, w: torch.prelu(x, w),
       shapes_of(([((3, 4), "away"), ((4,), "positive")], {}), ([((2, 4, 3), "away"), ((1,), "positive")], {}))),
)

for _n, _al, _ip in [("eq", (), True), ("ne", ("not_equal",), True), ("lt", ("less",), True),
                     ("le", ("less_equal",), True), ("gt", ("greater",), True),
                     ("ge", ("greater_equal",), True)]:
    add(Op(_n, fn(_n), binary("real", "real", scalar=0.0), aliases=_al, grad=False, inplace=f"{_n}_" if _ip else None,
           exact_dtypes=("int64", "bool")))
for _n in ("logical_and", "logical_or", "logical_xor"):
    add(Op(_n, fn(_n), binary("away", "away"), grad=False, inplace=f"{_n}_", exact_dtypes=("int64", "bool")))
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    add(Op(_n, fn(_n), binary("real", "real"), grad=False, dtypes=(), exact_dtypes=("int64", "bool"),
           inplace=f"{_n}_"))
for _n in ("gcd", "lcm"):      # integers only (torch: "gcd_cpu" not implemented for 'Float')
    add(Op(_n, fn(_n), binary("real", "real"), grad=False, dtypes=(), exact_dtypes=("int64",), inplace=f"{_n}_"))
add(Op("isclose", fn("isclose"), binary("real", "real"), grad=False))

family("reduction")
add(
    Op("sum", fn("sum"), reduction(), exact_dtypes=("int64", "bool")),
    Op("mean", fn("mean"), reduction()),
    Op("nansum", fn("nansum"), reduction()),
    Op("nanmean", fn("nanmean"), reduction(empty=False)),
    Op("prod", fn("prod"), reduction("away", dims=(None, -1, 0)), exact_dtypes=("int64",)),
    Op("amax", fn("amax"), reduction("distinct", empty=False), exact_dtypes=("int64",)),
    Op("amin", fn("amin"), reduction("distinct", empty=False), exact_dtypes=("int64",)),
    Op("max", fn("max"), reduction("distinct", dims=(None, -1, 0), empty=False), pick=_values_of),
    Op("min", fn("min"), reduction("distinct", dims=(None, -1, 0), empty=False), pick=_values_of),
    Op("std", fn("std"), reduction(empty=False)),
    Op("var", fn("var"), reduction(empty=False)),
    Op("std_mean", fn("std_mean"), reduction(empty=False), pick=_flat_cat),
    Op("var_mean", fn("var_mean"), reduction(empty=False), pick=_flat_cat),
    Op("norm", fn("norm"), reduction(dims=(None, -1, (0, 1), 0), empty=False)),
    Op("median", fn("median"), reduction("distinct", dims=(None, -1, 0), empty=False), pick=_values_of),
    Op("aminmax", fn("aminmax"), reduction("distinct", dims=(None, -1, 0), empty=False, keepdim=False),
       pick=_flat_cat),
    Op("argmax", fn("argmax"), reduction("distinct", dims=(None, -1, 0), empty=False), grad=False,
       exact_dtypes=("int64",)),
    Op("argmin", fn("argmin"), reduction("distinct", dims=(None, -1, 0), empty=False), grad=False,
       exact_dtypes=("int64",)),
    Op("all", fn("all"), reduction("away", dims=(None, -1, 0)), grad=False, exact_dtypes=("int64", "bool")),
    Op("any", fn("any"), reduction("away", dims=(None, -1, 0)), grad=False, exact_dtypes=("int64", "bool")),
    Op("count_nonzero", fn("count_nonzero"), reduction("away", dims=(None, -1, (0, 1)), keepdim=False),
       grad=False, exact_dtypes=("int64",)),
    Op("cumsum", fn("cumsum"), reduction(dims=(-1, 0), keepdim=False), exact_dtypes=("int64",), inplace="cumsum_"),
    Op("cumprod", fn("cumprod"), reduction("away", dims=(-1, 0), keepdim=False), inplace="cumprod_"),
    Op("logcumsumexp", fn("logcumsumexp"), reduction(dims=(-1, 0), keepdim=False)),
    Op("cummax", fn("cummax"), reduction("distinct", dims=(-1, 0), keepdim=False), pick=_first),
    Op("cummin", fn("cummin"), reduction("distinct", dims=(-1, 0), keepdim=False), pick=_first),
    Op("trace", fn("trace"), shapes_of(([((3, 4), "real")], {}), ([((3, 3), "real", "T")], {}),
                                       ([((4, 3), "real", "vv")], {}))),
    Op("kthvalue", fn("kthvalue"), shapes_of(([((3, 4), "distinct"), 2], {}), ([((3, 5), "distinct"), 1], {"dim": 0}),
                                             ([((2, 3, 4), "distinct", "T"), 3], {"dim": -1, "keepdim": True})),
       pick=_first),
    Op("topk", fn("topk"), shapes_of(([((3, 4), "distinct"), 2], {}), ([((5, 3), "distinct"), 2], {"dim": 0}),
                                     ([((2, 3, 4), "distinct", "vv"), 1], {"largest": False})), pick=_first),
    Op("sort", fn("sort"), reduction("distinct", dims=(-1, 0), keepdim=False), pick=_first),
    Op("msort", fn("msort"), shapes_of(([((4, 3), "distinct")], {}), ([((5,), "distinct", "vv")], {}))),
    Op("argsort", fn("argsort"), reduction("distinct", dims=(-1, 0), keepdim=False), grad=False,
       exact_dtypes=("int64",)),
)

family("movement")
# movement / shape (views unless said otherwise)
_M = [  # name, call, samples, view, inplace, extra flags
    ("reshape", lambda torch, x, *s: x.reshape(*s), shapes_of(([((3, 4), "real"), 2, 6], {}),
                                                              ([((2, 3, 4), "real", "T"), -1], {}),
                                                              ([((0, 3), "real"), 3, 0], {}),
                                                              ([((), "real"), 1, 1], {})), True),
    ("view", lambda torch, x, *s: x.view(*s), shapes_of(([((3, 4), "real"), 2, 6], {}),
                                                        ([((2, 3, 4), "real"), 6, -1], {}),
                                                        ([((), "real"), 1], {})), True),
    ("transpose", fn("transpose"), shapes_of(([((3, 4), "real"), 0, 1], {}), ([((2, 3, 4), "real", "T"), -1, 0], {}),
                                             ([((3, 4), "real", "vv"), 0, -1], {})), True),
    ("permute", lambda torch, x, *d: x.permute(*d), shapes_of(([((2, 3, 4), "real"), 2, 0, 1], {}),
                                                              ([((3, 4), "real", "vv"), 1, 0], {})), True),
    ("t", fn("t"), shapes_of(([((3, 4), "real")], {}), ([((5,), "real")], {}), ([((3, 4), "real", "vv")], {})), True),
    ("squeeze", fn("squeeze"), shapes_of(([((3, 1, 4), "real")], {}), ([((1, 3), "real"), 0], {}),
                                         ([((3, 1, 1), "real"), (1, 2)], {}), ([((), "real")], {})), True),
    ("unsqueeze", fn("unsqueeze"), shapes_of(([((3, 4), "real"), 1], {}), ([((3, 4), "real", "vv"), -1], {}),
                                             ([((), "real"), 0], {})), True),
    ("flatten", fn("flatten"), shapes_of(([((2, 3, 4), "real")], {}), ([((2, 3, 4), "real"), 1], {}),
                                         ([((), "real")], {})), True),
    ("unflatten", fn("unflatten"), shapes_of(([((3, 4), "real"), 1, (2, 2)], {}),
                                             ([((6, 2), "real"), 0, (3, -1)], {})), True),
    ("narrow", fn("narrow"), shapes_of(([((5, 4), "real"), 0, 1, 3], {}), ([((3, 4), "real", "vv"), -1, 2, 2], {})),
     True),
    ("diagonal", fn("diagonal"), shapes_of(([((3, 4), "real")], {}), ([((3, 4), "real"), 1], {}),
                                           ([((2, 3, 3), "real"), 0, 1, 2], {})), True),
    ("movedim", fn("movedim"), shapes_of(([((2, 3, 4), "real"), 0, -1], {}),
                                         ([((2, 3, 4), "real"), (0, 1), (2, 0)], {})), True),
    ("moveaxis", fn("moveaxis"), shapes_of(([((2, 3, 4), "real"), 0, -1], {})), True),
    ("swapaxes", fn("swapaxes"), shapes_of(([((2, 3, 4), "real"), 0, 2], {})), True),
    ("swapdims", fn("swapdims"), shapes_of(([((2, 3, 4), "real"), 1, 2], {})), True),
    ("expand", lambda torch, x, *s: x.expand(*s), shapes_of(([((3, 1), "real"), 3, 4], {}),
                                                            ([((4,), "real"), 2, -1], {}),
                                                            ([((), "real"), 2, 3], {})), True),
    ("broadcast_to", lambda torch, x, s: x.broadcast_to(s), shapes_of(([((3, 1), "real"), (2, 3, 4)], {})), True),
    ("ravel", fn("ravel"), shapes_of(([((3, 4), "real")], {}), ([((3, 4), "real", "T")], {})), True),
    # non-overlapping windows first (the view checks use the first two samples): an in-place edit of
    # overlapping windows writes one element twice; torch allows it, ours refuses (clear error)
    ("unfold", lambda torch, x, *a: x.unfold(*a), shapes_of(([((3, 6), "real"), 1, 2, 2], {}),
                                                            ([((7,), "real"), 0, 3, 3], {}),
                                                            ([((7,), "real"), 0, 3, 2], {}),
                                                            ([((3, 5), "real"), 1, 2, 1], {})), True),
    ("flip", fn("flip"), shapes_of(([((3, 4), "real"), (0,)], {}), ([((2, 3, 4), "real", "T"), (0, 2)], {})), False),
    ("fliplr", fn("fliplr"), shapes_of(([((3, 4), "real")], {})), False),
    ("flipud", fn("flipud"), shapes_of(([((3, 4), "real")], {}), ([((3, 4), "real", "vv")], {})), False),
    ("roll", fn("roll"), shapes_of(([((3, 4), "real"), 1, 1], {}), ([((3, 4), "real"), (1, -2), (0, 1)], {}),
                                   ([((5,), "real"), 7], {})), False),
    ("rot90", fn("rot90"), shapes_of(([((3, 4), "real")], {}), ([((3, 4), "real"), 3, (1, 0)], {})), False),
    ("repeat", lambda torch, x, *r: x.repeat(*r), shapes_of(([((2, 3), "real"), 2, 1], {}),
                                                            ([((3,), "real"), 2, 2], {})), False),
    ("tile", fn("tile"), shapes_of(([((2, 3), "real"), (2,)], {}), ([((3,), "real"), (2, 2)], {})), False),
    ("repeat_interleave", fn("repeat_interleave"), shapes_of(([((2, 3), "real"), 2], {"dim": 1}),
                                                             ([((4,), "real"), 3], {})), True),
    ("tril", fn("tril"), shapes_of(([((3, 4), "real")], {}), ([((3, 4), "real"), -1], {})), False),
    ("triu", fn("triu"), shapes_of(([((3, 4), "real")], {}), ([((2, 3, 3), "real", "vv"), 1], {})), False),
    ("diag", fn("diag"), shapes_of(([((3, 4), "real")], {}), ([((4,), "real")], {}), ([((3,), "real"), 1], {})),
     False),
    ("diag_embed", fn("diag_embed"), shapes_of(([((2, 3), "real")], {}), ([((3,), "real"), 1], {})), False),
    ("atleast_1d", fn("atleast_1d"), shapes_of(([((), "real")], {}), ([((3,), "real")], {})), True),
    ("atleast_2d", fn("atleast_2d"), shapes_of(([((), "real")], {}), ([((3,), "real")], {})), True),
    ("atleast_3d", fn("atleast_3d"), shapes_of(([((), "real")], {}), ([((3, 4), "real")], {})), True),
    ("select", fn("select"), shapes_of(([((3, 4), "real"), 0, 1], {}), ([((2, 3, 4), "real", "T"), -1, 2], {}),
                                       ([((3, 4), "real", "vv"), 1, -1], {}), ([((5,), "real"), 0, 3], {})), True),
]
# the in-place view ops: the tensor itself takes the result's shape over the same memory
_VIEW_INPLACE = {"tril": "tril_", "triu": "triu_", "transpose": "transpose_", "t": "t_", "squeeze": "squeeze_",
                 "unsqueeze": "unsqueeze_", "swapaxes": "swapaxes_", "swapdims": "swapdims_"}
for _n, _c, _s, _v in _M:
    add(Op(_n, _c, _s, view=_v, exact_dtypes=("int64",),
           inplace=_VIEW_INPLACE.get(_n)))

family("multi")
# ops returning several tensors (flattened and concatenated to compare)
add(
    Op("split", fn("split"), shapes_of(([((5, 3), "real"), 2], {}), ([((3, 4), "real"), [1, 3]], {"dim": 1})),
       pick=_flat_cat, view=True),
    Op("chunk", fn("chunk"), shapes_of(([((5, 3), "real"), 2], {}), ([((3, 4), "real", "vv"), 3], {"dim": -1})),
       pick=_flat_cat, view=True),
    Op("tensor_split", fn("tensor_split"), shapes_of(([((5, 3), "real"), 3], {}),
                                                     ([((3, 4), "real"), [1, 3]], {"dim": 1})),
       pick=_flat_cat, view=True),
    Op("unbind", fn("unbind"), shapes_of(([((3, 4), "real")], {}), ([((2, 3, 4), "real"), 2], {})),
       pick=_flat_cat, view=True),
    Op("hsplit", fn("hsplit"), shapes_of(([((3, 4), "real"), 2], {})), pick=_flat_cat, view=True),
    Op("vsplit", fn("vsplit"), shapes_of(([((4, 3), "real"), 2], {})), pick=_flat_cat, view=True),
    Op("dsplit", fn("dsplit"), shapes_of(([((2, 3, 4), "real"), 2], {})), pick=_flat_cat, view=True),
    Op("cat", lambda torch, *xs, **k: torch.cat(xs, **k),
       shapes_of(([((2, 3), "real"), ((4, 3), "real")], {}), ([((2, 3), "real", "T"), ((2, 1), "real")], {"dim": 1}),
                 ([((0, 3), "real"), ((2, 3), "real")], {}))),
    Op("stack", lambda torch, *xs, **k: torch.stack(xs, **k),
       shapes_of(([((2, 3), "real"), ((2, 3), "real")], {}), ([((3,), "real"), ((3,), "real", "vv")], {"dim": 1}),
                 ([((), "real"), ((), "real")], {}))),
    Op("broadcast_tensors", lambda torch, *xs: torch.broadcast_tensors(*xs),
       shapes_of(([((3, 1), "real"), ((1, 4), "real")], {})), pick=_flat_cat, view=True),
    Op("meshgrid", lambda torch, *xs: torch.meshgrid(*xs, indexing="ij"),
       shapes_of(([((3,), "real"), ((4,), "real")], {})), pick=_flat_cat, view=True),
)

family("indexing")
# indexing with integer operands (the index arrays are samples' int64 args: not differentiated)
_IDX = np.array([2, 0, 2])
add(
    Op("gather", fn("gather"), shapes_of(([((3, 4), "real"), 1, np.array([[0, 3], [1, 1], [2, 0]])], {}))),
    Op("take", fn("take"), shapes_of(([((3, 4), "real"), np.array([[0, 11], [5, 5]])], {}))),
    Op("take_along_dim", fn("take_along_dim"),
       shapes_of(([((3, 4), "real"), np.array([[0, 3], [1, 1], [2, 0]])], {"dim": 1}))),
    Op("index_select", fn("index_select"), shapes_of(([((3, 4), "real"), 0, _IDX], {}),
                                                     ([((3, 4), "real", "vv"), 1, _IDX], {}))),
    Op("masked_fill", lambda torch, x, v: x.masked_fill(x > 0.3, v), shapes_of(([((3, 4), "real"), 0.5], {})),
       inplace=lambda torch, x, v: x.masked_fill_(x > 0.3, v), aliases=("masked_fill_",)),
    Op("masked_select", lambda torch, x: torch.masked_select(x, x > 0), shapes_of(([((3, 4), "real")], {})),
       compile="rerecords"),    # its size depends on the values: a guard, recorded anew when the count changes
    Op("index_add", fn("index_add"), shapes_of(([((3, 4), "real"), 0, _IDX, ((3, 4), "real")], {})),
       inplace="index_add_"),
    Op("index_copy", fn("index_copy"), shapes_of(([((3, 4), "real"), 0, np.array([2, 0]), ((2, 4), "real")], {})),
       inplace="index_copy_"),
    Op("index_fill", fn("index_fill"), shapes_of(([((3, 4), "real"), 1, np.array([0, 2]), 1.5], {})),
       inplace="index_fill_"),
    Op("scatter", fn("scatter"), shapes_of(([((3, 4), "real"), 1, np.array([[0, 3], [1, 2], [2, 0]]),
                                             ((3, 2), "real")], {})), inplace="scatter_"),
    Op("scatter_add", fn("scatter_add"), shapes_of(([((3, 4), "real"), 1, np.array([[0, 0], [1, 2], [2, 0]]),
                                                     ((3, 2), "real")], {})), inplace="scatter_add_"),
)

family("matmul")
add(
    Op("matmul", fn("matmul"), shapes_of(([((3, 4), "real"), ((4, 5), "real")], {}),
                                         ([((2, 3, 4), "real", "T"), ((4,), "real")], {}),
                                         ([((4,), "real"), ((2, 4, 3), "real", "vv")], {}),
                                         ([((4,), "real"), ((4,), "real")], {}),
                                         ([((0, 4), "real"), ((4, 2), "real")], {}))),
    Op("mm", fn("mm"), shapes_of(([((3, 4), "real"), ((4, 5), "real", "T")], {}),
                                 ([((3, 4), "real", "vv"), ((4, 1), "real")], {}))),
    Op("bmm", fn("bmm"), shapes_of(([((2, 3, 4), "real"), ((2, 4, 5), "real", "T")], {}))),
    Op("mv", fn("mv"), shapes_of(([((3, 4), "real", "T"), ((4,), "real")], {}))),
    Op("dot", fn("dot"), shapes_of(([((4,), "real"), ((4,), "real")], {}), ([((4,), "real"), ((4,), "real", "vv")], {}))),
    Op("inner", fn("inner"), shapes_of(([((3, 4), "real"), ((2, 4), "real")], {}),
                                       ([((4,), "real"), ((4,), "real")], {}))),
    Op("outer", fn("outer"), shapes_of(([((3,), "real"), ((4,), "real")], {})), aliases=("ger",)),
    Op("addmm", fn("addmm"), shapes_of(([((3, 5), "real"), ((3, 4), "real"), ((4, 5), "real")], {}),
                                       ([((5,), "real"), ((3, 4), "real", "T"), ((4, 5), "real")],
                                        {"beta": 0.5, "alpha": 2.0})), inplace="addmm_"),
    Op("addmv", fn("addmv"), shapes_of(([((3,), "real"), ((3, 4), "real"), ((4,), "real")], {})), inplace="addmv_"),
    Op("baddbmm", fn("baddbmm"), shapes_of(([((2, 3, 5), "real"), ((2, 3, 4), "real"), ((2, 4, 5), "real")], {})),
       inplace="baddbmm_"),
    Op("addr", fn("addr"), shapes_of(([((3, 4), "real"), ((3,), "real"), ((4,), "real")], {}),
                                     ([((3, 4), "real", "vv"), ((3,), "real"), ((4,), "real", "vv")],
                                      {"beta": 0.5, "alpha": 2.0}),
                                     ([((4,), "real"), ((3,), "real"), ((4,), "real")], {}),
                                     ([((), "real"), ((0,), "real"), ((2,), "real")], {})), inplace="addr_"),
    Op("addbmm", fn("addbmm"), shapes_of(([((3, 5), "real"), ((2, 3, 4), "real"), ((2, 4, 5), "real")], {}),
                                         ([((3, 5), "real", "T"), ((2, 3, 4), "real", "T"), ((2, 4, 5), "real")],
                                          {"beta": -0.5, "alpha": 1.5}),
                                         ([((5,), "real"), ((1, 3, 4), "real"), ((1, 4, 5), "real", "vv")], {}),
                                         ([((3, 5), "real"), ((0, 3, 4), "real"), ((0, 4, 5), "real")], {})),
       inplace="addbmm_"),
    Op("einsum", lambda torch, *xs: torch.einsum("ij,jk->ik", *xs),
       shapes_of(([((3, 4), "real"), ((4, 2), "real", "T")], {}))),
    Op("cosine_similarity", fn("cosine_similarity"), shapes_of(([((3, 4), "real"), ((3, 4), "real")], {}),
                                                               ([((3, 4), "real"), ((4,), "real")], {"dim": -1}))),
    Op("pairwise_distance", fn("pairwise_distance"), shapes_of(([((3, 4), "real"), ((3, 4), "real")], {}))),
)

family("linalg")
# square matrices, diagonally dominant ("matrix": det > 0, so logdet is finite): batched, transposed, a view of a view
_SQUARE = shapes_of(([((3, 3), "matrix")], {}), ([((2, 3, 3), "matrix", "T")], {}), ([((4, 4), "matrix", "vv")], {}),
                    ([((1, 1), "matrix")], {}), ([((0, 3, 3), "matrix")], {}))
add(
    Op("det", fn("det"), _SQUARE),
    Op("logdet", fn("logdet"), _SQUARE),
    Op("slogdet", fn("slogdet"), _SQUARE, pick=_flat_cat),
    Op("inverse", fn("inverse"), _SQUARE),
)

family("normalisation")
add(
    Op("layer_norm", lambda torch, x, w, b: torch.layer_norm(x, (4,), w, b),
       shapes_of(([((3, 4), "real"), ((4,), "real"), ((4,), "real")], {}),
                 ([((2, 3, 4), "real", "T"), ((4,), "real"), ((4,), "real")], {}))),
    Op("rms_norm", lambda torch, x, w: torch.rms_norm(x, (4,), w),
       shapes_of(([((3, 4), "real"), ((4,), "real")], {}))),
)

family("movement")
add(
    Op("expand_as", lambda torch, x, y: x.expand_as(y), shapes_of(([((3, 1), "real"), ((2, 3, 4), "real")], {})),
       view=True, grad_args=(0,)),
    Op("view_as", lambda torch, x, y: x.view_as(y), shapes_of(([((3, 4), "real"), ((2, 6), "real")], {})),
       view=True, grad_args=(0,)),
    Op("reshape_as", lambda torch, x, y: x.reshape_as(y), shapes_of(([((3, 4), "real"), ((6, 2), "real")], {}),
                                                                     ([((3, 4), "real", "T"), ((12,), "real")], {})),
       view=True, grad_args=(0,)),
)

family("indexing")
add(
    Op("scatter_reduce", fn("scatter_reduce"),
       shapes_of(([((3, 4), "real"), 1, np.array([[0, 0], [1, 2], [2, 0]]), ((3, 2), "real"), "sum"], {}),
                 ([((3, 4), "real"), 1, np.array([[0, 3], [1, 2], [2, 0]]), ((3, 2), "real"), "amax"],
                  {"include_self": False}),
                 ([((3, 4), "real"), 0, np.array([[0, 1, 2, 0], [2, 2, 0, 1]]), ((2, 4), "real"), "mean"], {})),
       inplace="scatter_reduce_"),
    Op("index_put", lambda torch, x, i, v, **k: x.index_put((i,), v, **k),
       shapes_of(([((4, 3), "real"), np.array([3, 0]), ((2, 3), "real")], {}),
                 ([((4, 3), "real"), np.array([1, 1]), ((3,), "real")], {"accumulate": True})),
       inplace=lambda torch, x, i, v, **k: x.index_put_((i,), v, **k), aliases=("index_put_",)),
    Op("masked_scatter", lambda torch, x, s: x.masked_scatter(x > 0, s),
       shapes_of(([((3, 4), "real"), ((12,), "real")], {})),
       inplace=lambda torch, x, s: x.masked_scatter_(x > 0, s), aliases=("masked_scatter_",)),
    Op("fill_diagonal_", lambda torch, x, v, **k: x.clone().fill_diagonal_(v, **k),
       shapes_of(([((3, 4), "real"), 0.5], {}), ([((7, 3), "real"), -1.0], {"wrap": True}),
                 ([((3, 3, 3), "real", "T"), 2.0], {}), ([((4, 3), "real", "vv"), 0.0], {})),
       inplace=lambda torch, x, v, **k: x.fill_diagonal_(v, **k), zero_region=True,
       xfail={"explain": "explain runs no in-place op (an out-of-place fill_diagonal does not exist): no page"}),
    Op("nonzero", fn("nonzero"), unary("away"), grad=False, exact_dtypes=("int64", "bool")),
    Op("argwhere", fn("argwhere"), unary("away"), grad=False, exact_dtypes=("int64",)),
    Op("unique", fn("unique"), shapes_of(([((3, 4), "offgrid")], {}), ([((5,), "offgrid")], {"return_counts": True}),
                                         ([((3, 4), "offgrid")], {"dim": 0})),
       grad=False, exact_dtypes=("int64",), pick=_values_of),
    Op("bincount", fn("bincount"), shapes_of(([((6,), "positive")], {}), ([((0,), "positive")], {"minlength": 3})),
       grad=False, dtypes=(), exact_dtypes=("int64",)),
    Op("bucketize", lambda torch, x, b: torch.bucketize(x, b.sort()[0]),
       shapes_of(([((3, 4), "real"), ((5,), "real")], {}), ([((), "real"), ((3,), "real")], {})),
       grad=False, exact_dtypes=("int64",)),
    Op("searchsorted", lambda torch, b, x, **k: torch.searchsorted(b.sort()[0], x, **k),
       shapes_of(([((5,), "real"), ((3, 4), "real")], {}), ([((4,), "real"), ((6,), "real")], {"right": True})),
       grad=False, exact_dtypes=("int64",)),
    Op("mode", fn("mode"), shapes_of(([((3, 5), "few")], {}), ([((4, 3), "few")], {"dim": 0, "keepdim": True})),
       pick=_first, functions=("SelectAlongDim",)),
    Op("histogram", lambda torch, x, **k: torch.histogram(x, **k), shapes_of(([((20,), "real")], {"bins": 5}),
                                                                             ([((3, 4), "real")], {"bins": 3})),
       grad=False, dtypes=("float64", "float32"), pick=_flat_cat),
    Op("histc", fn("histc"), shapes_of(([((20,), "real")], {"bins": 5, "min": -2.0, "max": 2.0}),
                                       ([((3, 4), "real")], {"bins": 4})), grad=False),
)

family("convolution")
add(
    Op("conv1d", fn("conv1d"), shapes_of(([((2, 3, 7), "real"), ((4, 3, 3), "real"), ((4,), "real")], {}),
                                         ([((1, 2, 8), "real", "T"), ((4, 1, 2), "real")],
                                          {"stride": 2, "padding": 1, "groups": 2, "dilation": 2}))),
    Op("conv2d", fn("conv2d"), shapes_of(([((2, 3, 5, 5), "real"), ((4, 3, 3, 3), "real"), ((4,), "real")], {}),
                                         ([((1, 2, 6, 5), "real"), ((2, 2, 2, 3), "real")],
                                          {"stride": (2, 1), "padding": 1}))),
    Op("conv_transpose1d", fn("conv_transpose1d"),
       shapes_of(([((2, 3, 5), "real"), ((3, 2, 3), "real"), ((2,), "real")], {"stride": 2, "padding": 1}))),
    Op("conv_transpose2d", fn("conv_transpose2d"),
       shapes_of(([((1, 2, 4, 3), "real"), ((2, 3, 3, 2), "real")], {"stride": 2, "output_padding": 1}))),
    Op("max_pool1d", fn("max_pool1d"), shapes_of(([((2, 3, 8), "distinct"), 2], {}),
                                                 ([((1, 2, 7), "distinct"), 3], {"stride": 2, "padding": 1}))),
    Op("max_pool2d", fn("max_pool2d"), shapes_of(([((2, 3, 4, 4), "distinct"), 2], {}),
                                                 ([((1, 2, 5, 5), "distinct"), 3], {"stride": 2, "padding": 1}))),
    Op("avg_pool1d", fn("avg_pool1d"), shapes_of(([((2, 3, 8), "real"), 2], {}),
                                                 ([((1, 2, 7), "real"), 3], {"stride": 2, "padding": 1}))),
    Op("adaptive_avg_pool1d", fn("adaptive_avg_pool1d"), shapes_of(([((2, 3, 8), "real"), 3], {}),
                                                                   ([((1, 2, 5), "real"), 5], {}))),
    Op("pixel_shuffle", fn("pixel_shuffle"), shapes_of(([((1, 8, 2, 3), "real"), 2], {}))),
    Op("pixel_unshuffle", fn("pixel_unshuffle"), shapes_of(([((1, 2, 4, 6), "real"), 2], {}))),
    Op("embedding", lambda torch, i, w: torch.nn.functional.embedding(i, w),
       shapes_of(([np.array([[0, 2, 1], [3, 3, 0]]), ((4, 5), "real")], {}))),
)


def by_name() -> dict:
    return {op.name: op for op in OPS}


def covered_names() -> set:
    """Every public name an entry covers: its name, aliases and in-place method."""
    names = set()
    for op in OPS:
        names.add(op.name)
        names.update(op.aliases)
        if isinstance(op.inplace, str):
            names.add(op.inplace)
        names.update(f"{a}_" for a in op.aliases if op.inplace)
    return names


# ----------------------------------------------------------------------------- not ops

_FACTORY = "a factory: makes a tensor from sizes or data, no input to differentiate (test_factories.py)"
_RANDOM = "draws random numbers: no torch value to equal (test_rng_torch_streams.py checks the streams)"
_STATE = "process or library state, not a tensor op"
_META = "reads a tensor's metadata or converts it to Python: no tensor result to compare"
_DTYPE = "a dtype conversion (tests/test_dtype_promotion.py, test_default_dtype.py)"
_AUTOGRAD = "the autograd API itself (test_engine*.py, test_autograd_*.py), not an op"
_IO = "file input/output (test_serialization.py, test_load_hostile.py)"
_FILL = "an in-place fill with no out-of-place op (test_inplace.py)"
_PRED = "returns a Python bool, not a tensor (test_fuzz_api.py compares it with torch's)"
_CALLBACK = ("calls a Python function per element, in place (torch's CPU-only, not differentiable): "
             "no op to compare (test_surface_round3_inplace.py)")

EXCLUDED: dict = {
    **{n: _FACTORY for n in ("arange", "as_tensor", "asarray", "empty", "empty_like", "eye", "from_numpy", "full",
                             "full_like", "linspace", "logspace", "ones", "ones_like", "range", "tensor", "zeros",
                             "zeros_like", "new", "new_empty", "new_full", "new_ones", "new_tensor", "new_zeros")},
    **{n: _RANDOM for n in ("bernoulli", "bernoulli_", "cauchy_", "dropout", "exponential_", "geometric_",
                            "log_normal_", "multinomial", "normal", "normal_", "poisson", "rand", "rand_like",
                            "randint", "randint_like", "randn", "randn_like", "random_", "randperm", "uniform_")},
    **{n: _STATE for n in ("compile", "get_default_dtype", "get_num_threads", "get_printoptions", "get_rng_state",
                           "initial_seed", "is_grad_enabled", "is_inference_mode_enabled", "manual_seed", "seed",
                           "set_default_dtype", "set_num_threads", "set_printoptions", "set_rng_state",
                           "broadcast_shapes", "can_cast", "promote_types", "result_type", "cpu", "cuda", "to",
                           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled")},
    **{n: _META for n in ("data_ptr", "dim", "element_size", "is_complex", "is_contiguous", "is_floating_point",
                          "is_tensor", "item", "ndimension", "nelement", "numel", "numpy", "size", "stride",
                          "tolist", "type", "is_coalesced", "is_conj", "is_distributed", "is_inference", "is_neg",
                          "is_nonzero", "is_pinned", "is_same_size", "is_set_to", "is_shared", "is_signed")},
    **{n: _DTYPE for n in ("bool", "byte", "double", "float", "half", "int", "long", "short", "type_as")},
    **{n: _AUTOGRAD for n in ("backward", "detach", "detach_", "gradcheck", "register_hook", "requires_grad_",
                              "retain_grad", "register_post_accumulate_grad_hook")},
    **{n: _IO for n in ("load", "save")},
    **{n: _FILL for n in ("fill_", "zero_", "copy_", "resize", "resize_", "resize_as_")},
    **{n: _CALLBACK for n in ("apply_", "map_", "map2_")},
    "share_memory_": "marks the memory shared (one process here: nothing moves) and returns the tensor itself: "
                     "no op (test_surface_round3.py checks is_shared after it)",
    **{n: _PRED for n in ("allclose", "equal")},
    **{n: "beyond torch 2.13's API (torch has no Tensor.maximum_/minimum_): nothing to compare with"
       for n in ("maximum_", "minimum_")},
}
