"""Matrix multiplication with exactly torch.matmul's shape rules.

* 1-D @ 1-D is the dot product (a 0-d result);
* 2-D @ 2-D is the matrix product;
* a 1-D left operand gets a 1 prepended to its shape (a row vector) and a 1-D
  right operand a 1 appended (a column vector); that axis is removed afterwards;
* all dimensions but the last two are batch dimensions and broadcast.
"""
from __future__ import annotations

import numpy as np

from .. import buffers
from ..core.function import ArrayFunction
from ..autograd.node_names import named


def _check_matmul_shapes(a_shape, b_shape):
    if len(a_shape) == 0 or len(b_shape) == 0:
        raise ValueError(f"matmul: both arguments need to be at least 1-D, got shapes {a_shape} and {b_shape}")
    k_a = a_shape[-1]
    k_b = b_shape[0] if len(b_shape) == 1 else b_shape[-2]
    if k_a != k_b:
        raise ValueError(f"matmul: shapes {a_shape} and {b_shape} cannot be multiplied "
                         f"(inner dimensions {k_a} != {k_b})")
    if (len(a_shape) > 2 or len(b_shape) > 2) and a_shape[:-2] != b_shape[:-2]:
        try:
            np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
        except ValueError:
            raise ValueError(f"matmul: batch dimensions of shapes {a_shape} and {b_shape} "
                             f"are not broadcastable ({a_shape[:-2]} vs {b_shape[:-2]})") from None


def _check_matmul_dtypes(a, b):
    """torch's matmul does not promote: both operands must have one dtype, and bool is refused."""
    if a.dtype != b.dtype:
        raise RuntimeError(f"matmul: expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype} != {b.dtype}")
    # torch refuses bool in the kernel, which empty inputs skip, except its dot (1-D @ 1-D)
    if a.dtype == np.bool_ and ((a.size and b.size) or (a.ndim == 1 and b.ndim == 1)):
        raise RuntimeError("matmul: not implemented for 'Bool' (cast the operands to an integer "
                           "or floating dtype)")


