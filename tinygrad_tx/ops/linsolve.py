"""Square linear systems: ``linalg.det``, ``linalg.slogdet``, ``linalg.inv``, ``linalg.solve``
(and torch's ``det``, ``logdet``, ``slogdet``, ``inverse`` as functions and Tensor methods).

Each op works on the last two dimensions (``(..., n, n)``; the leading dimensions are a batch,
broadcast between A and B in ``solve``), in float32 or float64, as torch's. The forward values
come from LAPACK through NumPy (an LU factorisation with partial pivoting, as torch's); every
backward is written here, from the one identity all four share::

    d(A⁻¹) = −A⁻¹ dA A⁻¹              (differentiate A A⁻¹ = I)
    d(det A) = det A · tr(A⁻¹ dA)     (Jacobi's formula)

A backward that runs on Tensors (``create_graph=True``) calls ``np.linalg.solve`` /
``np.linalg.det`` on Tensors, which ``autograd/dispatch.py`` sends back to the ops of this file:
the gradients differentiate again.

Singular matrices behave as torch's: ``det`` is 0 and its first gradient torch's (0 where the
determinant is exactly 0; see :class:`LinalgDet`), ``slogdet`` gives sign 0 and ``-inf`` with
the infinite gradient torch's LU solve produces, ``inv`` and ``solve`` raise :class:`LinAlgError`
with torch's message. (Which nearly singular matrices come out *exactly* singular depends on the
last bit of the LU's rounding; torch's LAPACK build fuses multiply-adds where NumPy's may not, so
a matrix singular only up to rounding, e.g. ``[[3, 1], [6, 2]]``, can be exactly singular in one
and 1e-16 from it in the other.)
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core.function import ArrayFunction
from ..autograd import dispatch as _dispatch

__all__ = ["det", "slogdet", "inv", "solve", "logdet", "LinAlgError", "LinalgDet", "LinalgSlogdet",
           "LinalgInvEx", "LinalgSolveEx"]

SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
TorchSlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a matrix that is singular (a zero pivot of its LU)."""


# ============================================================================ argument checks

_TORCH_TYPE_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                     "bool": "Bool", "float16": "Half", "bfloat16": "BFloat16", "uint16": "UInt16",
                     "uint32": "UInt32", "uint64": "UInt64"}


def _type_name(dt) -> str:
    return _TORCH_TYPE_NAMES.get(np.dtype(dt).name, np.dtype(dt).name)


def _check_matrices(A, op: str, low_precision: str = "runtime", name: str = "A"):
    """torch's checks, in torch's order: a Tensor, at least 2-D, square, float32/float64."""
    from ..tensor import Tensor
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if name == "A" and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    dt = A._data.dtype
    if dt.kind not in "fc":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {_type_name(dt)}")
    if dt.kind == "c":
        raise NotImplementedError(f"{op}: complex matrices are not supported by tinygrad_tx (got {dt})")
    if dt.itemsize < 4:
        if low_precision == "lu":   # det goes straight to the LU kernel, which has no half version
            raise NotImplementedError(f'"lu_cpu" not implemented for \'{_type_name(dt)}\'')
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {_type_name(dt)}")


def _no_out(out, op):
    if out is not None:
        raise TypeError(f"{op}(): out= is not supported (the result is a new tensor)")


# ============================================================================ LU, for singular inputs
# NumPy's LAPACK calls say only "singular matrix". torch's messages name the batch element and
# the zero pivot, and torch's gradient of slogdet at a singular matrix is what its LU solve gives
# (infinities): both come from this LU, the textbook one LAPACK's getrf computes (partial
# pivoting on the first largest |a|, multipliers scaled by the pivot's reciprocal).

