"""The names torch gives graph nodes, for ``grad_fn`` (``<SelectBackward0 object at 0x...>``,
``grad_fn=<NllLossBackward0>`` in a tensor's repr).

A node is named after its Function (``Mul`` -> ``MulBackward0``, :func:`function.op_name`) unless
torch calls the same computation something else. torch names the ATen op that ran, so the name
can depend on how the op was called:

- by the node alone (:data:`RENAMED`, :func:`_by_node`): ``Cast`` is ``ToCopyBackward0``,
  ``CrossEntropy`` ``NllLossBackward0``, ``x[0]`` ``SelectBackward0`` but ``x[1:]``
  ``SliceBackward0`` and ``x[[0, 2]]`` ``IndexBackward0``; ``a @ b`` ``MmBackward0`` for two
  matrices, ``MvBackward0``, ``DotBackward0``, ``UnsafeViewBackward0`` for batches;
  ``F.linear`` ``AddmmBackward0`` on a 2-d input with a bias, ``MmBackward0`` without;
- by the method called, which sets the name on the node it made (:func:`named`): ``view``,
  ``reshape``, ``unsqueeze``, ``squeeze``, ``t``, ``transpose`` are one Reshape / Permute
  Function here, and ``sum(dim)`` is ``SumBackward1`` where ``sum()`` is ``SumBackward0``.

Where the engine composes an op torch runs as one (``F.mse_loss`` is squared errors, then their
mean), the last node carries torch's name for the whole (``MseLossBackward0``); its
``next_functions`` lead into the engine's own parts.
"""
from __future__ import annotations

import numbers

from ..core import seam as _seam

# Function class name (without a trailing ``Fn``) -> torch's node name
RENAMED = {
    "Cast": "ToCopyBackward0",
    "CrossEntropy": "NllLossBackward0",
    "NLLLoss": "NllLossBackward0",
    "LogSumExp": "LogsumexpBackward0",
    "CumSum": "CumsumBackward0",
    "CumProd": "CumprodBackward0",
    "Log1p": "Log1PBackward0",
    "Expm1": "Expm1Backward0",
    "Conv": "ConvolutionBackward0",
    "ConstantPad": "ConstantPadNdBackward0",
    "LayerNorm": "NativeLayerNormBackward0",
    "BatchNorm": "NativeBatchNormBackward0",
    "VectorNorm": "LinalgVectorNormBackward0",
    "Square": "PowBackward0",
    "Clamp": "ClampBackward1",
    "MedianAll": "MedianBackward0",
    "Reshape": "ViewBackward0",
    "MaxAll": "MaxBackward1",
    "Linear": "AddmmBackward0",
    "MatMul": "MmBackward0",
    "GetItem": "SelectBackward0",
    "Triangle": "TrilBackward0",
    "CumExtreme": "CummaxBackward0",
    "MaxPool": "MaxPool2DWithIndicesBackward0",
    "AvgPool": "AvgPool2DBackward0",
    "AbsoluteError": "AbsBackward0",        # F.l1_loss(reduction='none'): torch's abs(x - y)
}


def _shape(node):
    """The shape of the value behind an input node (a Context or a leaf Tensor)."""
    if node is None:
        return None
    shape = getattr(node, "out_shape", None)
    if shape is None and hasattr(node, "_data"):
        shape = node._data.shape
    return shape


def _getitem(ctx) -> str:
    """torch applies a basic index element by element; the node is the last view it made."""
    if ctx.advanced:
        return "IndexBackward0"
    index = ctx.index if isinstance(ctx.index, tuple) else (ctx.index,)
    name = "AliasBackward0"           # x[...], x[()]
    for item in index:
        if item is None:
            name = "UnsqueezeBackward0"
        elif isinstance(item, slice):
            name = "SliceBackward0"
        elif item is not Ellipsis and isinstance(item, numbers.Integral) and not isinstance(item, bool):
            name = "SelectBackward0"
        elif item is not Ellipsis:
            return "IndexBackward0"
    return name


