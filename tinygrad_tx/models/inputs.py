"""Input checks and attention-mask building shared by the models and their PyTorch twins.

Both twins must reject the same bad input with the same ``ValueError`` /
``TypeError``, naming the values involved, so the checks live here and work on
plain Python numbers, shapes and NumPy arrays (the twins convert their tensors
to NumPy first). NumPy only: this module is imported by ``reference/`` too.
"""
from __future__ import annotations

import numpy as np

from ..core import seam as _seam


def check_heads(d_model: int, n_heads: int) -> int:
    """``d_model`` must split evenly into ``n_heads`` heads; returns the head size d_k."""
    if n_heads <= 0 or d_model <= 0:
        raise ValueError(f"d_model ({d_model}) and n_heads ({n_heads}) must be positive")
    if d_model % n_heads != 0:
        raise ValueError(f"d_model must be divisible by n_heads: d_model={d_model}, n_heads={n_heads} "
                         f"(d_model % n_heads = {d_model % n_heads})")
    return d_model // n_heads


def check_seq_len(T: int, block_size: int, name: str = "sequence") -> None:
    if T > block_size:
        raise ValueError(f"Cannot forward {name} of length {T}, block size is {block_size}")
    if T < 1:
        raise ValueError(f"Cannot forward an empty {name} (length {T})")


@_seam.replayed   # tinygrad_tx.compile checks each call's ids too
def check_token_ids(ids: np.ndarray, vocab_size: int, name: str = "idx", ndim=(2,)) -> None:
    """Integer dtype, the expected rank, every id in [0, vocab_size)."""
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
    if ids.ndim not in ndim:
        want = " or ".join(f"{d}-D" for d in ndim)
        raise ValueError(f"{name} must be {want}, got shape {tuple(ids.shape)}")
    if ids.size:
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= vocab_size:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{name} holds token id {bad} outside [0, vocab_size) = [0, {vocab_size}) "
                             f"(min {lo}, max {hi})")


@_seam.replayed   # tinygrad_tx.compile checks each call's targets too
def check_targets(targets: np.ndarray, logits_shape, vocab_size: int, ignore_index: int = -100,
                  name: str = "targets") -> None:
    """Class-index targets: integer ids in [0, vocab_size) or ``ignore_index``; shape checked by
    the caller's rule."""
    targets = np.asarray(targets)
    if targets.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer class ids, got dtype {targets.dtype}")
    valid = targets[targets != ignore_index]
    if valid.size and (valid.min() < 0 or valid.max() >= vocab_size):
        bad = int(valid.min()) if valid.min() < 0 else int(valid.max())
        raise ValueError(f"{name} holds class id {bad} outside [0, {vocab_size}) "
                         f"(and it is not ignore_index={ignore_index}); logits have shape {tuple(logits_shape)}")


def lm_targets_mode(idx_shape, targets_shape) -> str:
    """The GPT rule: 1-D targets (B,) score the last position of (B, T) inputs,
    2-D targets (B, T) score every position. Returns 'last' or 'all'."""
    B, T = idx_shape
    if tuple(targets_shape) == (B,):
        return "last"
    if tuple(targets_shape) == (B, T):
        return "all"
    raise ValueError(f"targets must have shape ({B},) (score the last position) or ({B}, {T}) "
                     f"(score every position) for inputs of shape {tuple(idx_shape)}, "
                     f"got {tuple(targets_shape)}")


def as_bool_mask(mask: np.ndarray, name: str) -> np.ndarray:
    """A bool or 0/1 integer mask as bool."""
    mask = np.asarray(mask)
    if mask.dtype == np.bool_:
        return mask
    if mask.dtype.kind in "iu":
        if mask.size and not np.isin(mask, (0, 1)).all():
            raise ValueError(f"{name} must hold only 0 and 1 (or be a bool mask), "
                             f"got values {np.unique(mask)[:8].tolist()}")
        return mask != 0
    raise TypeError(f"{name} must be a bool or 0/1 integer mask, got dtype {mask.dtype}")


def check_padding_mask(mask_shape, batch: int, length: int, name: str = "padding_mask") -> None:
    if tuple(mask_shape) != (batch, length):
        raise ValueError(f"{name} must have shape (batch, key length) = ({batch}, {length}), "
                         f"got {tuple(mask_shape)}")


def check_attn_mask(mask_shape, target_shape, name: str = "attn_mask") -> None:
    """``mask_shape`` must broadcast to ``target_shape`` = (B, heads, T_q, T_k)."""
    try:
        ok = np.broadcast_shapes(tuple(mask_shape), tuple(target_shape)) == tuple(target_shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{name} of shape {tuple(mask_shape)} does not broadcast to the attention "
                         f"scores' shape (batch, heads, T_q, T_k) = {tuple(target_shape)}")


def check_rows_attend(mask: np.ndarray, name: str = "the attention mask") -> None:
    """Every query row must keep at least one key (softmax over nothing is 0/0)."""
    empty = ~mask.any(axis=-1)
    if empty.any():
        where = tuple(int(i) for i in np.argwhere(empty)[0])
        raise ValueError(f"{name} leaves query row {where} (batch, head, query) with no key to attend to; "
                         f"every query needs at least one real, visible key")


def check_query_context(x_shape, ctx_shape, d_model: int) -> None:
    if len(x_shape) != 3 or x_shape[-1] != d_model:
        raise ValueError(f"attention input must have shape (batch, T, d_model={d_model}), got {tuple(x_shape)}")
    if len(ctx_shape) != 3 or ctx_shape[-1] != d_model or ctx_shape[0] != x_shape[0]:
        raise ValueError(f"context must have shape (batch={x_shape[0]}, T_k, d_model={d_model}), "
                         f"got {tuple(ctx_shape)}")