def _lu(a: np.ndarray):
    """``(lu, swaps, info)`` of every matrix of the batch ``a`` (..., n, n): row k was swapped
    with row ``swaps[..., k]`` at step k, ``info`` is the 1-based index of the first zero pivot
    (0: none), as LAPACK's."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    lu = np.array(a, dtype=a.dtype, copy=True).reshape(-1, n, n)
    m = np.arange(lu.shape[0])
    swaps = np.zeros((lu.shape[0], n), dtype=np.int64)
    info = np.zeros(lu.shape[0], dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k in range(n):
            p = k + np.argmax(np.abs(lu[:, k:, k]), axis=1)
            swaps[:, k] = p
            row_k = lu[m, k].copy()
            lu[m, k] = lu[m, p]
            lu[m, p] = row_k
            pivot = lu[:, k, k]
            zero = pivot == 0
            info[(info == 0) & zero] = k + 1
            scale = np.where(zero, 1, 1 / np.where(zero, 1, pivot)).astype(lu.dtype)
            lu[:, k + 1:, k] *= scale[:, None]
            lu[:, k + 1:, k + 1:] -= lu[:, k + 1:, k, None] * lu[:, k, None, k + 1:]
    return lu.reshape(a.shape), swaps.reshape(batch + (n,)), info.reshape(batch)


def _lu_solve(lu, swaps, b):
    """X with (P L U) X = B, from :func:`_lu`: the row swaps, then forward substitution with the
    unit lower triangle and back substitution with the upper one, every step carried out (a
    zero pivot gives the infinities and NaNs IEEE arithmetic gives, as LAPACK's getrs)."""
    n = lu.shape[-1]
    x = np.array(np.broadcast_to(b, lu.shape[:-2] + b.shape[-2:]), copy=True)
    flat_x = x.reshape(-1, n, x.shape[-1])
    flat_lu = lu.reshape(-1, n, n)
    flat_sw = swaps.reshape(-1, n)
    m = np.arange(flat_x.shape[0])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k in range(n):
            p = flat_sw[:, k]
            row_k = flat_x[m, k].copy()
            flat_x[m, k] = flat_x[m, p]
            flat_x[m, p] = row_k
        for k in range(n):
            flat_x[:, k + 1:] -= flat_lu[:, k + 1:, k, None] * flat_x[:, k, None, :]
        for k in range(n - 1, -1, -1):
            flat_x[:, k] /= flat_lu[:, k, k, None]
            flat_x[:, :k] -= flat_lu[:, :k, k, None] * flat_x[:, k, None, :]
    return flat_x.reshape(x.shape)


def _singular_error(a: np.ndarray, op: str) -> LinAlgError:
    """torch's error for the first singular matrix of the batch ``a`` (a zero pivot of A's LU)."""
    _, _, info = _lu(a)
    flat = info.reshape(-1)
    bad = np.flatnonzero(flat)
    where = f"(Batch element {int(bad[0]) if bad.size else 0}): " if a.ndim > 2 else ""
    if op == "linalg.inv":
        k = int(flat[bad[0]]) if bad.size else a.shape[-1]
        return LinAlgError(f"linalg.inv: {where}The diagonal element {k} is zero, the inversion could not be "
                           "completed because the input matrix is singular.")
    return LinAlgError(f"torch.linalg.solve: {where}The solver failed because the input matrix is singular.")


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _diag_embed(v, n):
    """v[..., None, None] · I: a batch of scaled identities (Tensor or array v)."""
    return np.expand_dims(v, (-2, -1)) * np.eye(n, dtype=np.result_type(v))


def _cofactors(A):
    """The cofactor matrix C_ij = (−1)^{i+j} det(A without row i and column j), for n >= 2: the
    gradient of det (∂ det A / ∂A_ij = C_ij, expanding det along row i), which, unlike det·A⁻ᵀ,
    exists for singular A. Built from determinants of the minors (:class:`_MinorDet`), it
    differentiates again, at every order."""
    n = A.shape[-1]
    keep = np.array([[j for j in range(n) if j != i] for i in range(n)], dtype=np.int64)   # (n, n-1)
    minors = A[..., keep[:, None, :, None], keep[None, :, None, :]]                      # (..., n, n, n-1, n-1)
    sign = ((-1.0) ** np.add.outer(np.arange(n), np.arange(n))).astype(np.result_type(A))
    if isinstance(minors, np.ndarray):
        return _minor_det(minors) * sign
    return _MinorDet.apply(minors) * sign


def _minor_det(m):
    return np.asarray(np.linalg.det(m) if m.shape[-1] else np.ones(m.shape[:-2], m.dtype), dtype=m.dtype)


class _MinorDet(ArrayFunction):
    """det of the minors inside :func:`_cofactors`: the determinant with its exact gradient
    everywhere, g · cofactors (singular minors included, where :class:`LinalgDet`'s first gradient
    follows torch's convention of 0), so that the cofactors' own derivatives are right."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, M):
        ctx.save_for_backward(M)
        return _minor_det(M)

    @staticmethod
    def backward(ctx, g):
        (M,) = ctx.saved_tensors
        n = M.shape[-1]
        if n == 0:
            return np.zeros_like(M)
        if n == 1:
            return np.expand_dims(g, (-2, -1)) * np.ones_like(M)
        return np.expand_dims(g, (-2, -1)) * _cofactors(M)


# ============================================================================ det

class LinalgDet(ArrayFunction):
    """y = det A (torch.linalg.det).

    Jacobi's formula: d det A = det A · tr(A⁻¹ dA) = Σ_ij (det A · A⁻ᵀ)_ij dA_ij, so

        dL/dA = g · det A · A⁻ᵀ,

    computed as the solution G of Aᵀ G = (g · det A) I (no explicit inverse). det A · A⁻ᵀ is the
    cofactor matrix, which also exists where A is singular; torch's gradients there, followed here:

    * first order: where det A is exactly 0, the right-hand side is 0 and so is G (torch solves
      with the zero pivots of the LU nudged to eps: G = 0). A 1×1 matrix has gradient g (d a = da);
    * ``create_graph=True``: where |det A| < 100·eps (machine epsilon of the dtype), the cofactors
      themselves (torch: through an SVD; here through the determinants of the minors, which are
      the same numbers and differentiate again); elsewhere Aᵀ G = (g det A) I solved with
      ``np.linalg.solve``, which on Tensors is :func:`solve` (differentiable).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, A):
        # torch factors the row-major matrix as LAPACK's column-major one, i.e. Aᵀ (det Aᵀ = det A):
        # the same pivots give the same exact zeros
        y = np.linalg.det(_mT(A)) if A.shape[-1] else np.ones(A.shape[:-2], dtype=A.dtype)
        y = np.asarray(y, dtype=A.dtype)
        ctx.save_for_backward(A, y)
        return y

    @staticmethod
    def backward(ctx, g):
        A, y = ctx.saved_tensors
        n = A.shape[-1]
        if n == 0:
            return np.zeros_like(A)
        if n == 1:
            return np.expand_dims(g, (-2, -1))
        rhs = _diag_embed(g * y, n)
        if not _dispatch.active():   # first order: G = 0 where det is exactly 0
            singular = (y == 0)[..., None, None]
            G = np.linalg.solve(_mT(np.where(singular, np.eye(n, dtype=A.dtype), A)), rhs)
            return np.where(singular, np.zeros((), A.dtype), G)
        # on Tensors (create_graph): the cofactors near singular matrices, the solve elsewhere
        eps = np.finfo(A.dtype).eps
        singular = np.expand_dims(np.abs(y) < 100 * eps, (-2, -1))
        G = np.linalg.solve(_mT(np.where(singular, np.eye(n, dtype=A.dtype), A)), rhs)
        if np.any(singular):
            G = np.where(singular, np.expand_dims(g, (-2, -1)) * _cofactors(A), G)
        return G