class MatMul(ArrayFunction):
    """Y = A @ B.

    For matrices, Y_ij = Σ_k A_ik B_kj, so dY_ij/dA_ik = B_kj and
    dY_ij/dB_kj = A_ik, giving
        dL/dA = G @ Bᵀ,    dL/dB = Aᵀ @ G.
    Vectors are first promoted to matrices (a → a[None, :], b → b[:, None]) and
    G gets the matching size-1 axis; the promoted axis is dropped again from
    the gradient. Batch dimensions that were broadcast are summed by the
    engine — except the common "batched activations @ one weight matrix" case,
    where Aᵀ @ G is computed as a single 2-D product over the flattened batch
    rather than a batch of products that would then be summed.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        _check_matmul_dtypes(a, b)
        _check_matmul_shapes(a.shape, b.shape)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              b if ctx.needs_input_grad[0] else None)
        ctx.a_ndim, ctx.b_ndim = a.ndim, b.ndim
        return np.matmul(a, buffers.blas_operand(b, a.shape[-2] if a.ndim > 1 else 1))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        a_vec, b_vec = ctx.a_ndim == 1, ctx.b_ndim == 1
        if b_vec:  # first, so that a 0-d g (vector @ vector) becomes (1,) and then (1, 1)
            g = np.expand_dims(g, -1)
        if a_vec:
            g = np.expand_dims(g, -2)
        ga = gb = None
        if na:
            b2 = b[:, None] if b_vec else b
            ga = np.matmul(g, buffers.blas_operand(np.swapaxes(b2, -1, -2), g.shape[-2] if g.ndim > 1 else 1))
            if a_vec:
                ga = ga[..., 0, :]
        if nb:
            a2 = a[None, :] if a_vec else a
            if ctx.b_ndim <= 2 and a2.ndim > 2:
                # Σ over the batch of a_iᵀ g_i == (flattened a)ᵀ @ (flattened g); the row count is
                # spelled out: reshape(-1, 0) of an empty array is ambiguous (k = 0) and NumPy refuses it
                k, m, rows = a2.shape[-1], g.shape[-1], int(np.prod(a2.shape[:-1]))
                gb = a2.reshape(rows, k).T @ g.reshape(rows, m)
            else:
                gb = np.matmul(np.swapaxes(a2, -1, -2), g)
            if b_vec:
                gb = gb[..., 0]
        return ga, gb


# ============================================================================ the matmul family
# torch's fixed-rank spellings of a product. Each checks its ranks as torch does and is then
# ``a @ b`` (or a sum of such products): the gradient is MatMul's above, nothing new to derive.

def _ranks(op: str, want: tuple, *xs) -> None:
    for i, (x, r) in enumerate(zip(xs, want)):
        if x.ndim != r:
            raise ValueError(f"{op}: argument {i} must be {r}-D, got a {x.ndim}-D tensor of shape {tuple(x.shape)}")


def mm(input, mat2):
    """(n, k) @ (k, m): ``torch.mm``."""
    _ranks("mm", (2, 2), input, mat2)
    return input @ mat2


def bmm(input, mat2):
    """(b, n, k) @ (b, k, m), equal batch sizes (no broadcasting): ``torch.bmm``."""
    _ranks("bmm", (3, 3), input, mat2)
    if input.shape[0] != mat2.shape[0]:
        raise ValueError(f"bmm: batch sizes differ: {tuple(input.shape)} and {tuple(mat2.shape)}")
    return named(input @ mat2, "BmmBackward0")


def mv(input, vec):
    """(n, k) @ (k,): ``torch.mv``."""
    _ranks("mv", (2, 1), input, vec)
    return input @ vec


def dot(input, other):
    """Σ_i a_i b_i of two 1-D tensors of one dtype and length: ``torch.dot``."""
    _ranks("dot", (1, 1), input, other)
    if input._data.dtype != other._data.dtype:
        raise TypeError(f"dot: expected both vectors to have the same dtype, got {input.dtype} and {other.dtype}")
    return input @ other


def inner(input, other):
    """Σ over the last dimension of both (``torch.inner``): a @ bᵀ for 1-D and 2-D operands."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    return input @ (other if other.ndim == 1 else other.transpose(-2, -1))


def outer(input, vec2):
    """y_ij = a_i b_j of two 1-D tensors (``torch.outer``, alias ``ger``)."""
    _ranks("outer", (1, 1), input, vec2)
    return input.unsqueeze(1) * vec2.unsqueeze(0)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """β·input + α·(mat1 @ mat2) (``torch.addmm``; ``input`` broadcasts)."""
    return named(_scaled(input, beta) + _scaled(mm(mat1, mat2), alpha), "AddmmBackward0")


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """β·input + α·(mat @ vec) (``torch.addmv``)."""
    return _scaled(input, beta) + _scaled(mv(mat, vec), alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """β·input + α·(batch1 @ batch2) batch by batch (``torch.baddbmm``)."""
    return _scaled(input, beta) + _scaled(bmm(batch1, batch2), alpha)


def _scaled(x, c):
    """c·x; c = 0 ignores x (its NaN and inf are not propagated, as torch's beta=0): a ``where``
    that selects none of x, so x's gradient is zeros, as torch's."""
    from ..tensor import Tensor, where
    if isinstance(c, (int, float)) and not isinstance(c, bool) and c == 0 and isinstance(x, Tensor):
        return where(np.zeros(x.shape, dtype=bool), x, np.zeros((), x._data.dtype))
    return x if c == 1 else x * c


TENSOR_METHODS = {"mm": mm, "bmm": bmm, "mv": mv, "dot": dot, "inner": inner, "outer": outer, "ger": outer,
                  "addmm": addmm, "addmv": addmv, "baddbmm": baddbmm}
FUNCTIONS = dict(TENSOR_METHODS)
# the methods also take torch's deprecated scalar-first forms, M.addmm(beta[, alpha], mat1, mat2), with its warning
from .compat import accepts_deprecated  # noqa: E402
TENSOR_METHODS.update({name: accepts_deprecated(name, TENSOR_METHODS[name]) for name in ("addmm", "addmv", "baddbmm")})
