"""The ladder of backward exercises: what each rung draws, calls, compares with, and suspects.

An :class:`Exercise` names

* ``solution``: the reference Function of ``solutions.py`` (its forward is the learner's template,
  whose class is named :attr:`Exercise.class_name`);
* ``draw``: one random case from a hypothesis ``draw`` (shapes, a seed for the values, layout and
  broadcasting choices), as a :class:`Case`;
* ``call(Fn, t, case)``: the learner's Function applied to the Tensors ``t`` (name -> Tensor);
* ``truth(t, case)``: the same value from the library (fused ops, primitives): its gradient is
  the true one;
* ``hints``: what the derivation gives, without the answer;
* ``mistakes(case, g, truth)``: the known wrong gradients of this rung (a missing term, a
  wrong correction), each ``(input name, label, array)``, recognised by the checker;
* ``rungs``: where the library's own versions live, shown by ``exercise solution``
  (``composite``, ``closed_form`` class names looked up in ``tinygrad_tx.functional.closed_form``
  when that module exists, ``fused``; ``module`` for the GPT block).

Values come from ``numpy.random.default_rng(case.seed)`` so that hypothesis shrinks the shapes
and the seed, not thousands of floats.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from .. import functional as F
from . import solutions as S

# --------------------------------------------------------------------------- cases


@dataclasses.dataclass
class Case:
    """One example: the differentiable float64 inputs (in the Function's order), the other
    arguments, how the inputs are laid out, and the seed of the values and the cotangent."""

    arrays: dict
    extra: dict
    seed: int
    noncontig: bool = False
    broadcast_shape: tuple | None = None   # the common shape when inputs broadcast against each other

    def describe(self) -> str:
        parts = [f"{n}: {tuple(a.shape)}" for n, a in self.arrays.items()]
        for n, v in self.extra.items():
            parts.append(f"{n}: {tuple(v.shape)} {v.dtype}" if isinstance(v, np.ndarray) else f"{n}={v!r}")
        text = ", ".join(parts)
        if self.noncontig:
            text += " (non-contiguous inputs)"
        return text

    def replace(self, **changes) -> "Case":
        return dataclasses.replace(self, **changes)

    def contiguous(self) -> "Case":
        return self.replace(arrays={n: np.ascontiguousarray(a) for n, a in self.arrays.items()}, noncontig=False)

    def copies(self) -> dict:
        """Fresh copies of the inputs with the same memory layout (order='K')."""
        out = {}
        for n, a in self.arrays.items():
            out[n] = _strided_copy(a) if _is_strided_1d(a) else np.array(a, order="K", copy=True)
        return out


def _is_strided_1d(a):
    return a.ndim == 1 and a.size > 1 and not a.flags.c_contiguous


def _strided_copy(a):
    """A 1-D view with stride 2 of a fresh buffer holding ``a``'s values."""
    buf = np.zeros(2 * a.size, a.dtype)
    view = buf[::2]
    view[...] = a
    return view


def lay_out(a: np.ndarray, noncontig: bool) -> np.ndarray:
    """``a`` as it is, or in a non-contiguous layout with the same values: column-major for
    2-D and more, every second element of a larger buffer for vectors."""
    if not noncontig or a.size < 2:
        return a
    if a.ndim >= 2:
        return np.asfortranarray(a)
    return _strided_copy(a) if a.ndim == 1 else a


def _shape(draw, st, min_dims=1, max_dims=3, max_side=4):
    return tuple(draw(st.lists(st.integers(1, max_side), min_size=min_dims, max_size=max_dims)))


def _broadcast_pair(draw, st, shape):
    """Two shapes broadcasting to ``shape``: each may lose leading dims and have dims set to 1."""
    out = []
    for _ in range(2):
        lead = draw(st.integers(0, len(shape) - 1)) if len(shape) > 1 else 0
        s = list(shape[lead:])
        ones = draw(st.lists(st.booleans(), min_size=len(s), max_size=len(s)))
        out.append(tuple(1 if o else n for n, o in zip(s, ones)))
    return out


def _common(draw, st):
    return draw(st.integers(0, 2 ** 16 - 1)), draw(st.booleans())


def _values(rng, shape, kind="normal"):
    if kind == "positive":
        return rng.uniform(0.5, 2.0, shape)
    if kind == "nonzero":
        return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    if kind == "ties":       # a few distinct values: maxima tie often
        return rng.integers(0, 3, shape).astype(np.float64)
    return rng.standard_normal(shape)


# --------------------------------------------------------------------------- exercises


@dataclasses.dataclass
class Exercise:
    name: str
    title: str
    solution: type
    draw: Callable
    call: Callable
    truth: Callable
    hints: tuple
    mistakes: Callable | None = None
    factors: Callable | None = None          # extra named constants for the factor diagnosis
    finite_differences: bool = True          # False where the function has kinks at the drawn points
    rungs: dict = dataclasses.field(default_factory=dict)

    @property
    def class_name(self) -> str:
        """The class the learner writes (``exercise start`` names it so, ``exercise check`` looks
        for it): the reference solution's name without ``Solution`` (``SoftmaxSolution`` -> ``Softmax``)."""
        return self.solution.__name__.removesuffix("Solution")


def _binary_draw(a_kind, b_kind):
    def draw(d, st):
        seed, nc = _common(d, st)
        shape = _shape(d, st)
        broadcast = d(st.booleans())
        sa, sb = _broadcast_pair(d, st, shape) if broadcast else (shape, shape)
        rng = np.random.default_rng(seed)
        a, b = _values(rng, sa, a_kind), _values(rng, sb, b_kind)
        common = np.broadcast_shapes(sa, sb)
        return Case({"a": lay_out(a, nc), "b": lay_out(b, nc)}, {}, seed, nc,
                    common if (sa != common or sb != common) else None)
    return draw


def _unary_draw(kind):
    def draw(d, st):
        seed, nc = _common(d, st)
        x = _values(np.random.default_rng(seed), _shape(d, st), kind)
        return Case({"x": lay_out(x, nc)}, {}, seed, nc)
    return draw


def _dim_draw(kind="normal", min_dims=1):
    def draw(d, st):
        seed, nc = _common(d, st)
        shape = _shape(d, st, min_dims=min_dims)
        dim = d(st.integers(0, len(shape) - 1))
        x = _values(np.random.default_rng(seed), shape, kind)
        return Case({"x": lay_out(x, nc)}, {"dim": dim}, seed, nc)
    return draw


def _apply_ab(Fn, t, c):
    return Fn.apply(t["a"], t["b"])


def _apply_x(Fn, t, c):
    return Fn.apply(t["x"])


def _apply_x_dim(Fn, t, c):
    return Fn.apply(t["x"], dim=c.extra["dim"])


def _mul_mistakes(c, g, s):
    a, b = c.arrays["a"], c.arrays["b"]
    return [("a", "multiplied g by a itself instead of by the other input b", g * a),
            ("b", "multiplied g by b itself instead of by the other input a", g * b)]


def _div_mistakes(c, g, s):
    a, b = c.arrays["a"], c.arrays["b"]
    return [("b", "dropped a from -g·a/b² (returned -g/b²)", -g / (b * b)),
            ("a", "multiplied by b instead of dividing (g·b)", g * b)]


def _pow_mistakes(c, g, s):
    a, b = c.arrays["a"], c.arrays["b"]
    return [("a", "forgot the factor b of b·a^(b-1)", g * a ** (b - 1)),
            ("a", "kept the exponent b (g·b·a^b) instead of b - 1", g * b * a ** b),
            ("b", "forgot log a in dL/db = g·a^b·log a", g * a ** b)]


def _log_mistakes(c, g, s):
    x = c.arrays["x"]
    return [("x", "multiplied by x instead of dividing (g·x)", g * x),
            ("x", "used -1/x² (the derivative of 1/x), not 1/x", -g / (x * x))]


def _tanh_mistakes(c, g, s):
    y = np.tanh(c.arrays["x"])
    return [("x", "used 1 - y instead of 1 - y²", g * (1 - y)),
            ("x", "used 1 - x² (the input) instead of 1 - y² (the output)", g * (1 - c.arrays["x"] ** 2))]


def _tanh_backward_draw(d, st):
    seed, nc = _common(d, st)
    shape = _shape(d, st)
    rng = np.random.default_rng(seed)
    x, g = _values(rng, shape, "normal"), _values(rng, shape, "normal")
    return Case({"x": lay_out(x, nc), "g": lay_out(g, nc)}, {}, seed, nc)


def _tanh_backward_truth(t, c):
    """tanh's gradient from the library, recorded (create_graph): its gradient is the second one."""
    from ..core.api import grad
    return grad(t["x"].tanh(), t["x"], t["g"], create_graph=True)[0]


def _tanh_backward_mistakes(c, u, s):
    x, g = c.arrays["x"], c.arrays["g"]
    y = np.tanh(x)
    return [("x", "differentiated 1 - y² as -2y, dropping the chain rule's y' = 1 - y²", -2 * u * g * y),
            ("x", "differentiated 1 - x² (the input) instead of 1 - y²", -2 * u * g * x),
            ("g", "multiplied by g itself: z is linear in g, so ∂z/∂g = 1 - y²", u * g * (1 - y * y))]


def _max_mistakes(c, g, s):
    x, dim = c.arrays["x"], c.extra["dim"]
    hit = x == x.max(axis=dim, keepdims=True)
    first = np.zeros_like(hit)
    np.put_along_axis(first, np.expand_dims(np.argmax(x, axis=dim), dim), True, axis=dim)
    ge = np.expand_dims(g, dim)
    return [("x", "gave the full g to every tied maximum (ties must share it: divide by their count)", hit * ge),
            ("x", "gave g only to the first of tied maxima (amax shares it evenly, as torch)", first * ge)]


def _assign_instead_of_add(shape, idx, g):
    dx = np.zeros(shape)
    dx[idx] = g        # the mistake: repeated indices keep only one of their gradients
    return dx


def _getitem_mistakes(c, g, s):
    return [("x", "assigned instead of accumulating: dx[idx] = g keeps one gradient per repeated index "
                  "(use np.add.at(dx, idx, g))", _assign_instead_of_add(c.arrays["x"].shape, c.extra["idx"], g))]


def _embedding_mistakes(c, g, s):
    w = c.arrays["weight"]
    ids = c.extra["ids"].reshape(-1)
    return [("weight", "assigned instead of accumulating: dW[ids] = g keeps one gradient per repeated id "
                       "(use np.add.at)", _assign_instead_of_add(w.shape, ids, g.reshape(-1, w.shape[1])))]


def _softmax_y(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


WRONG_AXIS = "over the wrong axis"     # every label of a reduction over another axis than dim says so


def _other_axes(ndim: int, dim: int) -> list:
    """The axes a reduction along ``dim`` could wrongly have used: every other axis, and all at once."""
    return [k for k in range(ndim) if k != dim % ndim] + [None]


def _softmax_mistakes(c, g, s):
    dim = c.extra["dim"]
    y = _softmax_y(c.arrays["x"], dim)
    return [("x", "missing the -⟨g, y⟩ term: returned y ∘ g instead of y ∘ (g - ⟨g, y⟩)", y * g),
            ("x", "subtracted Σ g instead of ⟨g, y⟩ (the sum must be weighted by y)",
             y * (g - g.sum(axis=dim, keepdims=True)))] + [
            ("x", f"summed ⟨g, y⟩ {WRONG_AXIS} (another axis than dim, or the whole array): take the inner "
                  "product along the softmax's own dim, sum(axis=dim, keepdims=True)",
             y * (g - (g * y).sum(axis=k, keepdims=True))) for k in _other_axes(y.ndim, dim)]


def _log_softmax_mistakes(c, g, s):
    dim = c.extra["dim"]
    x = c.arrays["x"]
    y = np.log(_softmax_y(x, dim))
    return [("x", "missing the -softmax ∘ Σ g term: returned g", g),
            ("x", "used y (log-probabilities) instead of softmax = e^y in g - e^y Σ g",
             g - y * g.sum(axis=dim, keepdims=True)),
            ("x", "used softmax's backward (y ∘ (g - ⟨g, y⟩) with y = softmax)",
             np.exp(y) * (g - (g * np.exp(y)).sum(axis=dim, keepdims=True)))] + [
            ("x", f"summed g {WRONG_AXIS} (another axis than dim, or the whole array) in g - softmax ∘ Σ g: "
                  "sum along dim, keepdims=True",
             g - np.exp(y) * g.sum(axis=k, keepdims=True)) for k in _other_axes(x.ndim, dim)]


def _cross_entropy_mistakes(c, g, s):
    z, t = c.arrays["z"], c.extra["target"]
    p = _softmax_y(z, 1)
    n = z.shape[0]
    onehot = np.zeros_like(p)
    onehot[np.arange(n), t] = 1
    return [("z", "forgot to subtract the one-hot target: returned g·p/N instead of g·(p - onehot)/N", g * p / n),
            ("z", "the sign of p - onehot is flipped", g * (onehot - p) / n)]


def _normalisation_mistakes(c, g, axes, channel_axis, what):
    """The recognised wrong dL/dx (and dL/dweight) of a normalisation over ``axes``, whose weight
    lies along ``channel_axis``."""
    x, w = c.arrays["x"], c.arrays["weight"]
    shape = [1] * x.ndim
    shape[channel_axis] = w.shape[0]
    mean = lambda a: a.mean(axis=axes, keepdims=True)   # noqa: E731
    mu = mean(x)
    r = 1 / np.sqrt(mean((x - mu) ** 2) + c.extra["eps"])
    xh = (x - mu) * r
    gh = g * w.reshape(shape)
    m = x.size // w.shape[0]
    found = [("x", f"missing the x̂ ∘ mean(ĝ ∘ x̂) term ({what}): returned ρ(ĝ - mean ĝ)", r * (gh - mean(gh))),
             ("x", "missing the mean(ĝ) term: returned ρ(ĝ - x̂ ∘ mean(ĝ ∘ x̂))", r * (gh - xh * mean(gh * xh))),
             ("x", "missing both mean terms: returned ρ ĝ, as if μ and σ² were constants", r * gh)]
    if m > 1:
        found.append(("x", "variance with the wrong correction: differentiated σ² = Σ(x - μ)²/(N - 1) "
                           "where the forward uses the biased Σ(x - μ)²/N (N values per statistic)",
                      r * (gh - mean(gh) - xh * mean(gh * xh) * m / (m - 1))))
    reduced = {a % x.ndim for a in axes}
    for k in [a for a in range(x.ndim) if a not in reduced] + [None]:
        wrong = lambda a: a.mean(axis=k, keepdims=True)   # noqa: E731
        found.append(("x", f"took the means of dL/dx {WRONG_AXIS} (the statistics' own axes are "
                           f"{sorted(reduced)}): mean(ĝ) and mean(ĝ ∘ x̂) must run over the values each μ and "
                           "σ² was computed from", r * (gh - wrong(gh) - xh * wrong(gh * xh))))
    others = tuple(i for i in range(x.ndim) if i != channel_axis % x.ndim)
    found.append(("weight", "dL/dweight without x̂: returned Σ g", g.sum(axis=others)))
    return found


def _layer_norm_mistakes(c, g, s):
    return _normalisation_mistakes(c, g, (-1,), -1, "LayerNorm")


def _batch_norm_mistakes(c, g, s):
    x = c.arrays["x"]
    return _normalisation_mistakes(c, g, (0,) + tuple(range(2, x.ndim)), 1, "BatchNorm")


def _gelu_mistakes(c, g, s):
    x = c.arrays["x"]
    y, t = S.gelu_forward(x)
    return [("x", "missing the x ∘ tanh'(u) term of the product rule: returned g ∘ 0.5(1 + tanh u)", g * 0.5 * (1 + t)),
            ("x", "forgot the chain rule through u (the factor √(2/π)(1 + 3·0.044715 x²))",
             g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t))),
            ("x", "used 1 - tanh u instead of 1 - tanh² u", g * (0.5 * (1 + t) + 0.5 * x * (1 - t) * S.GELU_C
                                                                * (1 + 3 * S.GELU_A * x * x)))]