def as_pair(size, name: str):
    if isinstance(size, (tuple, list)):
        if len(size) != 2:
            raise ValueError(f"{name} must be an int or a pair (H, W), got {size!r}")
        return int(size[0]), int(size[1])
    return int(size), int(size)


def check_patch_grid(image_size, patch_size):
    """(H, W) and a square patch P must give a whole grid of P x P patches; returns (H // P, W // P)."""
    (H, W), (P, Q) = as_pair(image_size, "image_size"), as_pair(patch_size, "patch_size")
    if P != Q:
        raise ValueError(f"patches must be square (P x P), got patch_size {(P, Q)}")
    if min(H, W, P, Q) <= 0:
        raise ValueError(f"image_size {(H, W)} and patch_size {(P, Q)} must be positive")
    if H % P or W % Q:
        raise ValueError(f"image size {(H, W)} is not divisible by the patch size {(P, Q)} "
                         f"(remainders {(H % P, W % Q)})")
    return H // P, W // Q


def check_image(shape, in_channels: int, image_size,
                why: str = "the positional embedding is fixed to that grid") -> None:
    """(B, in_channels, H, W) images of exactly ``image_size``; ``why`` says what fixes the size."""
    H, W = as_pair(image_size, "image_size")
    if len(shape) != 4:
        raise ValueError(f"images must have shape (batch, channels, H, W), got {tuple(shape)}")
    if shape[1] != in_channels:
        raise ValueError(f"expected {in_channels} input channels, got {shape[1]} (images of shape {tuple(shape)})")
    if tuple(shape[2:]) != (H, W):
        raise ValueError(f"expected images of size {(H, W)} ({why}), "
                         f"got {tuple(shape[2:])}")


def check_window(T: int, block_size: int, d_model: int) -> None:
    """The section-5.3 failure mode: a flattened window has a fixed length."""
    if T != block_size:
        raise ValueError(f"FlattenMLP has a fixed window of block_size={block_size} tokens: its first Linear "
                         f"takes block_size*d_model = {block_size * d_model} inputs, but a sequence of length "
                         f"{T} flattens to {T * d_model}. A flattened MLP cannot read other lengths.")


def attention_mask(batch: int, n_heads: int, T_q: int, T_k: int, causal: bool,
                   padding_mask=None, attn_mask=None):
    """The boolean "may attend" mask of one attention call, or None when nothing is masked.

    * ``causal``: query i sees keys j <= i (``np.tril`` of a (T_q, T_k) block of ones: the
      top-left alignment torch's ``is_causal`` uses when T_q != T_k);
    * ``padding_mask`` (batch, T_k): True/1 = a real key token, False/0 = padding (the
      complement of ``torch.nn.MultiheadAttention``'s ``key_padding_mask``);
    * ``attn_mask``: bool, True = may attend (``F.scaled_dot_product_attention``'s convention),
      any shape that broadcasts to (batch, heads, T_q, T_k).

    The parts are AND-ed. A query left with no key raises ``ValueError`` (its softmax would be
    0/0 = NaN). Returns a NumPy bool array that broadcasts to (batch, heads, T_q, T_k).
    """
    target = (batch, n_heads, T_q, T_k)
    mask = None
    if causal:
        mask = np.tril(np.ones((T_q, T_k), dtype=bool))
    if padding_mask is not None:
        pm = as_bool_mask(padding_mask, "padding_mask")
        check_padding_mask(pm.shape, batch, T_k)
        pm = pm[:, None, None, :]
        mask = pm if mask is None else mask & pm
    if attn_mask is not None:
        am = np.asarray(attn_mask)
        if am.dtype != np.bool_:
            raise TypeError(f"attn_mask must be a bool mask (True = may attend), got dtype {am.dtype}")
        check_attn_mask(am.shape, target)
        mask = am if mask is None else mask & am
    if mask is not None:
        check_rows_attend(np.broadcast_to(mask, target))
    return mask


def encode_sequences(sequences, stoi=None, boundary=None):
    """Token-id lists: id sequences pass through; strings are encoded with ``stoi`` and, when
    ``boundary`` is given, wrapped in it on both sides ('$' + name + '$')."""
    out = []
    wrap = boundary or ""
    for seq in sequences:
        if isinstance(seq, str):
            if stoi is None:
                raise ValueError(f"got the string {seq!r}: pass stoi to encode strings")
            seq = wrap + seq + wrap
            try:
                out.append([stoi[c] for c in seq])
            except KeyError:
                missing = sorted(set(seq) - set(stoi))
                raise ValueError(f"characters {missing} of {seq!r} are not in stoi") from None
        else:
            out.append([int(i) for i in seq])
    return out


def bigram_pairs(sequences, vocab_size: int):
    """All consecutive (previous, next) id pairs of id sequences, as two int64 arrays, range-checked."""
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    flat = np.fromiter((i for s in sequences for i in s), dtype=np.int64, count=int(lengths.sum()))
    check_token_ids(flat, vocab_size, "sequence", ndim=(1,))
    ends = np.cumsum(lengths)[lengths > 0]
    not_last = np.ones(flat.size, dtype=bool)
    not_last[ends - 1] = False                        # a sequence's last id has no successor
    not_first = np.ones(flat.size, dtype=bool)
    not_first[ends - lengths[lengths > 0]] = False    # and its first id no predecessor
    return flat[not_last], flat[not_first]
