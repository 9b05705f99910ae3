"""Matrix multiplication with exactly torch.matmul's shape rules.

* 1-D @ 1-D is the dot product (a 0-d result);
* 2-D @ 2-D is the matrix product;
* a 1-D left operand gets a 1 prepended to its shape (a row vector) and a 1-D
  right operand a 1 appended (a column vector); that axis is removed afterwards;
* all dimensions but the last two are batch dimensions and broadcast.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function


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


class MatMul(Function):
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

    @staticmethod
    def forward(ctx, a, b):
        _check_matmul_shapes(a.shape, b.shape)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              b if ctx.needs_input_grad[0] else None)
        ctx.a_ndim, ctx.b_ndim = a.ndim, b.ndim
        return np.matmul(a, b)

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
            ga = np.matmul(g, np.swapaxes(b2, -1, -2))
            if a_vec:
                ga = ga[..., 0, :]
        if nb:
            a2 = a[None, :] if a_vec else a
            if ctx.b_ndim <= 2 and a2.ndim > 2:
                # Σ over the batch of a_iᵀ g_i == (flattened a)ᵀ @ (flattened g)
                k, m = a2.shape[-1], g.shape[-1]
                gb = a2.reshape(-1, k).T @ g.reshape(-1, m)
            else:
                gb = np.matmul(np.swapaxes(a2, -1, -2), g)
            if b_vec:
                gb = gb[..., 0]
        return ga, gb
