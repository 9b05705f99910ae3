"""Recurrent layers: RNNCell, GRUCell, LSTMCell (one time step) and RNN, GRU, LSTM (a whole
sequence, stacked layers, optionally bidirectional), with torch's parameter names, shapes,
gate order, initialisation and return values.

Every step is a **composite** of differentiable ops that already have hand-written
backwards (``F.linear``, ``sigmoid``, ``tanh``, ``relu``, ``chunk``, ``stack``, products and
sums), so the gradient the engine computes is exactly the chain rule through the step's
equations — which is also what torch's gradient is (torch's fused CPU kernels compute the
same derivative of the same formulas). Back-propagation through time is then nothing but the
engine walking the graph that the Python loop over time steps built.

One step, with ``gi = W_ih x + b_ih`` and ``gh = W_hh h + b_hh`` (torch's layout: the gates
are stacked along the rows of ``W_ih``/``W_hh``, in the order given):

* RNN:  h' = tanh(gi + gh)   (or relu)
* GRU (gates r, z, n):
  r = σ(gi_r + gh_r),  z = σ(gi_z + gh_z),  n = tanh(gi_n + r ∘ gh_n),  h' = (1 − z) ∘ n + z ∘ h
  (note: r multiplies ``W_hn h + b_hn``, bias included — torch's, and cuDNN's, form)
* LSTM (gates i, f, g, o):
  i = σ(.), f = σ(.), g = tanh(.), o = σ(.),  c' = f ∘ c + i ∘ g,  h' = o ∘ tanh(c')

Precision: float32 inputs and parameters are cast to float64 on entry (a differentiable cast)
and the results rounded back to float32 once, so the forward values and every gradient are
accurate to about an ulp. In float32 throughout, a step's rounding errors are amplified
wherever a pre-activation nearly cancels (W_ih x + b_ih ≈ −(W_hh h + b_hh)) or a gate
saturates (1 − tanh² turns one ulp of tanh near ±1 into a large relative error); torch's
float32 kernels, with fused multiply-adds and correctly rounded tanh, then come out several
times more accurate, measured. Same precedent as the float32 losses in ``functional``.

Init (torch's): every parameter ~ U(−k, k), k = 1/√hidden_size, drawn with
:func:`tinygrad_tx.nn.init.uniform_`.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import functional as F
from ..tensor import Tensor, cat, stack, where
from . import init
from .utils import rnn as rnn_utils
from .layers import _input, _param_dtype, _size
from .module import Module
from .parameter import Parameter

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}


def _rnn_mode(nonlinearity, layer: str) -> str:
    if nonlinearity == "tanh":
        return "RNN_TANH"
    if nonlinearity == "relu":
        return "RNN_RELU"
    raise ValueError(f"{layer}: Unknown nonlinearity {nonlinearity!r}. Select from 'tanh' or 'relu'.")


def _wide(t):
    """float32 (and narrower) tensors as float64; float64 and None as they are."""
    return t if t is None or t._data.dtype == np.float64 else t.double()


def _narrow(t, dtype):
    return t if t is None or t._data.dtype == dtype else t.to(dtype)


def _check_input(module: Module, input, unbatched_ndim: int, layer: str, size_message: str) -> Tensor:
    """The input as a Tensor: unbatched_ndim or one more dims, input_size features, the
    parameters' dtype (torch's checks and messages)."""
    x = _input(input, layer)
    if x.ndim not in (unbatched_ndim, unbatched_ndim + 1):
        raise ValueError(f"{layer}: Expected input to be {unbatched_ndim}D or {unbatched_ndim + 1}D, "
                         f"got {x.ndim}D instead")
    if x.shape[-1] != module.input_size:
        raise ValueError(f"{layer}: " + size_message.format(got=x.shape[-1], want=module.input_size))
    _check_dtype(module, x, "input", layer)
    return x


def _check_dtype(module: Module, t: Tensor, what: str, layer: str) -> None:
    """As torch: the input and states must have the parameters' dtype (no silent promotion)."""
    expected = next(iter(module.parameters()))._data.dtype
    if t._data.dtype != expected:
        raise TypeError(f"{layer}: {what} must have the type {expected} (the parameters'), got type "
                        f"{t._data.dtype}")