def det(A, *, out=None):
    """torch.linalg.det: the determinant of each matrix of A (..., n, n)."""
    _check_matrices(A, "linalg.det", low_precision="lu")
    _no_out(out, "linalg.det")
    return LinalgDet.apply(A)


# ============================================================================ slogdet

class LinalgSlogdet(ArrayFunction):
    """(sign, log|det A|) (torch.linalg.slogdet): ``output`` picks which (one node each, as torch's
    two outputs of one node). The sign (±1, or 0 for a singular matrix) is piecewise constant: no
    gradient (None), as torch's.

    d log|det A| = d det A / det A = tr(A⁻¹ dA), so dL/dA = g · A⁻ᵀ: the solution G of
    Aᵀ G = g I. For a singular A (log|det A| = −inf) the LU has a zero pivot and torch's LU solve
    divides by it: the gradient is the infinities and NaNs of that solve (:func:`_lu_solve` on the
    LU of Aᵀ, as torch's). Under ``create_graph=True`` the solve is :func:`solve`, which raises on
    a singular matrix, as torch's does.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, A, output="logabsdet"):
        if A.shape[-1] == 0:
            sign, logabs = np.ones(A.shape[:-2], dtype=A.dtype), np.zeros(A.shape[:-2], dtype=A.dtype)
        else:
            sign, logabs = np.linalg.slogdet(_mT(A))
        ctx.output = output
        if output == "sign":   # torch's sign output is a node of the graph too, with no gradient
            return np.asarray(sign, dtype=A.dtype)
        logabs = np.asarray(logabs, dtype=A.dtype)
        ctx.save_for_backward(A, logabs)
        return logabs

    @staticmethod
    def backward(ctx, g):
        if ctx.output == "sign":
            return None
        A, logabs = ctx.saved_tensors
        n = A.shape[-1]
        rhs = _diag_embed(g, n)
        if _dispatch.active():
            return np.linalg.solve(_mT(A), rhs)
        singular = np.isneginf(logabs)
        if not singular.any():
            return np.linalg.solve(_mT(A), rhs)
        At = _mT(A)
        G = np.linalg.solve(np.where(singular[..., None, None], np.eye(n, dtype=A.dtype), At), rhs)
        lu, swaps, _ = _lu(np.ascontiguousarray(At))
        return np.where(singular[..., None, None], _lu_solve(lu, swaps, rhs), G)


def _slogdet_pair(A, op):
    _check_matrices(A, op)
    return LinalgSlogdet.apply(A, output="sign"), LinalgSlogdet.apply(A)


def slogdet(A, *, out=None):
    """torch.linalg.slogdet: ``(sign, logabsdet)`` with det A = sign · exp(logabsdet)."""
    _no_out(out, "linalg.slogdet")
    return SlogdetResult(*_slogdet_pair(A, "linalg.slogdet"))


def slogdet_(A):
    """torch.slogdet / Tensor.slogdet: torch.linalg.slogdet under torch's older result name."""
    return TorchSlogdetResult(*_slogdet_pair(A, "linalg.slogdet"))


