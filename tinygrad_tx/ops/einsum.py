"""``einsum(equation, *operands)``: a composite of existing differentiable ops.

No new Function: each step is a view op (Diagonal for a repeated subscript, Permute, Reshape,
Expand), a Sum or a MatMul, so the gradient is the composite's — the same products and sums
torch's einsum contracts with (it too lowers to permute/reshape/bmm/sum).

How an equation is evaluated
----------------------------
1. Parse: ``'bij,bjk->bik'``; spaces are ignored; ``...`` stands for the same broadcast
   axes in every operand (right-aligned, as broadcasting). Without ``->`` the output is the
   ellipsis axes followed by the subscripts that appear exactly once, in alphabetical order
   (uppercase before lowercase, as torch).
2. Per operand: a subscript repeated within it (``'ii->i'``) takes that diagonal; a
   subscript no other operand and not the output uses is summed out at once.
3. Operands are contracted left to right, two at a time, as one batched matrix product:
   subscripts in both and still needed later are batch axes, subscripts in both and not
   needed later are contracted (the K of the product), the rest are the M and N axes.
   A size-1 axis meeting a larger one is expanded first (torch broadcasts those too).
4. Permute the result into the output's order.
"""
from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor

_ELLIPSIS_LABELS = "0123456789"[::-1]   # internal names of the ellipsis axes (never user subscripts)


def _letters(term: str, op_index, equation: str, offset: int):
    """The subscripts of one term as a list ('.' runs of three become one '...' entry)."""
    out, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "..." or "..." in out:
                what = "more than one ellipsis" if "..." in out else "'.' that is not part of any ellipsis"
                raise ValueError(f"einsum(): found {what} for operand {op_index} in {equation!r}")
            out.append("...")
            i += 3
            continue
        if not c.isascii() or not c.isalpha():
            raise ValueError(f"einsum(): invalid subscript {c!r} given at index {offset + i} in the "
                             f"equation string {equation!r}, subscripts must be in [a-zA-Z]")
        out.append(c)
        i += 1
    return out