def _attention_mistakes(c, g, s):
    q, k, v = (c.arrays[n] for n in "qkv")
    _, p = S.attention_forward(q, k, v)
    scale = 1 / np.sqrt(q.shape[-1])
    dp = np.matmul(g, np.swapaxes(v, -1, -2))
    ds_bad = p * dp                    # softmax without ⟨dP, P⟩
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    return [("q", "missing softmax's -rowsum(dP ∘ P) term (dS = P ∘ dP)", scale * np.matmul(ds_bad, k)),
            ("k", "missing softmax's -rowsum(dP ∘ P) term (dS = P ∘ dP)",
             scale * np.matmul(np.swapaxes(ds_bad, -1, -2), q)),
            ("k", "dK = s dS Q: dS not transposed (it must be s dSᵀ Q)", scale * np.matmul(ds, q)),
            ("v", "dV = P G: P not transposed (it must be Pᵀ G)", np.matmul(p, g))]


def _reduced_size(c):
    n = c.arrays["x"].shape[c.extra["dim"]]
    return {float(n): "the size of the reduced dimension dim"} if n > 1 else {}


def _row_size(c):
    n = c.arrays["x"].shape[-1]
    return {float(n): "D, the size of the normalised (last) dimension"} if n > 1 else {}


def _channel_size(c):
    n = c.arrays["x"].size // c.arrays["x"].shape[1]
    return {float(n): "m, the number of values per channel"} if n > 1 else {}