def logdet(A):
    """torch.logdet: log det A for real A: log|det A| where det A > 0, NaN where det A < 0, −inf
    where det A = 0 (torch's composite ``where(sign == −1, nan, logabsdet)``; the gradient is
    slogdet's where the determinant is not negative, 0 where it is)."""
    sign, logabs = _slogdet_pair(A, "logdet")
    from ..tensor import where
    return where(sign == -1, float("nan"), logabs)


# ============================================================================ inv

class LinalgInvEx(ArrayFunction):
    """Y = A⁻¹ (torch.linalg.inv; torch's node is ``linalg_inv_ex``'s).

    Differentiating A Y = I: dA Y + A dY = 0, so dY = −A⁻¹ dA A⁻¹ = −Y dA Y, and
    ⟨G, dY⟩ = −tr(Gᵀ Y dA Y) = ⟨−Yᵀ G Yᵀ, dA⟩:

        dL/dA = −Yᵀ G Yᵀ.

    It reads only the output Y, so it differentiates again (Y's own gradient is this one).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, A):
        try:
            Y = np.linalg.inv(A)
        except np.linalg.LinAlgError:
            raise _singular_error(A, "linalg.inv") from None
        Y = np.asarray(Y, dtype=A.dtype)
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, g):
        (Y,) = ctx.saved_tensors
        Yt = _mT(Y)
        return -np.matmul(Yt, np.matmul(g, Yt))


def inv(A, *, out=None):
    """torch.linalg.inv (and torch.inverse): the inverse of each matrix of A (..., n, n)."""
    _check_matrices(A, "linalg.inv")
    _no_out(out, "linalg.inv")
    return LinalgInvEx.apply(A)


# ============================================================================ solve

class LinalgSolveEx(ArrayFunction):
    """X = A⁻¹ B, the solution of A X = B (torch.linalg.solve; torch's node is ``linalg_solve_ex``'s).
    ``vector``: B is a batch of vectors (..., n), handled as the columns (..., n, 1).

    Differentiating A X = B: dA X + A dX = dB, so dX = A⁻¹ (dB − dA X) and
    ⟨G, dX⟩ = ⟨A⁻ᵀ G, dB⟩ − ⟨A⁻ᵀ G Xᵀ, dA⟩:

        dL/dB = A⁻ᵀ G          (the solution of Aᵀ G_B = G),
        dL/dA = −G_B Xᵀ.

    The batch dimensions broadcast between A and B; the engine sums the gradients back to each
    input's shape. Both formulas read A and the output X only: on Tensors the solve is this op
    again, and the gradients differentiate again.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, A, B, vector=False):
        b = B[..., None] if vector else B
        batch = np.broadcast_shapes(A.shape[:-2], b.shape[:-2])
        try:
            X = np.linalg.solve(np.broadcast_to(A, batch + A.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:]))
        except np.linalg.LinAlgError:
            raise _singular_error(np.broadcast_to(A, batch + A.shape[-2:]), "linalg.solve") from None
        X = np.asarray(X, dtype=A.dtype)
        if vector:
            X = X[..., 0]
        ctx.vector = vector
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        if ctx.vector:
            g, X = np.expand_dims(g, -1), np.expand_dims(X, -1)
        gB = np.linalg.solve(_mT(A), g)
        gA = -np.matmul(gB, _mT(X)) if ctx.needs_input_grad[0] else None
        if ctx.vector:
            gB = np.squeeze(gB, -1)
        return gA, (gB if ctx.needs_input_grad[1] else None)


