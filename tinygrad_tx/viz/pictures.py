"""The pictures the tutorial describes, drawn from real models (PNG, matplotlib's Agg backend).

* :func:`plot_bigram`: the section-3.2 count matrix N(c_i, c_j) as an image, every cell
  labelled with its bigram and count; colour = log(1 + N), with a colorbar in counts.
* :func:`plot_embeddings_3d`: the 27 character vectors of a names model trained with
  ``d_model = 3`` (section 5.4) as a 3-D scatter, vowels in their own colour;
  :func:`vowel_gathering` measures how close the vowels came together.
* :func:`attention_maps` and :func:`plot_attention`: the attention weights of every head of
  every layer of a names GPT over one name (section 6), one heat-map per head; the cells the
  causal mask removes (key after query) are hatched grey, unlike weights that are merely ~0.

The loss curves of ``--compare-torch`` are drawn by ``tinygrad-tx train ... --compare-torch``
itself (:func:`tinygrad_tx.training.plots.plot_compare`).

How attention weights are read out
----------------------------------
The fused attention never materialises the weights as a Tensor, so :func:`attention_maps`
registers a **forward hook** (``Module.register_forward_hook``) on every
``CausalSelfAttention`` that captures its input and output during one ordinary forward pass.
From the captured input it recomputes, with the module's own ``c_attn`` and the engine's
ops, the tutorial's weights ``softmax(q kᵀ / √d_k + causal mask)``, and then checks that
``c_proj(weights @ v)`` reproduces the output the module actually returned, so the picture
shows what the model computed, whichever ``attn_impl`` it runs.
"""
from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np

from .. import functional as F
from ..core.grad_mode import no_grad
from ..core.tensor import Tensor

VOWELS = frozenset("aeiou")


def pyplot():
    """matplotlib.pyplot on the Agg backend (no window), with a clear error when it is missing."""
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise ModuleNotFoundError("plots need matplotlib (pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path) -> Path:
    plt = pyplot()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _plain(text: str) -> str:
    """Text shown as typed: matplotlib reads a pair of '$' as math, and '$' is our sentinel."""
    return str(text).replace("$", r"\$")


def _chars(vocab) -> list[str]:
    chars = list(getattr(vocab, "chars", vocab))
    if not all(isinstance(c, str) for c in chars):
        raise TypeError("vocab must be a CharVocab or a sequence of characters")
    return chars


# --------------------------------------------------------------------------- bigram

def bigram_counts(names, vocab) -> np.ndarray:
    """N(c_i, c_j) over '$' + name + '$' of every name (``BigramCountModel.fit``), int (V, V)."""
    from ..models import BigramCountModel
    model = BigramCountModel(len(vocab.chars), alpha=0.0).fit(list(names), vocab.stoi, vocab.sentinel)
    return model.counts._data.copy()


def plot_bigram(counts, vocab, path, title: str | None = None) -> Path:
    """The (V, V) count matrix as an image: row = the character, column = the one after it;
    each cell shows the pair and its count."""
    counts = np.asarray(counts)
    chars = _chars(vocab)
    v = len(chars)
    if counts.shape != (v, v):
        raise ValueError(f"counts must be ({v}, {v}) for a vocabulary of {v} characters, got {tuple(counts.shape)}")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(0.55 * v + 2.2, 0.55 * v + 1), dpi=80)
    fig.subplots_adjust(left=0.04, right=0.94, bottom=0.05, top=0.96)
    im = ax.imshow(np.log1p(counts), cmap="Blues")
    ticks = [n for n in (0, 1, 10, 100, 1000, 10000, 100000) if n <= max(int(counts.max()), 1)]
    bar = fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02, ticks=np.log1p(ticks))
    bar.ax.set_yticklabels([f"{n:,}" for n in ticks])
    bar.set_label("count N (colour = log(1 + N))")
    dark = np.log1p(counts) > 0.6 * np.log1p(counts.max())
    for i in range(v):
        for j in range(v):   # one text per cell (the pair over its count): drawing text is the slow part
            ax.text(j, i, _plain(f"{chars[i]}{chars[j]}\n{int(counts[i, j])}"), ha="center", va="center",
                    fontsize=7, color="white" if dark[i, j] else "black", linespacing=1.1)
    ax.set_xticks(range(v), [_plain(c) for c in chars])
    ax.set_yticks(range(v), [_plain(c) for c in chars])
    ax.set_xlabel("next character c_j")
    ax.set_ylabel("character c_i")
    ax.set_title(_plain(title or f"bigram counts N(c_i, c_j), {int(counts.sum()):,} pairs (colour: log(1 + N))"))
    return _save(fig, path)