def _batch_size(c):
    n = c.arrays["z"].shape[0]
    return {float(n): "N, the number of positions the mean runs over"} if n > 1 else {}


def _gpt_block_mistakes(c, g, truth):
    return [("x", "missing the residual path: dL/dx lacks g itself, which flows straight through "
                  "y = h + MLP(h) and h = x + attention(x)", truth["x"] - g)]


def _attention_factors(c):
    e = c.arrays["q"].shape[-1]
    return {float(np.sqrt(e)): "√E, E the size of a query (the scale 1/√E was forgotten or applied twice)"} if e > 1 else {}


# ----- draws

def _draw_matmul(d, st):
    seed, nc = _common(d, st)
    kind = d(st.sampled_from(["mat", "vec@vec", "mat@vec", "vec@mat", "batched", "batched@mat", "broadcast"]))
    n, k, m, bsz = (d(st.integers(1, 4)) for _ in range(4))
    shapes = {"mat": ((n, k), (k, m)), "vec@vec": ((k,), (k,)), "mat@vec": ((n, k), (k,)),
              "vec@mat": ((k,), (k, m)), "batched": ((bsz, n, k), (bsz, k, m)),
              "batched@mat": ((bsz, n, k), (k, m)), "broadcast": ((bsz, 1, n, k), (2, k, m))}[kind]
    rng = np.random.default_rng(seed)
    a, b = (lay_out(_values(rng, s), nc) for s in shapes)
    bshape = None
    if kind in ("batched@mat", "broadcast"):
        bshape = np.broadcast_shapes(shapes[0][:-2], shapes[1][:-2])
    return Case({"a": a, "b": b}, {}, seed, nc, bshape)