def _step(mode: str, gi: Tensor, h: Tensor, c, w_hh, b_hh):
    """One time step given the input projection ``gi = W_ih x + b_ih``: returns h' (and c' for
    the LSTM). The equations are in the module docstring."""
    gh = F.linear(h, w_hh, b_hh)
    if mode == "RNN_TANH":
        return (gi + gh).tanh(), None
    if mode == "RNN_RELU":
        return (gi + gh).relu(), None
    if mode == "GRU":
        i_r, i_z, i_n = gi.chunk(3, -1)
        h_r, h_z, h_n = gh.chunk(3, -1)
        r = (i_r + h_r).sigmoid()
        z = (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        return (1 - z) * n + z * h, None
    i, f, g, o = (gi + gh).chunk(4, -1)
    c_new = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c_new.tanh(), c_new


def _reset_uniform(module: Module) -> None:
    """torch's ``reset_parameters`` for recurrent layers: all parameters ~ U(−k, k), k = 1/√hidden."""
    k = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0.0
    for p in module.parameters():
        init.uniform_(p, -k, k)


# ============================================================================ cells

class _CellBase(Module):
    _mode = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, dtype, layer: str):
        super().__init__()
        self.input_size = _size(input_size, "input_size", layer)
        self.hidden_size = _size(hidden_size, "hidden_size", layer)
        self.bias = bias
        dt = _param_dtype(dtype, layer)
        rows = _GATES[self._mode] * self.hidden_size
        self.weight_ih = Parameter(np.empty((rows, self.input_size), dtype=dt))
        self.weight_hh = Parameter(np.empty((rows, self.hidden_size), dtype=dt))
        if bias:
            self.bias_ih = Parameter(np.empty(rows, dtype=dt))
            self.bias_hh = Parameter(np.empty(rows, dtype=dt))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_uniform(self)

    def _check(self, input, hx, name: str):
        x = _check_input(self, input, 1, name, "input has inconsistent input_size: got {got} expected {want}")
        batched = x.ndim == 2
        if not batched:
            x = x.unsqueeze(0)
        states = []
        for i, h in enumerate(hx):
            label = f"hidden{i}" if len(hx) > 1 else "hx"
            if h is None:
                states.append(Tensor(np.zeros((x.shape[0], self.hidden_size), dtype=x.dtype)))
                continue
            h = _input(h, name)
            _check_dtype(self, h, label, name)
            if h.ndim != x.ndim - (0 if batched else 1):
                raise ValueError(f"{name}: {label} must be {x.ndim - (0 if batched else 1)}-D for "
                                 f"{'batched 2-D' if batched else 'unbatched 1-D'} input, got shape {tuple(h.shape)}")
            if not batched:
                h = h.unsqueeze(0)
            if h.shape[0] != x.shape[0]:
                raise ValueError(f"{name}: Input batch size {x.shape[0]} doesn't match {label} batch size "
                                 f"{h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise ValueError(f"{name}: {label} has inconsistent hidden_size: got {h.shape[1]}, "
                                 f"expected {self.hidden_size}")
            states.append(h)
        return x, states, batched

    def _cell(self, x, h, c=None):
        """One step in float64 (see the module docstring), results in x's dtype."""
        dt = x._data.dtype
        gi = F.linear(_wide(x), _wide(self.weight_ih), _wide(self.bias_ih))
        h_new, c_new = _step(self._mode, gi, _wide(h), _wide(c), _wide(self.weight_hh), _wide(self.bias_hh))
        return _narrow(h_new, dt), _narrow(c_new, dt)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(_CellBase):
    """Elman cell: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (``nonlinearity='relu'``: relu).

    Input (N, input_size) or unbatched (input_size,); ``hx`` the same with hidden_size
    (default zeros). Returns h'. The gradient is the composite's (see the module docstring)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 dtype=None):
        self._mode = _rnn_mode(nonlinearity, "RNNCell")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, dtype, "RNNCell")

    def forward(self, input, hx=None):
        x, (h,), batched = self._check(input, (hx,), "RNNCell")
        h_new, _ = self._cell(x, h)
        return h_new if batched else h_new.squeeze(0)


class GRUCell(_CellBase):
    """Gated recurrent unit, gates (r, z, n) stacked in that order:
    r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r ∘ (W_hn h + b_hn)), h' = (1 − z) ∘ n + z ∘ h.
    Returns h'. The gradient is the composite's (see the module docstring)."""

    _mode = "GRU"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype=None):
        super().__init__(input_size, hidden_size, bias, dtype, "GRUCell")

    def forward(self, input, hx=None):
        x, (h,), batched = self._check(input, (hx,), "GRUCell")
        h_new, _ = self._cell(x, h)
        return h_new if batched else h_new.squeeze(0)


class LSTMCell(_CellBase):
    """Long short-term memory cell, gates (i, f, g, o) stacked in that order:
    c' = σ(f) ∘ c + σ(i) ∘ tanh(g), h' = σ(o) ∘ tanh(c').

    ``hx`` is a pair (h, c) or None (zeros). Returns (h', c'). The gradient is the
    composite's (see the module docstring)."""

    _mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype=None):
        super().__init__(input_size, hidden_size, bias, dtype, "LSTMCell")

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTMCell: hx must be a pair (h, c) or None, got {type(hx).__name__}")
        x, (h, c), batched = self._check(input, (None, None) if hx is None else tuple(hx), "LSTMCell")
        h_new, c_new = self._cell(x, h, c)
        if not batched:
            return h_new.squeeze(0), c_new.squeeze(0)
        return h_new, c_new


