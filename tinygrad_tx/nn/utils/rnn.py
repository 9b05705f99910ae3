"""``torch.nn.utils.rnn``: variable-length sequences for the recurrent layers.

A batch of sequences of lengths ``l_0, ..., l_{N-1}`` (≤ L) is *padded* (L, N, *) — (N, L, *)
with ``batch_first`` — or *packed*: a ``PackedSequence`` whose ``data`` holds only the valid
steps, time-major, each step's rows in order of decreasing length (``sorted_indices`` maps a
sorted column to its batch position, ``unsorted_indices`` back), and ``batch_sizes[t]`` = the
number of sequences longer than t. ``nn.RNN``/``GRU``/``LSTM`` take a PackedSequence and give one
back (``recurrent.py``: each sequence stops at its own length).

Every function here is a **composite**: packing is a gather ``data = padded[t_idx, b_idx]`` and
unpacking a gather from ``data`` with one extra row of ``padding_value`` appended (the rows of
padding read it), so the engine's indexing backward (a scatter-add of the gradient to the rows
read) is the whole derivative: dL/dpadded is dL/ddata at the valid positions and 0 at the padding,
dL/ddata is dL/dpadded at the valid positions. ``pad_sequence`` is ``F.pad`` then ``stack``.
"""
from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from ... import functional as F
from ...tensor import Tensor, cat, stack

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence", "invert_permutation"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """torch's packed batch (a named tuple ``data, batch_sizes, sorted_indices,
    unsorted_indices``); build it with :func:`pack_padded_sequence` or :func:`pack_sequence`."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            raise TypeError("PackedSequence: batch_sizes is required (build one with pack_padded_sequence)")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False

    def to(self, *args, **kwargs) -> "PackedSequence":
        """``data.to(...)``; the index tensors stay as they are."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes, self.sorted_indices,
                                                          self.unsorted_indices)

    def cpu(self) -> "PackedSequence":
        return self

    def float(self) -> "PackedSequence":
        return self.to(self.data.float().dtype)

    def double(self) -> "PackedSequence":
        return self.to(self.data.double().dtype)


def invert_permutation(permutation):
    """The inverse permutation (None for None), int64."""
    if permutation is None:
        return None
    p = np.asarray(getattr(permutation, "_data", permutation))
    out = np.empty_like(p)
    out[p] = np.arange(p.size, dtype=p.dtype)
    return Tensor(out)


def _lengths(lengths, n: int, steps: int, op: str) -> np.ndarray:
    """``lengths`` (a list, array or 1-D tensor of whole numbers) as int64, one per sequence."""
    a = np.asarray(getattr(lengths, "_data", lengths))
    if a.ndim != 1 or a.size != n:
        raise ValueError(f"{op}: lengths must have one entry per sequence (batch size {n}), got shape "
                         f"{tuple(a.shape)}: {a.tolist()}")
    if a.dtype.kind not in "iuf" or (a.dtype.kind == "f" and not np.all(a == np.floor(a))):
        raise TypeError(f"{op}: lengths must be whole numbers, got {a.tolist()}")
    a = a.astype(np.int64)
    if np.any(a <= 0):
        raise RuntimeError(f"{op}: Length of all samples has to be greater than 0, but found an element in "
                           f"'lengths' that is <= 0: lengths={a.tolist()}")
    if np.any(a > steps):
        raise ValueError(f"{op}: lengths={a.tolist()} has a length larger than the {steps} time steps of the input")
    return a


def _layout(lengths: np.ndarray, sorted_indices: np.ndarray):
    """(t_idx, b_idx, batch_sizes): the padded positions of the packed rows, in packed order —
    time-major, each step's columns in sorted order; ``b_idx`` in the caller's batch order."""
    steps = int(lengths.max())
    sorted_lengths = lengths[sorted_indices]
    batch_sizes = np.array([(sorted_lengths > t).sum() for t in range(steps)], dtype=np.int64)
    t_idx = np.repeat(np.arange(steps, dtype=np.int64), batch_sizes)
    b_idx = np.concatenate([sorted_indices[:k] for k in batch_sizes]) if steps else np.zeros(0, np.int64)
    return t_idx, b_idx, batch_sizes


def _check_bool(value, op: str, arg: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {arg} must be a bool, got {value!r}")
    return bool(value)


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (L, N, *) — (N, L, *) with ``batch_first`` — of sequences of the given
    ``lengths``. ``enforce_sorted=True`` requires decreasing lengths (then ``sorted_indices`` is
    None); False sorts them (stable, longest first). Gradients flow back to ``input``'s valid
    positions."""
    op = "pack_padded_sequence"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    batch_first = _check_bool(batch_first, op, "batch_first")
    enforce_sorted = _check_bool(enforce_sorted, op, "enforce_sorted")
    if input.ndim < 2:
        raise ValueError(f"{op}: input must have at least 2 dimensions (time and batch), got shape {tuple(input.shape)}")
    x = input.transpose(0, 1) if batch_first else input
    n_lengths = _lengths(lengths, x.shape[1], x.shape[0], op)
    if enforce_sorted:
        if np.any(np.diff(n_lengths) > 0):
            raise RuntimeError(f"{op}: `lengths` array must be sorted in decreasing order when `enforce_sorted` "
                               f"is True (got {n_lengths.tolist()}). You can pass `enforce_sorted=False` to "
                               "pack_padded_sequence and/or pack_sequence to sidestep this requirement.")
        order = np.arange(n_lengths.size, dtype=np.int64)
        sorted_indices = None
    else:
        order = np.argsort(-n_lengths, kind="stable").astype(np.int64)
        sorted_indices = Tensor(order)
    t_idx, b_idx, batch_sizes = _layout(n_lengths, order)
    data = x[Tensor(t_idx), Tensor(b_idx)]
    return PackedSequence(data, Tensor(batch_sizes), sorted_indices, None)