def _unbroadcast_matmul(c):
    batch = c.broadcast_shape
    a, b = c.arrays["a"], c.arrays["b"]
    return c.replace(arrays={"a": np.broadcast_to(a, batch + a.shape[-2:]).copy(),
                             "b": np.broadcast_to(b, batch + b.shape[-2:]).copy()}, broadcast_shape=None)


BATCHED_T = ("`.T` on a batched operand: it reverses every axis ((B, K, N).T is (N, K, B)), where the "
             "transpose of each matrix swaps only the last two: np.swapaxes(x, -1, -2) (or x.transpose(0, 2, 1))")


def _matmul_mistakes(c, g, s):
    a, b = c.arrays["a"], c.arrays["b"]
    if a.ndim < 2 or b.ndim < 2:
        return []
    candidates = [("a", "forgot a transpose: dL/da = G B (must be G Bᵀ)", lambda: np.matmul(g, b)),
                  ("b", "forgot a transpose: dL/db = A G (must be Aᵀ G)", lambda: np.matmul(a, g))]
    if b.ndim >= 3:
        candidates.append(("a", BATCHED_T, lambda: np.matmul(g, b.T)))
    if a.ndim >= 3:
        candidates.append(("b", BATCHED_T, lambda: np.matmul(a.T, g)))
    out = []
    for name, text, fn in candidates:
        try:
            out.append((name, text, fn()))
        except ValueError:          # the shapes do not fit: NumPy raises at the learner's own line
            pass
    return out