# ============================================================================ sequence modules

class _RNNBase(Module):
    """RNN, GRU and LSTM over a whole sequence.

    Input (L, N, input_size) — (N, L, input_size) with ``batch_first=True`` — or unbatched
    (L, input_size). Layer k reads the outputs of layer k−1 (both directions concatenated);
    with ``dropout > 0`` in training mode, ``F.dropout`` is applied to every layer's output
    except the last. Returns ``output`` (L, N, D·hidden_size) — the last layer's h at each
    step — and ``h_n`` (D·num_layers, N, hidden_size) (LSTM: ``(h_n, c_n)``), D = 2 if
    bidirectional else 1, rows ordered layer by layer, forward direction first.

    Each layer projects the whole sequence at once (``gi = W_ih x + b_ih`` for all time
    steps: one matmul), then loops over time for the recurrent part.
    """

    _mode = ""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, bias: bool, batch_first: bool,
                 dropout: float, bidirectional: bool, dtype, layer: str):
        super().__init__()
        if isinstance(hidden_size, bool) or not isinstance(hidden_size, numbers.Integral):
            raise TypeError(f"{layer}: hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError(f"{layer}: hidden_size must be greater than zero, got {hidden_size}")
        if isinstance(num_layers, bool) or not isinstance(num_layers, numbers.Integral):
            raise TypeError(f"{layer}: num_layers should be of type int, got: {type(num_layers).__name__}")
        if num_layers <= 0:
            raise ValueError(f"{layer}: num_layers must be greater than zero, got {num_layers}")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1:
            raise ValueError(f"{layer}: dropout should be a number in range [0, 1] representing the "
                             f"probability of an element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", UserWarning, stacklevel=3)
        self.input_size = _size(input_size, "input_size", layer)
        self.hidden_size = int(hidden_size)
        self.num_layers = int(num_layers)
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self._layer_name = layer
        dt = _param_dtype(dtype, layer)
        rows = _GATES[self._mode] * self.hidden_size
        directions = 2 if bidirectional else 1
        for k in range(self.num_layers):
            in_k = self.input_size if k == 0 else self.hidden_size * directions
            for suffix in ["", "_reverse"][:directions]:
                setattr(self, f"weight_ih_l{k}{suffix}", Parameter(np.empty((rows, in_k), dtype=dt)))
                setattr(self, f"weight_hh_l{k}{suffix}", Parameter(np.empty((rows, self.hidden_size), dtype=dt)))
                if bias:
                    setattr(self, f"bias_ih_l{k}{suffix}", Parameter(np.empty(rows, dtype=dt)))
                    setattr(self, f"bias_hh_l{k}{suffix}", Parameter(np.empty(rows, dtype=dt)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_uniform(self)

    def flatten_parameters(self) -> None:
        """torch packs the weights into one buffer for cuDNN; there is nothing to pack here."""

    def _weights(self, k: int, suffix: str):
        """Layer k's parameters (in float64, see the module docstring)."""
        get = lambda n: _wide(getattr(self, f"{n}_l{k}{suffix}", None))  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _check_input(self, input):
        x = _check_input(self, input, 2, self._layer_name,
                         "input.size(-1) must be equal to input_size. Expected {want}, got {got}")
        batched = x.ndim == 3
        if not batched:
            x = x.unsqueeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        return x, batched

    def _check_state(self, h, batched: bool, n: int, dtype, label: str):
        """``h`` in the caller's layout -> (D·num_layers, N, hidden), or zeros when None."""
        name = self._layer_name
        expected = ((2 if self.bidirectional else 1) * self.num_layers, n, self.hidden_size)
        if h is None:
            return Tensor(np.zeros(expected, dtype=dtype))
        h = _input(h, name)
        _check_dtype(self, h, label, name)
        if not batched:
            if h.ndim != 2:
                raise ValueError(f"{name}: For unbatched 2-D input, {label} should also be 2-D but got "
                                 f"{h.ndim}-D tensor")
            h = h.unsqueeze(1)
        elif h.ndim != 3:
            raise ValueError(f"{name}: For batched 3-D input, {label} should also be 3-D but got {h.ndim}-D tensor")
        if tuple(h.shape) != expected:
            raise ValueError(f"{name}: Expected {label} size {expected}, got {tuple(h.shape)}")
        return h

    def _run(self, x, h0, c0, mask=None):
        """The layers and directions over x (L, N, in); returns output (L, N, D·H), h_n, c_n,
        computed in float64 and returned in x's dtype. ``mask`` (L, N, 1) bool, for a packed
        input: where it is False the state is carried over unchanged (h = where(mask_t, h', h)),
        so each sequence's forward pass stops at its length and its reverse pass starts there."""
        dt = x._data.dtype
        x, h0, c0 = _wide(x), _wide(h0), _wide(c0)
        directions = 2 if self.bidirectional else 1
        steps = x.shape[0]
        h_n, c_n = [], []
        for k in range(self.num_layers):
            outs = []
            for d, suffix in enumerate(["", "_reverse"][:directions]):
                w_ih, w_hh, b_ih, b_hh = self._weights(k, suffix)
                gi = F.linear(x, w_ih, b_ih).unbind(0)     # the input projection of every step at once
                row = k * directions + d
                h = h0[row]
                c = None if c0 is None else c0[row]
                seq = [None] * steps
                for t in (range(steps - 1, -1, -1) if d == 1 else range(steps)):
                    h_new, c_new = _step(self._mode, gi[t], h, c, w_hh, b_hh)
                    if mask is not None:
                        h_new = where(mask[t], h_new, h)
                        c_new = None if c is None else where(mask[t], c_new, c)
                    h, c = h_new, c_new
                    seq[t] = h
                h_n.append(h)
                c_n.append(c)
                outs.append(stack(seq, 0))
            x = outs[0] if directions == 1 else cat(outs, -1)
            if self.dropout > 0 and self.training and k < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        c_n = _narrow(stack(c_n, 0), dt) if c0 is not None else None
        return _narrow(x, dt), _narrow(stack(h_n, 0), dt), c_n

    def _packed(self, input):
        """A PackedSequence as (padded (L, N, in) in batch order, its (L, N, 1) mask)."""
        padded, lengths = rnn_utils.pad_packed_sequence(input)
        if padded.ndim != 3:
            raise ValueError(f"{self._layer_name}: a packed input's data must be 2-D (valid steps, input_size), "
                             f"got shape {tuple(input.data.shape)}")
        x = _check_input(self, padded, 2, self._layer_name,
                         "input.size(-1) must be equal to input_size. Expected {want}, got {got}")
        mask = np.arange(x.shape[0])[:, None, None] < lengths._data[None, :, None]
        return x, Tensor(mask)

    def _forward(self, input, hx, cx=None, lstm=False):
        """forward for RNN/GRU (``lstm`` False) and LSTM: (output, h_n[, c_n]); a PackedSequence
        input gives a PackedSequence output (each sequence run over its own length)."""
        if isinstance(input, rnn_utils.PackedSequence_):
            x, mask = self._packed(input)
            batched = True
        else:
            (x, batched), mask = self._check_input(input), None
        h0 = self._check_state(hx, batched, x.shape[1], x.dtype, "hidden")
        c0 = self._check_state(cx, batched, x.shape[1], x.dtype, "cell") if lstm else None
        out, h_n, c_n = self._run(x, h0, c0, mask)
        if not batched:
            h_n, c_n = h_n.squeeze(1), (c_n.squeeze(1) if lstm else None)
        out = rnn_utils.packed_like(out, input) if mask is not None else self._output(out, batched)
        return out, h_n, c_n

    def _output(self, out, batched):
        if not batched:
            return out.squeeze(1)
        return out.transpose(0, 1) if self.batch_first else out

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(_RNNBase):
    """Multi-layer Elman RNN: h_t = tanh(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh) (or relu).
    ``forward(input, hx=None)`` returns ``(output, h_n)``; see ``_RNNBase`` for shapes."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 dtype=None):
        self._mode = _rnn_mode(nonlinearity, "RNN")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype,
                         "RNN")

    def forward(self, input, hx=None):
        out, h_n, _ = self._forward(input, hx)
        return out, h_n


class GRU(_RNNBase):
    """Multi-layer GRU (gates r, z, n; equations in the module docstring).
    ``forward(input, hx=None)`` returns ``(output, h_n)``; see ``_RNNBase`` for shapes."""

    _mode = "GRU"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, dtype=None):
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype,
                         "GRU")

    forward = RNN.forward


class LSTM(_RNNBase):
    """Multi-layer LSTM (gates i, f, g, o; equations in the module docstring).
    ``forward(input, hx=None)``, ``hx = (h_0, c_0)``, returns ``(output, (h_n, c_n))``.
    ``proj_size > 0`` (projected LSTM) is not implemented."""

    _mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 dtype=None):
        if isinstance(proj_size, bool) or not isinstance(proj_size, numbers.Integral) or proj_size < 0:
            raise ValueError(f"LSTM: proj_size should be a positive integer or zero to disable projections, "
                             f"got {proj_size!r}")
        if proj_size >= _size(hidden_size, "hidden_size", "LSTM"):
            raise ValueError(f"LSTM: proj_size has to be smaller than hidden_size, got proj_size={proj_size} "
                             f"and hidden_size={hidden_size}")
        if proj_size:
            raise NotImplementedError(f"LSTM: proj_size={proj_size!r} (projected LSTM) is not implemented; "
                                      "use proj_size=0")
        self.proj_size = 0
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype,
                         "LSTM")

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTM: hx must be a pair (h_0, c_0) or None, got {type(hx).__name__}")
        h, c = (None, None) if hx is None else hx
        out, h_n, c_n = self._forward(input, h, c, lstm=True)
        return out, (h_n, c_n)