# --------------------------------------------------------------------------- embeddings

def vowel_gathering(weight, vocab) -> dict:
    """How close the vowels sit in an embedding table ``weight`` (V, d).

    Returns ``{"vowel_vowel", "vowel_consonant", "ratio", "nearest"}``: the mean Euclidean
    distance between two vowels, between a vowel and a consonant, their ratio (< 1: the
    vowels gathered), and each vowel's nearest other letter (the sentinel excluded).
    """
    w = np.asarray(weight, dtype=np.float64)
    chars = _chars(vocab)
    if w.ndim != 2 or w.shape[0] != len(chars):
        raise ValueError(f"weight must be ({len(chars)}, d) for {len(chars)} characters, got {tuple(w.shape)}")
    letters = [i for i, c in enumerate(chars) if c.isalpha()]
    vow = [i for i in letters if chars[i] in VOWELS]
    con = [i for i in letters if chars[i] not in VOWELS]
    if len(vow) < 2 or not con:
        raise ValueError("the vocabulary needs at least two vowels and one consonant")

    def dist(i, j):
        return float(np.linalg.norm(w[i] - w[j]))
    vv = float(np.mean([dist(i, j) for i, j in combinations(vow, 2)]))
    vc = float(np.mean([dist(i, j) for i in vow for j in con]))
    nearest = {chars[i]: chars[min((j for j in letters if j != i), key=lambda j: dist(i, j))] for i in vow}
    return {"vowel_vowel": vv, "vowel_consonant": vc, "ratio": vv / vc, "nearest": nearest}


def plot_embeddings_3d(weight, vocab, path, title: str | None = None) -> Path:
    """Scatter the rows of a (V, 3) embedding table in 3-D, each labelled with its character."""
    w = np.asarray(weight, dtype=np.float64)
    chars = _chars(vocab)
    if w.shape != (len(chars), 3):
        raise ValueError(f"a 3-D picture needs a ({len(chars)}, 3) embedding table (d_model = 3), got {tuple(w.shape)}")
    plt = pyplot()
    fig = plt.figure(figsize=(9, 7.5), dpi=100)
    ax = fig.add_subplot(projection="3d")
    kinds = [("vowel", "tab:red"), ("consonant", "tab:blue"), ("sentinel $", "tab:gray")]
    kind_of = ["vowel" if c in VOWELS else "consonant" if c.isalpha() else "sentinel $" for c in chars]
    for kind, color in kinds:
        idx = [i for i, k in enumerate(kind_of) if k == kind]
        if idx:
            ax.scatter(w[idx, 0], w[idx, 1], w[idx, 2], color=color, s=36, depthshade=False, label=_plain(kind))
    for i, c in enumerate(chars):
        ax.text(w[i, 0], w[i, 1], w[i, 2], "  " + _plain(c), fontsize=12, color=dict(kinds)[kind_of[i]],
                weight="bold" if kind_of[i] == "vowel" else "normal")
    ax.set_xlabel("dim 0")
    ax.set_ylabel("dim 1")
    ax.set_zlabel("dim 2")
    stats = vowel_gathering(w, chars)
    ax.set_title(_plain(title or "learned character embeddings (d_model = 3)"), fontsize=10)
    fig.text(0.5, 0.02, f"mean distance vowel-vowel {stats['vowel_vowel']:.2f} vs vowel-consonant "
             f"{stats['vowel_consonant']:.2f} (ratio {stats['ratio']:.2f})", ha="center", fontsize=9)
    ax.legend(loc="upper left", fontsize=9)
    return _save(fig, path)


# --------------------------------------------------------------------------- attention