def _parse(equation: str, operands):
    """Per operand its list of labels (ellipsis expanded into internal labels), and the output's."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): equation must be a string, got {type(equation).__name__}")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if "->" in rhs:
        raise ValueError(f"einsum(): more than one '->' in the equation {equation!r}")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        which = "fewer" if len(operands) < len(terms) else "more"
        raise ValueError(f"einsum(): {which} operands were provided ({len(operands)}) than specified in "
                         f"the equation {equation!r} ({len(terms)})")
    inputs, n_ellipsis, offset = [], 0, 0
    for k, (term, x) in enumerate(zip(terms, operands)):
        labels = _letters(term, k, equation, offset)
        offset += len(term) + 1
        if "..." in labels:
            n = x.ndim - (len(labels) - 1)
            if n < 0:
                raise ValueError(f"einsum(): the number of subscripts in the equation ({len(labels) - 1}) is more "
                                 f"than the number of dimensions ({x.ndim}) for operand {k}")
            if n > len(_ELLIPSIS_LABELS):
                raise ValueError(f"einsum(): at most {len(_ELLIPSIS_LABELS)} ellipsis dimensions are supported")
            n_ellipsis = max(n_ellipsis, n)
            at = labels.index("...")
            labels = labels[:at] + list(_ELLIPSIS_LABELS[:n][::-1]) + labels[at + 1:]
        elif len(labels) != x.ndim:
            raise ValueError(f"einsum(): the number of subscripts in the equation ({len(labels)}) does not match "
                             f"the number of dimensions ({x.ndim}) for operand {k} and no ellipsis was given")
        inputs.append(labels)
    ellipsis = list(_ELLIPSIS_LABELS[:n_ellipsis][::-1])
    if arrow:
        out = _letters(rhs, "output", equation, len(lhs) + 2)
        if "..." in out:
            at = out.index("...")
            out = out[:at] + ellipsis + out[at + 1:]
        for lab in out:
            if out.count(lab) > 1:
                raise ValueError(f"einsum(): output subscript {lab} appears more than once in the output")
            if not any(lab in labels for labels in inputs):
                raise ValueError(f"einsum(): output subscript {lab} does not appear in the equation for "
                                 "any input operand")
    else:
        counts = {}
        for labels in inputs:
            for lab in labels:
                counts[lab] = counts.get(lab, 0) + 1
        out = ellipsis + sorted(lab for lab, c in counts.items() if c == 1 and lab not in ellipsis)
    return inputs, out


def _take_diagonals(x: Tensor, labels: list, k: int):
    """Collapse each subscript repeated within one operand onto its diagonal."""
    while len(set(labels)) != len(labels):
        lab = next(lab for lab in labels if labels.count(lab) > 1)
        i = labels.index(lab)
        j = labels.index(lab, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ValueError(f"einsum(): subscript {lab} is repeated for operand {k} but the sizes don't "
                             f"match, {x.shape[j]} != {x.shape[i]}")
        x = x.diagonal(0, i, j)             # the diagonal becomes the last axis
        labels = [m for n, m in enumerate(labels) if n not in (i, j)] + [lab]
    return x, labels


def _sum_out(x: Tensor, labels: list, keep):
    """Sum over the axes whose label is not in ``keep``."""
    axes = tuple(i for i, lab in enumerate(labels) if lab not in keep)
    if not axes:
        return x, labels
    return x.sum(dim=axes), [lab for lab in labels if lab in keep]


def _contract(a: Tensor, la: list, b: Tensor, lb: list, keep):
    """a (labels la) times b (labels lb), summing the shared labels not in ``keep``: one
    batched matrix product (batch, M, K) @ (batch, K, N)."""
    batch = [lab for lab in la if lab in lb and lab in keep]
    contracted = [lab for lab in la if lab in lb and lab not in keep]
    m_labels = [lab for lab in la if lab not in lb]
    n_labels = [lab for lab in lb if lab not in la]
    size = {}
    for x, labels in ((a, la), (b, lb)):
        for lab, n in zip(labels, x.shape):
            size[lab] = n if size.get(lab, 1) == 1 else size[lab]
    a = a.permute([la.index(lab) for lab in batch + m_labels + contracted]) if a.ndim else a
    b = b.permute([lb.index(lab) for lab in batch + contracted + n_labels]) if b.ndim else b
    a = a.expand(tuple(size[lab] for lab in batch + m_labels + contracted))
    b = b.expand(tuple(size[lab] for lab in batch + contracted + n_labels))

    def prod(labels):
        return int(np.prod([size[lab] for lab in labels], dtype=np.int64))
    nb, nm, nk, nn = prod(batch), prod(m_labels), prod(contracted), prod(n_labels)
    y = a.reshape(nb, nm, nk) @ b.reshape(nb, nk, nn)
    return y.reshape(tuple(size[lab] for lab in batch + m_labels + n_labels)), batch + m_labels + n_labels


def einsum(equation, *operands):
    """torch.einsum: ``einsum('bij,bjk->bik', a, b)``; operands may also be one list."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    for k, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): operand {k} must be a Tensor, got {type(x).__name__}")
        if x.dtype != operands[0].dtype:
            raise TypeError(f"einsum(): operands must have the same dtype, got {operands[0].dtype} "
                            f"(operand 0) and {x.dtype} (operand {k})")
    inputs, out = _parse(equation, operands)
    # check every label's sizes agree (1 broadcasts)
    seen = {}
    for k, (x, labels) in enumerate(zip(operands, inputs)):
        for lab, n in zip(labels, x.shape):
            prev = seen.get(lab)
            if prev is not None and prev != n and 1 not in (prev, n) and labels.count(lab) == 1:
                name = "ellipsis dimension" if lab in _ELLIPSIS_LABELS else f"subscript {lab}"
                raise ValueError(f"einsum(): {name} has size {n} for operand {k} which does not broadcast "
                                 f"with previously seen size {prev}")
            seen[lab] = n if prev in (None, 1) else prev
    terms = []
    for k, (x, labels) in enumerate(zip(operands, inputs)):
        x, labels = _take_diagonals(x, labels, k)
        terms.append((x, labels))
    # labels needed after operand k: by the output or by a later operand
    x, labels = terms[0]
    later = [set(out).union(*(set(lb) for _, lb in terms[k + 1:])) for k in range(len(terms))]
    x, labels = _sum_out(x, labels, later[0])
    for k in range(1, len(terms)):
        y, ly = terms[k]
        y, ly = _sum_out(y, ly, later[k] | set(labels))
        x, labels = _contract(x, labels, y, ly, later[k])
    # broadcast size-1 axes of the single operand case are already right; order the output
    if labels != out:
        x = x.permute([labels.index(lab) for lab in out]) if out else x
    return x