def _packed_lengths(sequence: PackedSequence):
    """(lengths in batch order, the sorted order) of a PackedSequence."""
    batch_sizes = np.asarray(sequence.batch_sizes._data, dtype=np.int64)
    n = int(batch_sizes[0]) if batch_sizes.size else 0
    sorted_lengths = np.array([(batch_sizes > j).sum() for j in range(n)], dtype=np.int64)
    order = (np.arange(n, dtype=np.int64) if sequence.sorted_indices is None
             else np.asarray(sequence.sorted_indices._data, dtype=np.int64))
    lengths = np.empty(n, dtype=np.int64)
    lengths[order] = sorted_lengths
    return lengths, order


def pad_packed_sequence(sequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None):
    """The inverse of :func:`pack_padded_sequence`: ``(padded, lengths)`` with ``padded`` (T, N, *)
    — (N, T, *) with ``batch_first`` — in the original batch order, ``padding_value`` beyond each
    length, T = ``total_length`` or the longest length; ``lengths`` an int64 tensor."""
    op = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence_):
        raise TypeError(f"{op}: sequence must be a PackedSequence, got {type(sequence).__name__}")
    batch_first = _check_bool(batch_first, op, "batch_first")
    if isinstance(padding_value, bool) or not isinstance(padding_value, numbers.Real):
        raise TypeError(f"{op}: padding_value must be a number, got {padding_value!r}")
    lengths, order = _packed_lengths(sequence)
    steps = int(lengths.max()) if lengths.size else 0
    if total_length is not None:
        if isinstance(total_length, bool) or not isinstance(total_length, numbers.Integral):
            raise TypeError(f"{op}: total_length must be an int or None, got {total_length!r}")
        if total_length < steps:
            raise ValueError(f"{op}: Expected total_length to be at least the length of the longest sequence in "
                             f"input, but got total_length={total_length} and max sequence length being {steps}")
        steps = int(total_length)
    data = sequence.data
    t_idx, b_idx, _ = _layout(lengths, order)
    rows = np.full((steps, lengths.size), t_idx.size, dtype=np.int64)   # the padding row by default
    rows[t_idx, b_idx] = np.arange(t_idx.size, dtype=np.int64)
    pad_row = Tensor(np.full((1, *data.shape[1:]), padding_value, dtype=data._data.dtype))
    padded = cat([data, pad_row], 0)[Tensor(rows)]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, Tensor(lengths)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes (l_i, *) into (L, N, *) — (N, L, *) with ``batch_first`` — padded
    with ``padding_value`` on the ``padding_side`` ('right' or 'left') up to the longest."""
    op = "pad_sequence"
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError(f"{op}: received an empty list of sequences")
    if padding_side not in ("right", "left"):
        raise RuntimeError(f"{op}: Expected padding_side to be one of left or right, but got {padding_side!r}")
    batch_first = _check_bool(batch_first, op, "batch_first")
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"{op}: sequences[{i}] must be a Tensor, got {type(s).__name__}")
        if s.ndim < 1:
            raise ValueError(f"{op}: sequences[{i}] must have at least one dimension, got shape {tuple(s.shape)}")
        if tuple(s.shape[1:]) != tuple(sequences[0].shape[1:]):
            raise RuntimeError(f"{op}: every sequence must have the trailing shape of the first, "
                               f"{tuple(sequences[0].shape[1:])}; sequences[{i}] has shape {tuple(s.shape)}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = longest - s.shape[0]
        if extra:
            moved = s.movedim(0, -1)                       # F.pad pads the last dimension
            moved = F.pad(moved, (0, extra) if padding_side == "right" else (extra, 0), value=padding_value)
            s = moved.movedim(-1, 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (l_i, *): ``pack_padded_sequence(pad_sequence(sequences), lengths)``."""
    sequences = list(sequences)
    lengths = [s.shape[0] if isinstance(s, Tensor) and s.ndim else 0 for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list:
    """The list of sequences ``padded[:l_i, i]`` (the inverse of :func:`pad_sequence`)."""
    x = padded_sequences.transpose(0, 1) if batch_first else padded_sequences
    n = _lengths(lengths, x.shape[1], x.shape[0], "unpad_sequence")
    return [x[:int(length), i] for i, length in enumerate(n)]


def unpack_sequence(packed_sequences) -> list:
    """The list of sequences of a PackedSequence, in the original batch order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def packed_like(padded: Tensor, template: PackedSequence) -> PackedSequence:
    """``padded`` (T, N, *) in batch order packed with ``template``'s lengths and order (what an
    RNN gives back for a packed input)."""
    lengths, order = _packed_lengths(template)
    t_idx, b_idx, _ = _layout(lengths, order)
    return PackedSequence(padded[Tensor(t_idx), Tensor(b_idx)], template.batch_sizes, template.sorted_indices,
                          template.unsorted_indices)
