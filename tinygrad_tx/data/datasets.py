"""Training examples for character-level language models (tutorial section 4).

Two ways to turn names into supervised pairs; both are self-supervised: the
label of every position is simply the next character of the same name.

``CharAutoregressiveDataset`` (the tutorial's dataset)
    One example per *character to predict*. The name ``"ava"`` is the token
    sequence ``$ a v a $`` = ``[0, 1, 22, 1, 0]`` and yields 4 examples, each
    the prefix seen so far (left-padded with ``'$'`` to ``block_size``, or
    cut to its last ``block_size`` tokens) and the next token::

        block_size=3:  [$ $ $] -> a   [$ $ a] -> v   [$ a v] -> a   [a v a] -> $

    Inputs have shape ``(N, block_size)``, targets ``(N,)``, both int64,
    ``N = sum(len(name) + 1)``. The model sees one prediction per row, so it
    suits models that read a fixed window (the MLP of tutorial section 5.3).
    (The tutorial's prose writes ``"$sada$"`` as ``[0, 1, 4, 1, 0]``, dropping
    the ``s``; with its own ``stoi`` the sequence is ``[0, 19, 1, 4, 1, 0]``.)

``FullSequenceDataset`` (for causal Transformers)
    One example per *name*: ``x`` is ``'$' + name`` and ``y`` is ``name + '$'``,
    i.e. the same sequence shifted by one, so a causal model trained with
    cross-entropy over every position learns all of the name's next-character
    predictions in one forward pass. Position ``t`` of ``x`` sees exactly
    ``x[:t+1]`` through the causal mask, which is the tutorial prefix for
    target ``y[t]``::

        "ava", block_size=6:   x = $ a v a $ $      (right-padded with '$')
                               y = a v a $ . .      (. = ignore_index, -100)

    Padding is on the *right*: every name starts at position 0 right after
    ``'$'``, so the learned position embeddings always mean "distance from the
    start of the name", and the padded positions come after every real one so
    the causal mask keeps them out of the real positions' context. The pad
    inputs are ``'$'`` (any valid id would do: their outputs are never scored)
    and the pad targets are ``ignore_index``, which cross-entropy skips.

    A name needs ``len(name) + 1`` positions. A longer name is handled by
    ``long_names``: ``'truncate'`` (default) keeps its first ``block_size``
    positions (the model never sees the ending or its ``'$'``);
    ``'windows'`` cuts ``x``/``y`` into consecutive non-overlapping windows of
    ``block_size`` positions (every target is scored exactly once, but a
    window after the first starts without the earlier characters as context,
    and the second window's position 0 is no longer the name's start);
    ``'error'`` raises ``ValueError``.

Both datasets are ``ArrayDataset``\\ s: they index their arrays with an int, a
slice or an integer array, and ``DataLoader`` batches them by fancy indexing.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .vocab import SENTINEL, CharVocab

IGNORE_INDEX = -100
LONG_NAMES = ("truncate", "windows", "error")


class ArrayDataset:
    """A dataset of equally long arrays indexed together (like ``torch.utils.data.TensorDataset``).

    ``dataset[i]`` returns ``tuple(a[i] for a in arrays)``; ``i`` may be an int,
    a slice or an integer array (then every element of the tuple is a batch).
    """

    def __init__(self, *arrays: np.ndarray):
        if not arrays:
            raise ValueError("ArrayDataset needs at least one array")
        arrays = tuple(np.asarray(a) for a in arrays)
        lengths = {len(a) for a in arrays}
        if len(lengths) != 1:
            raise ValueError(f"all arrays must have the same first dimension, got shapes "
                             f"{[a.shape for a in arrays]}")
        self.arrays = arrays

    def __len__(self) -> int:
        return len(self.arrays[0])

    def __getitem__(self, idx):
        return tuple(a[idx] for a in self.arrays)


def _resolve_vocab(vocab: CharVocab | Mapping[str, int], sentinel: str) -> tuple[Mapping[str, int], str, int]:
    """``(stoi, sentinel, sentinel_id)`` from a ``CharVocab`` (its own sentinel) or a plain ``stoi`` dict."""
    if isinstance(vocab, CharVocab):
        return vocab.stoi, vocab.sentinel, vocab.sentinel_id
    if sentinel not in vocab:
        raise ValueError(f"the sentinel {sentinel!r} is not in the vocabulary")
    return vocab, sentinel, vocab[sentinel]


def _encode_name(name: str, stoi: Mapping[str, int], sentinel: str) -> list[int]:
    """The ids of ``name``; a clear ValueError for characters not in ``stoi`` or the sentinel inside a name."""
    unknown = sorted(set(name) - stoi.keys())
    if unknown:
        raise ValueError(f"name {name!r} has characters not in the vocabulary: {unknown!r}")
    if sentinel in name:
        raise ValueError(f"name {name!r} contains the sentinel {sentinel!r}")
    return [stoi[c] for c in name]


def _check_block_size(block_size) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    return int(block_size)


class CharAutoregressiveDataset(ArrayDataset):
    """Every prefix of every name -> its next character (tutorial section 4; see module docstring).

    Parameters
    ----------
    names: sequence of str
    stoi: CharVocab or dict
        A ``CharVocab`` or the tutorial's ``stoi`` dict (which must contain ``sentinel``).
    block_size: int
        Context length of every input row.

    Attributes: ``inputs`` int64 ``(N, block_size)``, ``targets`` int64 ``(N,)``, ``block_size``, ``stoi``.
    """

    def __init__(self, names: Sequence[str], stoi: CharVocab | Mapping[str, int], block_size: int,
                 sentinel: str = SENTINEL):
        self.block_size = block_size = _check_block_size(block_size)
        self.stoi, sentinel, pad = _resolve_vocab(stoi, sentinel)
        # All names go into one stream; each is the tutorial's encoded sequence
        # [$] + name + [$] preceded by block_size - 1 extra pads, so the block_size
        # tokens before the stream position of a target are exactly its prefix
        # left-padded with '$' (or its last block_size tokens).
        stream, target_pos = [], []
        for name in names:
            ids = _encode_name(name, self.stoi, sentinel)
            start = len(stream) + block_size        # stream position of the first target
            stream.extend([pad] * block_size + ids + [pad])
            target_pos.extend(range(start, start + len(ids) + 1))
        if not target_pos:
            raise ValueError("CharAutoregressiveDataset needs at least one name")
        stream = np.array(stream, dtype=np.int64)
        target_pos = np.array(target_pos, dtype=np.int64)
        windows = np.lib.stride_tricks.sliding_window_view(stream, block_size)
        self.inputs = windows[target_pos - block_size]      # fancy indexing copies: a plain array
        self.targets = stream[target_pos]
        super().__init__(self.inputs, self.targets)


class FullSequenceDataset(ArrayDataset):
    """One ``(x, y)`` row per name, ``y`` = ``x`` shifted by one, right-padded (see module docstring).

    Parameters
    ----------
    names: sequence of str
    vocab: CharVocab or dict
    block_size: int
        Length of every row; a name uses ``len(name) + 1`` positions.
    ignore_index: int
        Target value of padded positions (default -100, like ``torch.nn.functional.cross_entropy``).
    long_names: ``'truncate'`` | ``'windows'`` | ``'error'``
        What to do with a name longer than ``block_size - 1``.

    Attributes: ``inputs`` int64 ``(N, block_size)``, ``targets`` int64 ``(N, block_size)``,
    ``block_size``, ``ignore_index``, ``num_truncated`` (names cut by ``'truncate'``).
    """

    def __init__(self, names: Sequence[str], vocab: CharVocab | Mapping[str, int], block_size: int,
                 ignore_index: int = IGNORE_INDEX, long_names: str = "truncate", sentinel: str = SENTINEL):
        if long_names not in LONG_NAMES:
            raise ValueError(f"long_names must be one of {LONG_NAMES}, got {long_names!r}")
        self.block_size = block_size = _check_block_size(block_size)
        self.ignore_index = int(ignore_index)
        self.stoi, sentinel, pad = _resolve_vocab(vocab, sentinel)
        if 0 <= self.ignore_index < len(self.stoi):
            raise ValueError(f"ignore_index {ignore_index} is a valid token id; use a negative value")
        xs, ys = [], []
        self.num_truncated = 0
        for name in names:
            seq = [pad] + _encode_name(name, self.stoi, sentinel) + [pad]
            x, y = seq[:-1], seq[1:]
            if len(x) > block_size:
                if long_names == "error":
                    raise ValueError(f"name {name!r} needs {len(x)} positions but block_size is {block_size}")
                if long_names == "truncate":
                    x, y = x[:block_size], y[:block_size]
                    self.num_truncated += 1
            for start in range(0, len(x), block_size):
                xw, yw = x[start:start + block_size], y[start:start + block_size]
                n_pad = block_size - len(xw)
                xs.append(xw + [pad] * n_pad)
                ys.append(yw + [self.ignore_index] * n_pad)
        if not xs:
            raise ValueError("FullSequenceDataset needs at least one name")
        self.inputs = np.array(xs, dtype=np.int64)
        self.targets = np.array(ys, dtype=np.int64)
        super().__init__(self.inputs, self.targets)

    @property
    def num_targets(self) -> int:
        """How many positions are scored (targets not equal to ``ignore_index``)."""
        return int((self.targets != self.ignore_index).sum())