def _draw_getitem(d, st):
    seed, nc = _common(d, st)
    shape = _shape(d, st)
    rng = np.random.default_rng(seed)
    n_idx = d(st.integers(1, 6))
    idx = rng.integers(0, shape[0], n_idx)
    return Case({"x": lay_out(_values(rng, shape), nc)}, {"idx": idx}, seed, nc)


def _draw_embedding(d, st):
    seed, nc = _common(d, st)
    v, dim = d(st.integers(1, 5)), d(st.integers(1, 4))
    ids_shape = _shape(d, st, 1, 2)
    rng = np.random.default_rng(seed)
    return Case({"weight": lay_out(_values(rng, (v, dim)), nc)}, {"ids": rng.integers(0, v, ids_shape)}, seed, nc)


def _draw_cross_entropy(d, st):
    seed, nc = _common(d, st)
    n, classes = d(st.integers(1, 5)), d(st.integers(2, 5))
    rng = np.random.default_rng(seed)
    return Case({"z": lay_out(_values(rng, (n, classes)), nc)}, {"target": rng.integers(0, classes, n)}, seed, nc)


def _draw_layer_norm(d, st):
    seed, nc = _common(d, st)
    shape = _shape(d, st, 1, 3, 5)
    rng = np.random.default_rng(seed)
    dim = shape[-1]
    x = _values(rng, shape)
    w, b = 1 + 0.5 * _values(rng, (dim,)), _values(rng, (dim,))
    return Case({"x": lay_out(x, nc), "weight": w, "bias": b}, {"eps": 1e-5}, seed, nc)


def _draw_batch_norm(d, st):
    seed, nc = _common(d, st)
    n, ch = d(st.integers(2, 5)), d(st.integers(1, 3))
    shape = (n, ch) + ((d(st.integers(1, 3)),) if d(st.booleans()) else ())
    rng = np.random.default_rng(seed)
    x = _values(rng, shape)
    w, b = 1 + 0.5 * _values(rng, (ch,)), _values(rng, (ch,))
    return Case({"x": lay_out(x, nc), "weight": w, "bias": b}, {"eps": 1e-5}, seed, nc)


def _draw_attention(d, st):
    seed, nc = _common(d, st)
    lead = _shape(d, st, 0, 2, 2)
    t, e = d(st.integers(1, 4)), d(st.integers(1, 4))
    rng = np.random.default_rng(seed)
    return Case({n: lay_out(_values(rng, lead + (t, e)), nc) for n in "qkv"}, {}, seed, nc)


GPT_WEIGHTS = ("ln1_w", "ln1_b", "w_attn", "w_proj", "ln2_w", "ln2_b", "w_fc", "w_out")


