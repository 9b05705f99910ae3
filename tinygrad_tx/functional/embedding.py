"""Embedding lookup: ``embedding`` (the fused ``EmbeddingFn``) and ``embedding_composite``.

An embedding lookup is a matrix product in disguise: a one-hot matrix times the table, so its
backward is the transposed one-hot matrix times the output gradient (a scatter-add of the
gradient rows into the table rows they came from). The derivation is the docstring of the
closed form, ``closed_form.EmbeddingClosedForm``; ``EmbeddingFn``'s gives its fast backward.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core.function import ArrayFunction
from .closed_form import EmbeddingClosedForm
from ..ops.indexing import _one_hot_transposed
from ..ops.movement import IndexOutOfRange
from ..tensor import Tensor, where
from ._util import as_tensor, check_float, describe_values, int_array


class EmbeddingFn(ArrayFunction):
    """y[..., :] = W[ids[...], :], a row lookup, with a fast scatter-add backward.
    Derivation: ``EmbeddingClosedForm`` (functional/closed_form.py): dL/dW = Mᵀ G.

    The closed form forms the dense (N, V) one-hot M. We build Mᵀ directly as a
    (V, N) sparse CSC matrix (column n holds a single 1 in row ids_n, so its index
    arrays are ids and 0..N with no sorting) and multiply, which SciPy does in one compiled pass. For a small
    Mᵀ (V·N up to 2^15 entries) building the sparse matrix costs more than the
    product itself, and the dense one-hot Mᵀ @ G (one BLAS call) is used.
    Measured on 2 CPU cores, float32 (N ids, V rows, D columns):

        N, V, D              np.add.at   sort+reduceat   bincount/col   one-hot @ G   CSC @ G
        64, 27, 32            0.044 ms      0.051 ms           -          0.012 ms    0.053 ms
        512, 27, 64            1.5 ms        0.2 ms         0.3 ms         1.7 ms      0.12 ms
        4096, 65, 128         19.5 ms        5-7 ms         5.1 ms         7.5 ms      0.30 ms
        4096, 1000, 256       29.3 ms       13-15 ms       15.9 ms        59.9 ms      3.1 ms
        16384, 50257, 768      293 ms        295 ms            -             -          34 ms

    The switch between the dense and the sparse Mᵀ is ``_one_hot_transposed``.
    Saved: the ids. Gradients of gradients (``create_graph=True``) go through
    ``EmbeddingClosedForm``; for it the forward also keeps the table (no extra memory when it is
    a parameter).
    """

    twice_differentiable_via = EmbeddingClosedForm   # gradients of gradients go through it

    @staticmethod
    def closed_form_call(ctx, weight):
        ids, _ = ctx.saved_tensors
        return (weight,), {"ids": ids, "padding_idx": ctx.padding_idx}

    @staticmethod
    def forward(ctx, weight, *, ids, padding_idx):
        ctx.save_for_backward(ids, weight if ctx.needs_input_grad[0] else None)   # weight: for closed_form_call
        ctx.num_embeddings, ctx.padding_idx = weight.shape[0], padding_idx
        return np.take(weight, ids, axis=0)

    @staticmethod
    def backward(ctx, g):
        ids, _ = ctx.saved_tensors
        n, dim, v = ids.size, g.shape[-1], ctx.num_embeddings
        dw = _one_hot_transposed(ids.reshape(-1), v, g.dtype) @ g.reshape(n, dim)
        if ctx.padding_idx is not None:
            dw[ctx.padding_idx] = 0
        return dw


def _check_embedding(input, weight, padding_idx, op):
    ids = int_array(input, op, "input")
    w = as_tensor(weight, op, "weight")
    check_float(op, weight=w)
    if w.ndim != 2:
        raise ValueError(f"{op}: weight must be a 2-D table (num_embeddings, embedding_dim), got shape {tuple(w.shape)}")
    v = w.shape[0]
    bad = (ids < 0) | (ids >= v)
    if bad.any():
        raise IndexOutOfRange(f"{op}: token ids {describe_values(ids[bad])} are out of range: "
                              f"expected 0 <= id < num_embeddings={v}")
    if padding_idx is not None:
        if not isinstance(padding_idx, numbers.Integral) or not -v <= padding_idx < v:
            raise ValueError(f"{op}: padding_idx must be an int in [-{v}, {v}), got {padding_idx!r}")
        padding_idx = int(padding_idx) % v
    return ids, w, padding_idx


def _unsupported_embedding_options(max_norm, scale_grad_by_freq, sparse, op):
    if max_norm is not None:
        raise NotImplementedError(f"{op}: max_norm={max_norm!r} (renormalising the looked-up rows of "
                                  f"the table in place) is not supported; leave max_norm=None")
    if scale_grad_by_freq:
        raise NotImplementedError(f"{op}: scale_grad_by_freq=True is not supported")
    if sparse:
        raise NotImplementedError(f"{op}: sparse=True is not supported (gradients are dense arrays)")


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Look up rows of ``weight`` (num_embeddings, embedding_dim) for the integer ids in ``input``
    (any shape); the result has shape ``input.shape + (embedding_dim,)``
    (``torch.nn.functional.embedding``). Ids outside [0, num_embeddings) raise an
    ``IndexOutOfRange`` (a ValueError and an IndexError) naming them. ``max_norm``,
    ``scale_grad_by_freq`` and ``sparse`` are torch's keywords; only their defaults are
    supported (anything else raises NotImplementedError)."""
    _unsupported_embedding_options(max_norm, scale_grad_by_freq, sparse, "embedding")
    ids, w, padding_idx = _check_embedding(input, weight, padding_idx, "embedding")
    return EmbeddingFn.apply(w, ids=ids, padding_idx=padding_idx)


def embedding_composite(input, weight, padding_idx=None) -> Tensor:
    """Embedding from primitives: integer-array indexing ``weight[ids]``, whose backward is a
    scatter-add (np.add.at). Padding positions take the rows from a detached copy of the
    table, so they contribute no gradient."""
    ids, w, padding_idx = _check_embedding(input, weight, padding_idx, "embedding_composite")
    rows = w[ids]
    if padding_idx is None:
        return rows
    return where((ids != padding_idx)[..., None], rows, w.detach()[ids])
