"""Reference solutions of the exercise ladder: one plain ``Function`` per rung, each named
``<Op>Solution`` (``SoftmaxSolution``), apart from the library's ``SoftmaxFn`` and ``nn.Softmax``.

Each class is what a learner is asked to write: the ``forward`` (NumPy arrays in, one array out,
exactly as ``tinygrad-tx exercise start NAME`` writes it into the learner's file, there named
without the ``Solution`` suffix: ``class Softmax``) and the
``backward`` written by hand, its derivation in the docstring. ``exercise start`` copies a class
without its ``backward`` (and the module-level ``*_forward`` helpers it calls); ``exercise check``
compares the learner's backward with the library's own gradient, never with these; the tests
check that every one of these passes the checker.

These are plain, readable versions, not the library's fused ones (``tinygrad_tx/functional``):
no blocking, no in-place tricks. ``exercise solution NAME`` shows both.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.function import ArrayFunction

GELU_C = float(np.sqrt(2.0 / np.pi))   # √(2/π) of GELU's tanh approximation
GELU_A = 0.044715


# =========================================================================== elementwise

class MulSolution(ArrayFunction):
    """y = a * b (a and b broadcast against each other)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        """∂y/∂a = b and ∂y/∂b = a elementwise, so dL/da = g ∘ b, dL/db = g ∘ a.
        Both are in the broadcast shape; the engine sums them back to each input's shape."""
        a, b = ctx.saved_tensors
        return g * b, g * a


class DivSolution(ArrayFunction):
    """y = a / b (broadcasting)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, g):
        """∂y/∂a = 1/b,  ∂y/∂b = -a/b², so dL/da = g/b and dL/db = -g a / b²."""
        a, b = ctx.saved_tensors
        return g / b, -g * a / (b * b)


class PowSolution(ArrayFunction):
    """y = a ** b for a > 0 (both tensors, broadcasting)."""

    @staticmethod
    def forward(ctx, a, b):
        y = a ** b
        ctx.save_for_backward(a, b, y)
        return y

    @staticmethod
    def backward(ctx, g):
        """∂(a^b)/∂a = b a^(b-1);  a^b = e^(b log a), so ∂(a^b)/∂b = a^b log a = y log a.
        dL/da = g b a^(b-1),  dL/db = g y log a."""
        a, b, y = ctx.saved_tensors
        return g * b * a ** (b - 1), g * y * np.log(a)


class ExpSolution(ArrayFunction):
    """y = e^x."""

    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        """d e^x / dx = e^x = y: dL/dx = g ∘ y (the output is saved, not the input)."""
        (y,) = ctx.saved_tensors
        return g * y


class LogSolution(ArrayFunction):
    """y = log x for x > 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.log(x)

    @staticmethod
    def backward(ctx, g):
        """d log x / dx = 1/x: dL/dx = g / x."""
        (x,) = ctx.saved_tensors
        return g / x


class TanhSolution(ArrayFunction):
    """y = tanh x."""

    @staticmethod
    def forward(ctx, x):
        y = np.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        """tanh' = 1/cosh² = 1 - tanh²: dL/dx = g ∘ (1 - y²)."""
        (y,) = ctx.saved_tensors
        return g * (1 - y * y)


class TanhBackwardSolution(ArrayFunction):
    """z = g ∘ (1 - tanh² x): tanh's backward as a function of x and of the cotangent g. Its own
    backward is the *second* derivative -- what ``create_graph=True`` computes for tanh."""

    @staticmethod
    def forward(ctx, x, g):
        y = np.tanh(x)
        ctx.save_for_backward(y, g)
        return g * (1 - y * y)

    @staticmethod
    def backward(ctx, u):
        """With y = tanh x and y' = 1 - y²:  ∂z/∂g = 1 - y²  (z is linear in g), and
        ∂z/∂x = g · d(1 - y²)/dx = g · (-2y) · y' = -2 g y (1 - y²)  (the chain rule through y).
        So dL/dx = -2 u g y (1 - y²) and dL/dg = u (1 - y²)."""
        y, g = ctx.saved_tensors
        d = 1 - y * y
        return -2 * u * g * y * d, u * d


# =========================================================================== reductions

class SumSolution(ArrayFunction):
    """y = Σ_dim x (the dimension removed)."""

    @staticmethod
    def forward(ctx, x, *, dim):
        ctx.shape, ctx.dim = x.shape, dim
        return x.sum(axis=dim)

    @staticmethod
    def backward(ctx, g):
        """∂y_r/∂x_i = 1 for every i summed into r: each x_i receives the gradient of its row,
        dL/dx = g with the summed dimension put back and broadcast along it."""
        return np.broadcast_to(np.expand_dims(g, ctx.dim), ctx.shape)