def attention_weights(module, x: Tensor, output: Tensor | None = None, rtol: float = 1e-4) -> np.ndarray:
    """The attention weights (B, heads, T, T) of a ``CausalSelfAttention`` on its input ``x``:
    the tutorial's ``softmax(q kᵀ / √d_k, causal)`` from the module's own ``c_attn``.

    With ``output`` (what the module returned for ``x``, dropout inactive) the weights are
    checked: ``c_proj(weights @ v)`` must reproduce it to ``rtol`` (relative to its largest
    entry), else ``RuntimeError``.
    """
    with no_grad():
        B, T, C = x.shape
        h, dk = module.n_heads, module.d_k
        q, k, v = module.c_attn(x).split(module.d_model, dim=2)
        q = q.view(B, T, h, dk).transpose(1, 2)
        k = k.view(B, T, h, dk).transpose(1, 2)
        v = v.view(B, T, h, dk).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / dk ** 0.5)
        att = att.masked_fill(module.causal_mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        if output is not None:
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            again = module.c_proj(y)._data.astype(np.float64)
            ref = np.asarray(output._data, dtype=np.float64)
            err = float(np.max(np.abs(again - ref))) / max(float(np.max(np.abs(ref))), 1e-30)
            if err > rtol:
                raise RuntimeError(f"the recomputed attention does not reproduce the module's output "
                                   f"(relative error {err:.2e} > {rtol:g})")
    return att._data


def attention_maps(model, idx) -> np.ndarray:
    """Attention weights of every ``CausalSelfAttention`` of ``model`` on the token ids ``idx``
    (B, T): an array (layers, B, heads, T, T), layers in the order they run.

    One forward pass in eval mode without a graph; forward hooks capture each attention
    module's input and output (see the module docstring); the model's mode is restored.
    """
    from ..models import CausalSelfAttention
    captured = []
    handles = [m.register_forward_hook(lambda mod, args, out: captured.append((mod, args[0], out)))
               for _, m in model.named_modules() if isinstance(m, CausalSelfAttention)]
    if not handles:
        raise ValueError(f"{type(model).__name__} has no CausalSelfAttention module to read attention from")
    was_training = model.training
    try:
        model.eval()
        with no_grad():
            model(np.asarray(idx))
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    return np.stack([attention_weights(mod, x, out) for mod, x, out in captured])


def plot_attention(maps, tokens, path, title: str | None = None) -> Path:
    """Heat-maps of attention weights ``maps`` (layers, heads, T, T): one panel per head
    (columns) and layer (rows); rows of a panel are queries, columns keys, both labelled
    with ``tokens`` (T strings)."""
    maps = np.asarray(maps, dtype=np.float64)
    if maps.ndim != 4 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(f"maps must be (layers, heads, T, T), got shape {tuple(maps.shape)}")
    layers, heads, t, _ = maps.shape
    tokens = list(tokens)
    if len(tokens) != t:
        raise ValueError(f"{len(tokens)} token labels for {t} positions")
    plt = pyplot()
    from matplotlib import patches
    cmap = plt.get_cmap("viridis").with_extremes(bad=(0, 0, 0, 0))   # masked cells: transparent
    future = np.triu(np.ones((t, t), dtype=bool), k=1)              # key j > query i: removed by the mask
    size = 0.32 * t + 1.0
    fig, axes = plt.subplots(layers, heads, figsize=(size * heads + 1.2, size * layers + 0.8), dpi=100,
                             squeeze=False, layout="constrained")
    for li in range(layers):
        for hi in range(heads):
            ax = axes[li, hi]
            im = ax.imshow(np.ma.masked_where(future, maps[li, hi]), cmap=cmap, vmin=0.0, vmax=1.0,
                           zorder=2)
            ax.add_patch(patches.Rectangle((-0.5, -0.5), t, t, facecolor="#d9d9d9", edgecolor="#9a9a9a", lw=0,
                                           hatch="///", zorder=1))   # seen through the masked cells only
            ax.set_xticks(range(t), [_plain(c) for c in tokens], fontsize=9)
            ax.set_yticks(range(t), [_plain(c) for c in tokens], fontsize=9)
            ax.set_title(f"layer {li}, head {hi}", fontsize=9)
            if hi == 0:
                ax.set_ylabel("query (predicting the next char)", fontsize=8)
            if li == layers - 1:
                ax.set_xlabel("key (attended to)", fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.6, label="attention weight (hatched grey: masked, a future key)")
    if title:
        fig.suptitle(_plain(title), fontsize=11)
    return _save(fig, path)