def _matmul(ctx) -> str:
    a, b = ctx.a_ndim, ctx.b_ndim
    return {(2, 2): "MmBackward0", (2, 1): "MvBackward0", (1, 1): "DotBackward0",
            (1, 2): "SqueezeBackward4"}.get((a, b), "UnsafeViewBackward0")


def _linear(ctx) -> str:
    x, bias = _shape(ctx.input_nodes[0]), len(ctx.input_nodes) > 2 and ctx.input_nodes[2] is not None
    if x is not None and len(x) == 2:
        return "AddmmBackward0" if bias else "MmBackward0"
    if x is not None and len(x) == 1 and not bias:
        return "SqueezeBackward4"
    return "ViewBackward0" if bias else "UnsafeViewBackward0"


def _nll(ctx) -> str:
    if getattr(ctx, "eps", 0):      # label smoothing: torch adds the smoothing term last
        return "AddBackward0"
    shape = getattr(ctx, "z_shape", None) or getattr(ctx, "x_shape", None)
    return "NllLoss2DBackward0" if shape is not None and len(shape) >= 3 else "NllLossBackward0"


_BY_NODE = {
    "GetItem": _getitem,
    "MatMul": _matmul,
    "Linear": _linear,
    "CrossEntropy": _nll,
    "NLLLoss": _nll,
    "Triangle": lambda ctx: "TriuBackward0" if ctx.keep.__name__ == "triu" else "TrilBackward0",
}


_BY_CLASS: dict = {}   # Function class -> (rule or None, its fixed name): names are asked per node


def torch_name(ctx) -> str:
    """The name torch prints for ``ctx``'s node (its ``grad_fn``)."""
    given = ctx.__dict__.get("torch_name")
    if given is not None:
        return given
    entry = _BY_CLASS.get(ctx.fn)
    if entry is None:
        from ..core.function import op_name
        op = op_name(ctx.fn)
        entry = _BY_CLASS[ctx.fn] = (_BY_NODE.get(op), RENAMED.get(op, f"{op}Backward0"))
    rule, fixed = entry
    if rule is not None:
        try:
            return rule(ctx)
        except (AttributeError, IndexError, TypeError):   # a node freed after backward
            pass
    return fixed


def named(tensor, name: str):
    """``tensor``, its node (when it has one) named ``name``: for the methods torch records
    under their own name (``view`` -> ``ViewBackward0``) where the engine runs a shared Function."""
    if tensor._ctx is not None:
        tensor._ctx.torch_name = name
    return tensor


# every name a node of a Function may carry (``tinygrad-tx explain SelectBackward0``)
_ALL_NAMES = {
    "GetItem": ("SelectBackward0", "SliceBackward0", "IndexBackward0", "UnsqueezeBackward0", "AliasBackward0"),
    "MatMul": ("MmBackward0", "MvBackward0", "DotBackward0", "BmmBackward0", "UnsafeViewBackward0"),
    "Linear": ("AddmmBackward0", "MmBackward0", "ViewBackward0", "UnsafeViewBackward0"),
    "CrossEntropy": ("NllLossBackward0", "NllLoss2DBackward0", "AddBackward0"),
    "NLLLoss": ("NllLossBackward0", "NllLoss2DBackward0"),
    "Triangle": ("TrilBackward0", "TriuBackward0"),
    "Reshape": ("ViewBackward0", "UnsafeViewBackward0", "UnsqueezeBackward0", "SqueezeBackward0",
                "SqueezeBackward1", "SqueezeBackward2"),
    "Permute": ("PermuteBackward0", "TransposeBackward0", "TBackward0"),
    "Sum": ("SumBackward0", "SumBackward1"),
    "Mean": ("MeanBackward0", "MeanBackward1"),
    "MaxAll": ("MaxBackward1", "MinBackward1"),
    "SelectAlongDim": ("MaxBackward0", "MinBackward0"),
    "CumExtreme": ("CummaxBackward0", "CumminBackward0"),
}


def torch_names(cls) -> tuple:
    """Every name torch gives a node of the Function ``cls``."""
    from ..core.function import op_name
    op = op_name(cls)
    return _ALL_NAMES.get(op, (RENAMED.get(op, f"{op}Backward0"),))


_seam.node_name = torch_name   # the core's Context.name() asks here