def _is_vector_rhs(A, B) -> bool:
    """torch's rule: B is a (batch of) vector(s) when it is 1-D, or when its shape is A's
    batch shape and n (``B.shape == A.shape[:-1]``)."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A, B, *, left=True, out=None):
    """torch.linalg.solve: X with A X = B (``left=False``: X A = B), A (..., n, n), B (..., n, k)
    or a vector (..., n); batch dimensions broadcast."""
    from ..tensor import Tensor
    _check_matrices(A, "linalg.solve")
    _no_out(out, "linalg.solve")
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg_solve(): argument 'B' (position 2) must be Tensor, not {type(B).__name__}")
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_torch_type(A._data.dtype)} and B of type {_torch_type(B._data.dtype)} instead")
    if B.ndim == 0:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    n = A.shape[-1]
    vector = left and _is_vector_rhs(A, B)
    if B.ndim == 1 or vector:
        shown, fits = f"{B.shape[-1]}x1", left and B.shape[-1] == n
    else:
        shown, fits = f"{B.shape[-2]}x{B.shape[-1]}", B.shape[-2 if left else -1] == n
    if not fits:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {shown})")
    _check_batches(tuple(A.shape[:-2]), tuple(B.shape[:-1] if vector else B.shape[:-2]))
    if left:
        return LinalgSolveEx.apply(A, B, vector=vector)
    # X A = B  <=>  Aᵀ Xᵀ = Bᵀ
    return LinalgSolveEx.apply(A.transpose(-2, -1), B.transpose(-2, -1)).transpose(-2, -1)


def _check_batches(a, b):
    """The batch shapes broadcast, or torch's message naming the first dimension that does not."""
    for i in range(1, min(len(a), len(b)) + 1):
        if a[-i] != b[-i] and a[-i] != 1 and b[-i] != 1:
            dim = max(len(a), len(b)) - i
            raise RuntimeError(f"linalg.solve: the batch dimensions of A {a} and B {b} do not broadcast: "
                               f"The size of tensor a ({b[-i]}) must match the size of tensor b ({a[-i]}) "
                               f"at non-singleton dimension {dim}")


def _torch_type(dt) -> str:
    return {"float32": "Float", "float64": "Double"}.get(np.dtype(dt).name, _type_name(dt))


def numpy_solve(a, b):
    """``np.linalg.solve(a, b)`` with NumPy's shape rule (b is a vector only when 1-D), for
    backwards that run on Tensors (``autograd/dispatch.py``)."""
    return LinalgSolveEx.apply(a, b, vector=b.ndim == 1)


# ============================================================================ bindings (_bind.py)

TENSOR_METHODS = {"det": det, "inverse": inv, "logdet": logdet, "slogdet": slogdet_}
FUNCTIONS = {"det": det, "inverse": inv, "logdet": logdet, "slogdet": slogdet_}