class MeanSolution(ArrayFunction):
    """y = mean of x over dim (the dimension removed)."""

    @staticmethod
    def forward(ctx, x, *, dim):
        ctx.shape, ctx.dim = x.shape, dim
        return x.mean(axis=dim)

    @staticmethod
    def backward(ctx, g):
        """y = (1/N) Σ_dim x with N = x.shape[dim]: as for the sum, times 1/N."""
        n = ctx.shape[ctx.dim]
        return np.broadcast_to(np.expand_dims(g, ctx.dim) / n, ctx.shape)


class AmaxSolution(ArrayFunction):
    """y = max of x over dim (torch.amax: ties share the gradient evenly)."""

    @staticmethod
    def forward(ctx, x, *, dim):
        y = x.max(axis=dim)
        ctx.save_for_backward(x, y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        """y = max_i x_i moves with whichever x_i attain it. With k tied maxima, amax's
        gradient (torch's convention, the average of the one-sided choices) is split evenly:
        dL/dx_i = g [x_i = y] / k,  k = Σ_i [x_i = y]."""
        x, y = ctx.saved_tensors
        hit = x == np.expand_dims(y, ctx.dim)
        count = hit.sum(axis=ctx.dim, keepdims=True)
        return hit * (np.expand_dims(g, ctx.dim) / count)


# =========================================================================== products and lookups

class MatMulSolution(ArrayFunction):
    """Y = A @ B with NumPy's rules: 1-D operands are promoted (a vector on the left is a row,
    on the right a column), leading (batch) dimensions broadcast."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        """Y_ij = Σ_k A_ik B_kj:  ∂Y_ij/∂A_ik = B_kj, ∂Y_ij/∂B_kj = A_ik, so
        dL/dA = G Bᵀ and dL/dB = Aᵀ G (per batch entry; broadcast batch dimensions are summed
        by the engine). A vector operand is made a matrix first (a → a[None, :], b → b[:, None]),
        G gets the matching size-1 axis, and the gradient drops it again."""
        a, b = ctx.saved_tensors
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        if b.ndim == 1:
            g = np.expand_dims(g, -1)
        if a.ndim == 1:
            g = np.expand_dims(g, -2)
        ga = np.matmul(g, np.swapaxes(b2, -1, -2))
        gb = np.matmul(np.swapaxes(a2, -1, -2), g)
        if a.ndim == 1:
            ga = ga[..., 0, :]
        if b.ndim == 1:
            gb = gb[..., 0]
        return ga, gb


class GetItemSolution(ArrayFunction):
    """y = x[idx]: rows of x picked by an integer array (indices may repeat)."""

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return x[idx]

    @staticmethod
    def backward(ctx, g):
        """y_n = x[idx_n], so ∂y_n/∂x_r = [idx_n = r]: row r receives the sum of the
        gradients of every position that picked it, dL/dx_r = Σ_{n: idx_n = r} g_n.
        With repeated indices that is an accumulation, np.add.at (dx[idx] += g would keep
        only one of the repeats). The index gets no gradient (None)."""
        (idx,) = ctx.saved_tensors
        dx = np.zeros(ctx.shape, g.dtype)
        np.add.at(dx, idx, g)
        return dx, None


class EmbeddingSolution(ArrayFunction):
    """y[..., :] = weight[ids[...], :]: a row lookup in a (V, D) table (ids of any shape)."""

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.shape = weight.shape
        return weight[ids]

    @staticmethod
    def backward(ctx, g):
        """Each output row is a copy of one table row, so table row v receives the sum of the
        output gradients of every position that looked it up:
        dL/dW[v] = Σ_{n: ids_n = v} g_n (accumulate: ids repeat)."""
        (ids,) = ctx.saved_tensors
        dw = np.zeros(ctx.shape, g.dtype)
        np.add.at(dw, ids.reshape(-1), g.reshape(-1, ctx.shape[1]))
        return dw, None


# =========================================================================== softmax family

class SoftmaxSolution(ArrayFunction):
    """y = softmax(x) along dim: y_i = e^(x_i - m) / Σ_k e^(x_k - m), m = max_k x_k."""

    @staticmethod
    def forward(ctx, x, *, dim):
        e = np.exp(x - x.max(axis=dim, keepdims=True))
        y = e / e.sum(axis=dim, keepdims=True)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        """∂y_i/∂x_j = y_i (δ_ij - y_j), so
        dL/dx_j = Σ_i g_i y_i (δ_ij - y_j) = y_j (g_j - Σ_i g_i y_i):  dx = y ∘ (g - ⟨g, y⟩),
        the inner product taken along dim."""
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(axis=ctx.dim, keepdims=True))


class LogSoftmaxSolution(ArrayFunction):
    """y = log softmax(x) along dim: y_i = x_i - logsumexp(x), computed with the max shift."""

    @staticmethod
    def forward(ctx, x, *, dim):
        s = x - x.max(axis=dim, keepdims=True)
        y = s - np.log(np.exp(s).sum(axis=dim, keepdims=True))
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        """∂y_i/∂x_j = δ_ij - softmax(x)_j, so dL/dx_j = g_j - softmax_j Σ_i g_i:
        dx = g - e^y Σ g (softmax = e^y)."""
        (y,) = ctx.saved_tensors
        return g - np.exp(y) * g.sum(axis=ctx.dim, keepdims=True)


class CrossEntropySolution(ArrayFunction):
    """L = -(1/N) Σ_n log softmax(z_n)[t_n] for logits z (N, C) and class indices t (N,)."""

    @staticmethod
    def forward(ctx, z, target):
        s = z - z.max(axis=1, keepdims=True)
        log_p = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
        n = z.shape[0]
        ctx.save_for_backward(np.exp(log_p), target)
        return np.asarray(-log_p[np.arange(n), target].mean())

    @staticmethod
    def backward(ctx, g):
        """With log p = z - logsumexp(z), ∂ log p_t/∂z_c = δ_tc - p_c, so one position's loss
        -log p_t has gradient p - onehot(t); the mean over N positions divides by N, and the
        scalar g scales it all: dL/dz = g (p - onehot(t)) / N. The targets get None."""
        p, target = ctx.saved_tensors
        n = p.shape[0]
        dz = p.copy()
        dz[np.arange(n), target] -= 1
        return dz * (g / n), None


# =========================================================================== normalisation

def layer_norm_forward(x, weight, bias, eps):
    """(y, x̂, ρ) of LayerNorm over the last dimension: x̂ = (x - μ) ρ, ρ = 1/√(σ² + eps) with the
    biased variance σ² = mean((x - μ)²), y = x̂ ∘ weight + bias."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    xhat = (x - mu) * rstd
    return xhat * weight + bias, xhat, rstd


def layer_norm_backward(g, xhat, rstd, weight):
    """The gradients (dx, dweight, dbias) of :func:`layer_norm_forward`; derivation in
    :class:`LayerNormSolution`'s backward."""
    d = xhat.shape[-1]
    gh = g * weight
    dx = rstd * (gh - gh.mean(axis=-1, keepdims=True) - xhat * (gh * xhat).mean(axis=-1, keepdims=True))
    return dx, (g * xhat).reshape(-1, d).sum(axis=0), g.reshape(-1, d).sum(axis=0)


class LayerNormSolution(ArrayFunction):
    """y = x̂ ∘ weight + bias over the last dimension (D entries per row),
    x̂ = (x - μ) ρ, ρ = 1/√(σ² + eps), μ and σ² the row's mean and biased variance."""

    @staticmethod
    def forward(ctx, x, weight, bias, *, eps):
        y, xhat, rstd = layer_norm_forward(x, weight, bias, eps)
        ctx.save_for_backward(xhat, rstd, weight)
        return y

    @staticmethod
    def backward(ctx, g):
        """Write ĝ = g ∘ weight (the gradient reaching x̂). With ∂μ/∂x_j = 1/D and
        ∂ρ/∂x_j = -ρ³ (x_j - μ)/D = -ρ² x̂_j / D,
            ∂x̂_i/∂x_j = ρ (δ_ij - 1/D) - x̂_i ρ x̂_j / D,
        so dL/dx = ρ (ĝ - mean(ĝ) - x̂ ∘ mean(ĝ ∘ x̂)) (means over the row);
        dL/dweight = Σ_rows g ∘ x̂, dL/dbias = Σ_rows g."""
        xhat, rstd, weight = ctx.saved_tensors
        dx, dw, db = layer_norm_backward(g, xhat, rstd, weight)
        return dx, dw, db


class BatchNormSolution(ArrayFunction):
    """Training-mode batch norm of (N, C) or (N, C, L) input: per channel c, over its m = N (or N·L)
    values, x̂ = (x - μ_c) r_c, r_c = 1/√(σ²_c + eps) (biased σ²), y = weight_c x̂ + bias_c."""

    @staticmethod
    def forward(ctx, x, weight, bias, *, eps):
        axes = (0,) + tuple(range(2, x.ndim))
        cs = (1, x.shape[1]) + (1,) * (x.ndim - 2)          # broadcasts a per-channel vector
        mu = x.mean(axis=axes, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
        r = 1 / np.sqrt(var + eps)
        xhat = (x - mu) * r
        ctx.save_for_backward(xhat, r, weight)
        ctx.axes, ctx.cs = axes, cs
        return xhat * weight.reshape(cs) + bias.reshape(cs)

    @staticmethod
    def backward(ctx, g):
        """Sums run over the m values of one channel; d = dL/dx̂ = weight g.
            ∂μ/∂x_j = 1/m,  ∂σ²/∂x_j = (2/m)(x_j - μ),  ∂r/∂x_j = -(r³/m)(x_j - μ),
            ∂x̂_i/∂x_j = (r/m)(m δ_ij - 1 - x̂_i x̂_j),
        hence dL/dx = (r/m)(m d - Σ d - x̂ Σ d x̂); dL/dweight = Σ g x̂, dL/dbias = Σ g."""
        xhat, r, weight = ctx.saved_tensors
        axes, cs = ctx.axes, ctx.cs
        m = xhat.size // xhat.shape[1]
        d = g * weight.reshape(cs)
        dx = (r / m) * (m * d - d.sum(axis=axes, keepdims=True)
                        - xhat * (d * xhat).sum(axis=axes, keepdims=True))
        return dx, (g * xhat).sum(axis=axes), g.sum(axis=axes)


# =========================================================================== activation and attention

def gelu_forward(x):
    """GELU's tanh approximation: 0.5 x (1 + tanh u), u = √(2/π) (x + 0.044715 x³); also returns tanh u."""
    t = np.tanh(GELU_C * (x + GELU_A * x ** 3))
    return 0.5 * x * (1 + t), t


def gelu_derivative(x, t):
    """dGELU/dx of :func:`gelu_forward` (t = tanh u); derivation in :class:`GeluSolution`'s backward."""
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_C * (1 + 3 * GELU_A * x * x)


class GeluSolution(ArrayFunction):
    """y = 0.5 x (1 + tanh u),  u = √(2/π) (x + 0.044715 x³)  (GELU, approximate='tanh')."""

    @staticmethod
    def forward(ctx, x):
        y, t = gelu_forward(x)
        ctx.save_for_backward(x, t)
        return y

    @staticmethod
    def backward(ctx, g):
        """Product rule on 0.5 x · (1 + tanh u), with tanh' = 1 - tanh² and
        du/dx = √(2/π) (1 + 3·0.044715 x²):
            dy/dx = 0.5 (1 + t) + 0.5 x (1 - t²) √(2/π) (1 + 3·0.044715 x²),  t = tanh u;
        dL/dx = g dy/dx."""
        x, t = ctx.saved_tensors
        return g * gelu_derivative(x, t)


def attention_forward(q, k, v):
    """(out, P) of causal attention: S = q kᵀ / √E, keys after the query masked (-inf),
    P = softmax(S) along the keys, out = P v."""
    t, e = q.shape[-2], q.shape[-1]
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * (1 / math.sqrt(e))   # a Python float keeps float32
    s = np.where(np.tri(t, dtype=bool), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return np.matmul(p, v), p


def attention_backward(g, q, k, v, p):
    """(dq, dk, dv) of :func:`attention_forward`; derivation in :class:`AttentionSolution`'s backward."""
    scale = 1 / math.sqrt(q.shape[-1])
    dv = np.matmul(np.swapaxes(p, -1, -2), g)
    dp = np.matmul(g, np.swapaxes(v, -1, -2))
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    return scale * np.matmul(ds, k), scale * np.matmul(np.swapaxes(ds, -1, -2), q), dv


class AttentionSolution(ArrayFunction):
    """out = softmax(Q Kᵀ / √E + causal mask) V for q, k, v of shape (..., T, E): query i sees
    keys j <= i (the mask puts -inf above the diagonal)."""

    @staticmethod
    def forward(ctx, q, k, v):
        out, p = attention_forward(q, k, v)
        ctx.save_for_backward(q, k, v, p)
        return out

    @staticmethod
    def backward(ctx, g):
        """With s = 1/√E, S = s Q Kᵀ (+ mask), P = softmax_rows(S), O = P V and G = dL/dO:
            dV = Pᵀ G,   dP = G Vᵀ,
            dS = P ∘ (dP - rowsum(dP ∘ P))        (softmax's backward, row by row),
            dQ = s dS K,   dK = s dSᵀ Q.
        Masked entries have P = 0, hence dS = 0: nothing flows to a future key."""
        q, k, v, p = ctx.saved_tensors
        return attention_backward(g, q, k, v, p)


# =========================================================================== a whole GPT block

def _heads(a, n_head):
    """(B, T, C) -> (B, H, T, C/H)."""
    b, t, c = a.shape
    return a.reshape(b, t, n_head, c // n_head).transpose(0, 2, 1, 3)


def _merge(a):
    """(B, H, T, hd) -> (B, T, H·hd): the inverse of :func:`_heads`."""
    b, h, t, hd = a.shape
    return a.transpose(0, 2, 1, 3).reshape(b, t, h * hd)


def _rows(a):
    return a.reshape(-1, a.shape[-1])


class GPTBlockSolution(ArrayFunction):
    """One pre-norm GPT block (nanoGPT's, without biases in the linear layers and without dropout):
        h = x + (causal multi-head attention of LN1(x)) W_proj,   y = h + GELU(LN2(h) W_fc) W_out,
    with [q k v] = LN1(x) W_attn split into n_head heads. x is (B, T, C); W_attn (C, 3C),
    W_proj (C, C), W_fc (C, 4C), W_out (4C, C); LayerNorms over C with eps 1e-5."""

    @staticmethod
    def forward(ctx, x, ln1_w, ln1_b, w_attn, w_proj, ln2_w, ln2_b, w_fc, w_out, *, n_head):
        a1, xh1, r1 = layer_norm_forward(x, ln1_w, ln1_b, 1e-5)
        q, k, v = (_heads(part, n_head) for part in np.split(a1 @ w_attn, 3, axis=-1))
        o, p = attention_forward(q, k, v)
        o = _merge(o)
        h = x + o @ w_proj
        a2, xh2, r2 = layer_norm_forward(h, ln2_w, ln2_b, 1e-5)
        f = a2 @ w_fc
        act, t = gelu_forward(f)
        ctx.save_for_backward(a1, xh1, r1, q, k, v, p, o, a2, xh2, r2, f, t, act,
                              ln1_w, w_attn, w_proj, ln2_w, w_fc, w_out)
        ctx.n_head = n_head
        return h + act @ w_out

    @staticmethod
    def backward(ctx, g):
        """Backward runs the forward's lines in reverse, each one a rung of the ladder:
            y = h + act W_out:       dh = g (the residual) + ...,  dW_out = Σ actᵀ g,  dact = g W_outᵀ
            act = GELU(f):           df = dact ∘ GELU'(f)
            f = a2 W_fc:             dW_fc = Σ a2ᵀ df,   da2 = df W_fcᵀ
            a2 = LN2(h):             dh += LayerNorm backward of da2  (and dln2_w, dln2_b)
            h = x + o W_proj:        dx = dh (the residual) + ...,  dW_proj = Σ oᵀ dh,  do = dh W_projᵀ
            o = attention(q, k, v):  dq, dk, dv per head (Attention's backward)
            [q k v] = a1 W_attn:     dW_attn = Σ a1ᵀ [dq dk dv],   da1 = [dq dk dv] W_attnᵀ
            a1 = LN1(x):             dx += LayerNorm backward of da1  (and dln1_w, dln1_b).
        Σ runs over all B·T positions (the weights are shared by all of them)."""
        (a1, xh1, r1, q, k, v, p, o, a2, xh2, r2, f, t, act,
         ln1_w, w_attn, w_proj, ln2_w, w_fc, w_out) = ctx.saved_tensors
        d_w_out = _rows(act).T @ _rows(g)
        df = (g @ w_out.T) * gelu_derivative(f, t)
        d_w_fc = _rows(a2).T @ _rows(df)
        dh_ln, d_ln2_w, d_ln2_b = layer_norm_backward(df @ w_fc.T, xh2, r2, ln2_w)
        dh = g + dh_ln
        d_w_proj = _rows(o).T @ _rows(dh)
        do = _heads(dh @ w_proj.T, ctx.n_head)
        dqkv = np.concatenate([_merge(d) for d in attention_backward(do, q, k, v, p)], axis=-1)
        d_w_attn = _rows(a1).T @ _rows(dqkv)
        dx_ln, d_ln1_w, d_ln1_b = layer_norm_backward(dqkv @ w_attn.T, xh1, r1, ln1_w)
        return (dh + dx_ln, d_ln1_w, d_ln1_b, d_w_attn, d_w_proj, d_ln2_w, d_ln2_b, d_w_fc, d_w_out)