def _draw_gpt_block(d, st):
    seed, nc = _common(d, st)
    b, t = d(st.integers(1, 2)), d(st.integers(1, 4))
    n_head = d(st.integers(1, 2))
    c = n_head * d(st.integers(1, 3))
    rng = np.random.default_rng(seed)
    shapes = {"x": (b, t, c), "ln1_w": (c,), "ln1_b": (c,), "w_attn": (c, 3 * c), "w_proj": (c, c),
              "ln2_w": (c,), "ln2_b": (c,), "w_fc": (c, 4 * c), "w_out": (4 * c, c)}
    arrays = {}
    for name, shape in shapes.items():
        a = _values(rng, shape)
        if name.endswith("_w") and name.startswith("ln"):
            a = 1 + 0.3 * a
        elif name.startswith("w_"):
            a = a / np.sqrt(shape[0])
        arrays[name] = lay_out(a, nc)
    return Case(arrays, {"n_head": n_head}, seed, nc)


def _gpt_block_truth(t, c):
    x = t["x"]
    b, n, ch = x.shape
    h = c.extra["n_head"]
    a1 = F.layer_norm(x, (ch,), t["ln1_w"], t["ln1_b"])
    q, k, v = ((part.reshape(b, n, h, ch // h).transpose(1, 2)) for part in (a1 @ t["w_attn"]).split(ch, dim=-1))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, n, ch)
    x = x + o @ t["w_proj"]
    a2 = F.layer_norm(x, (ch,), t["ln2_w"], t["ln2_b"])
    return x + F.gelu(a2 @ t["w_fc"], approximate="tanh") @ t["w_out"]


def _batch_norm_truth(t, c):
    from ..functional.batch_norm import batch_norm
    return batch_norm(t["x"], None, None, t["weight"], t["bias"], training=True, eps=c.extra["eps"])


def _gpt_block_call(Fn, t, c):
    return Fn.apply(t["x"], *(t[n] for n in GPT_WEIGHTS), n_head=c.extra["n_head"])


def _tensor(a):
    from ..tensor import Tensor
    return Tensor(a)


FN = "tinygrad_tx.functional"

_LADDER = [
    Exercise("mul", "y = a * b, with broadcasting", S.MulSolution, _binary_draw("normal", "normal"),
             _apply_ab, lambda t, c: t["a"] * t["b"],
             ("Differentiate y = a·b with respect to a with b held fixed, then the other way round.",
              "Return one gradient per input, in the broadcast (output) shape: the engine sums it back "
              "to each input's shape (autograd.reduce_grad_to_input)."),
             _mul_mistakes, rungs={"fused": "tinygrad_tx.ops.elementwise:Mul"}),
    Exercise("div", "y = a / b, with broadcasting", S.DivSolution, _binary_draw("normal", "nonzero"),
             _apply_ab, lambda t, c: t["a"] / t["b"],
             ("a/b = a·b⁻¹: the derivative of b⁻¹ is -b⁻².", "The two gradients have different signs."),
             _div_mistakes, rungs={"fused": "tinygrad_tx.ops.elementwise:Div"}),
    Exercise("pow", "y = a ** b for a > 0, both tensors", S.PowSolution, _binary_draw("positive", "normal"),
             _apply_ab, lambda t, c: t["a"] ** t["b"],
             ("For a: the power rule, with b held fixed.",
              "For b: write a^b = e^(b log a) and use the chain rule; the output y can be reused."),
             _pow_mistakes, rungs={"fused": "tinygrad_tx.ops.elementwise:Pow"}),
    Exercise("exp", "y = e^x", S.ExpSolution, _unary_draw("normal"), _apply_x, lambda t, c: t["x"].exp(),
             ("e^x is its own derivative: which saved array already holds it?",),
             rungs={"fused": "tinygrad_tx.ops.elementwise:Exp"}),
    Exercise("log", "y = log x", S.LogSolution, _unary_draw("positive"), _apply_x, lambda t, c: t["x"].log(),
             ("d log x / dx is a power of x.",), _log_mistakes, rungs={"fused": "tinygrad_tx.ops.elementwise:Log"}),
    Exercise("tanh", "y = tanh x", S.TanhSolution, _unary_draw("normal"), _apply_x, lambda t, c: t["x"].tanh(),
             ("tanh' = 1/cosh²; rewrite it with tanh itself, i.e. with the saved output.",), _tanh_mistakes,
             rungs={"fused": "tinygrad_tx.ops.elementwise:TanhFn"}),
    Exercise("tanh_backward", "z = g ∘ (1 - tanh² x): the backward of tanh's backward", S.TanhBackwardSolution,
             _tanh_backward_draw, lambda Fn, t, c: Fn.apply(t["x"], t["g"]), _tanh_backward_truth,
             ("z depends on both x and the cotangent g: return one gradient for each.",
              "z is linear in g. For x, differentiate 1 - y² with y = tanh x: the chain rule goes through y.",
              "This is what create_graph=True computes: tinygrad_tx.autograd.grad(x.tanh(), x, g, "
              "create_graph=True) gives z, and its gradient is the second derivative."),
             _tanh_backward_mistakes, rungs={"fused": "tinygrad_tx.ops.elementwise:TanhFn"}),
    Exercise("sum", "y = x.sum(dim)", S.SumSolution, _dim_draw(), _apply_x_dim, lambda t, c: t["x"].sum(c.extra["dim"]),
             ("Every x_i summed into y_r has ∂y_r/∂x_i = 1.",
              "g has one dimension fewer than x: put it back (np.expand_dims) and broadcast it to x's shape."),
             factors=_reduced_size, rungs={"fused": "tinygrad_tx.ops.reduce:Sum"}),
    Exercise("mean", "y = x.mean(dim)", S.MeanSolution, _dim_draw(), _apply_x_dim, lambda t, c: t["x"].mean(c.extra["dim"]),
             ("mean = sum / N, with N the size of the reduced dimension.", "As for sum, g must be expanded back."),
             factors=_reduced_size, rungs={"fused": "tinygrad_tx.ops.reduce:Mean"}),
    Exercise("matmul", "Y = A @ B: 1-D and batched operands", S.MatMulSolution, _draw_matmul,
             _apply_ab, lambda t, c: t["a"] @ t["b"],
             ("For matrices Y_ij = Σ_k A_ik B_kj: which entries of Y does A_ik touch?",
              "Check the shapes: dL/dA must have A's shape, built from G (Y's shape) and B.",
              "A vector operand is a matrix with one row (left) or one column (right); add that axis to G, "
              "then drop it from the gradient.", "Broadcast batch dimensions are summed by the engine."),
             _matmul_mistakes, rungs={"fused": "tinygrad_tx.ops.matmul:MatMul"}),
    Exercise("max", "y = x.amax(dim), with ties", S.AmaxSolution, _dim_draw("ties"), _apply_x_dim,
             lambda t, c: t["x"].amax(c.extra["dim"]),
             ("Only the entries equal to the maximum move it.",
              "When k entries tie, torch's amax gives each of them g / k."),
             _max_mistakes, finite_differences=False, rungs={"fused": "tinygrad_tx.ops.reduce_minmax:Amax"}),
    Exercise("getitem", "y = x[idx] with repeated integer indices", S.GetItemSolution, _draw_getitem,
             lambda Fn, t, c: Fn.apply(t["x"], c.extra["idx"]), lambda t, c: t["x"][c.extra["idx"]],
             ("Row r of x receives the gradient of every output position that picked it.",
              "An index can repeat: dx[idx] += g does not accumulate repeats in NumPy; np.add.at does.",
              "Return None for the index (it is not differentiable)."),
             _getitem_mistakes, rungs={"fused": "tinygrad_tx.ops.movement:GetItem"}),
    Exercise("embedding", "y = weight[ids] (an embedding lookup)", S.EmbeddingSolution, _draw_embedding,
             lambda Fn, t, c: Fn.apply(t["weight"], c.extra["ids"]),
             lambda t, c: F.embedding(_tensor(c.extra["ids"]), t["weight"]),
             ("Each output row is a copy of one table row.",
              "ids can have any shape and repeat: flatten ids and g's leading dims, then accumulate.",
              "Return None for ids."),
             _embedding_mistakes, rungs={"composite": f"{FN}.embedding:embedding_composite", "fused": f"{FN}.embedding:EmbeddingFn",
                    "closed_form": ("EmbeddingClosedForm",)}),
    Exercise("softmax", "y = softmax(x, dim)", S.SoftmaxSolution, _dim_draw(), _apply_x_dim,
             lambda t, c: F.softmax(t["x"], dim=c.extra["dim"]),
             ("∂y_i/∂x_j = y_i (δ_ij - y_j): y_i depends on every x_j of its slice.",
              "Apply that Jacobian to g without forming it: the δ_ij part gives one term, the -y_i y_j part "
              "an inner product along dim.", "Only the output y is needed (it is saved)."),
             _softmax_mistakes,
             rungs={"composite": f"{FN}.softmax:softmax_composite", "fused": f"{FN}.softmax:SoftmaxFn",
                    "closed_form": ("SoftmaxClosedForm",)}),
    Exercise("log_softmax", "y = log_softmax(x, dim)", S.LogSoftmaxSolution, _dim_draw(), _apply_x_dim,
             lambda t, c: F.log_softmax(t["x"], dim=c.extra["dim"]),
             ("y_i = x_i - logsumexp(x): the derivative of logsumexp is softmax.",
              "softmax = e^y, from the saved output."),
             _log_softmax_mistakes,
             rungs={"composite": f"{FN}.softmax:log_softmax_composite", "fused": f"{FN}.softmax:LogSoftmaxFn",
                    "closed_form": ("LogSoftmaxClosedForm",)}),
    Exercise("cross_entropy", "L = cross_entropy(z, target), mean over N", S.CrossEntropySolution, _draw_cross_entropy,
             lambda Fn, t, c: Fn.apply(t["z"], c.extra["target"]),
             lambda t, c: F.cross_entropy(t["z"], _tensor(c.extra["target"])),
             ("One position's loss is -log softmax(z)_t: combine log_softmax's derivative with the pick of t.",
              "The mean over N positions and the scalar g scale the result.", "Return None for the targets."),
             _cross_entropy_mistakes, factors=_batch_size,
             rungs={"composite": f"{FN}.loss:cross_entropy_composite", "fused": f"{FN}.loss:CrossEntropy",
                    "closed_form": ("CrossEntropyClosedForm",)}),
    Exercise("layer_norm", "y = layer_norm(x) ∘ weight + bias over the last dim", S.LayerNormSolution, _draw_layer_norm,
             lambda Fn, t, c: Fn.apply(t["x"], t["weight"], t["bias"], eps=c.extra["eps"]),
             lambda t, c: F.layer_norm(t["x"], (t["x"].shape[-1],), t["weight"], t["bias"], eps=c.extra["eps"]),
             ("Write ĝ = g ∘ weight, the gradient reaching x̂.",
              "μ and σ² depend on every x_j of the row: ∂μ/∂x_j = 1/D and ∂ρ/∂x_j = -ρ² x̂_j / D, "
              "ρ = 1/√(σ² + eps).", "Differentiate x̂_i = (x_i - μ) ρ: expect three terms for dL/dx.",
              "weight and bias are shared by all rows: their gradients are sums over the rows."),
             _layer_norm_mistakes, factors=_row_size,
             rungs={"composite": f"{FN}.normalization:layer_norm_composite", "fused": f"{FN}.normalization:LayerNormFn",
                    "closed_form": ("LayerNormClosedForm",)}),
    Exercise("batch_norm", "batch_norm(x) in training mode, per channel", S.BatchNormSolution, _draw_batch_norm,
             lambda Fn, t, c: Fn.apply(t["x"], t["weight"], t["bias"], eps=c.extra["eps"]), _batch_norm_truth,
             ("As LayerNorm, but the statistics of channel c run over its m = N (or N·L) values.",
              "The forward's variance is the biased one (divide by m): differentiate that one.",
              "weight and bias get the sums over the batch (and length) axes."),
             _batch_norm_mistakes, factors=_channel_size, rungs={"fused": "tinygrad_tx.functional.batch_norm:BatchNorm", "closed_form": ("BatchNormClosedForm",)}),
    Exercise("gelu", "y = gelu(x, approximate='tanh')", S.GeluSolution, _unary_draw("normal"), _apply_x,
             lambda t, c: F.gelu(t["x"], approximate="tanh"),
             ("Product rule on 0.5 x · (1 + tanh u), then the chain rule through u(x).",
              "tanh' = 1 - tanh², and the saved t = tanh u."),
             _gelu_mistakes,
             rungs={"composite": f"{FN}.activation:gelu_composite", "fused": "tinygrad_tx.ops.elementwise:GeluFn",
                    "closed_form": ("GeluClosedForm",)}),
    Exercise("attention", "scaled_dot_product_attention(q, k, v, is_causal=True)", S.AttentionSolution, _draw_attention,
             lambda Fn, t, c: Fn.apply(t["q"], t["k"], t["v"]),
             lambda t, c: F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=True),
             ("Go backwards through O = P V, P = softmax(S), S = Q Kᵀ / √E.",
              "The matmul rung gives the products' gradients; the softmax rung gives dS from dP, row by row.",
              "The mask's entries have P = 0: what does that make dS there?"),
             _attention_mistakes, factors=_attention_factors,
             rungs={"composite": f"{FN}.attention:scaled_dot_product_attention_composite",
                    "fused": f"{FN}.attention:ScaledDotProductAttention",
                    "closed_form": ("ScaledDotProductAttentionClosedForm",)}),
    Exercise("gpt_block", "a whole pre-norm GPT block (LN, causal attention, MLP, residuals)", S.GPTBlockSolution,
             _draw_gpt_block, _gpt_block_call, _gpt_block_truth,
             ("Run the forward's lines in reverse; every line is an earlier rung.",
              "A residual y = h + f(h) sends g straight to h and also through f: add both.",
              "The weights are shared by all B·T positions: their gradients sum over them.",
              "Reuse your LayerNorm, GELU and attention backwards as functions."),
             _gpt_block_mistakes,
             rungs={"module": "tinygrad_tx.models.gpt:TransformerBlock"}),
]

LADDER = {ex.name: ex for ex in _LADDER}
