"""Every benchmarked component, registered in one table.

A component is one function ``build(B, rng, cfg) -> Case`` written against the
backend interface of :mod:`bench.backends` (so the same code builds the
tinygrad_tx version and the PyTorch twin), plus its default configurations.
Adding one is a few lines::

    @component("gelu", full=dict(shape=(16, 128, 1024)), target=2.0)
    def gelu(B, rng, c):
        x = B.leaf(draw_float(rng, c["shape"]))
        return Case(lambda: B.F.gelu(x), [("x", x)])

``rng`` is a NumPy generator seeded identically in every process; drawing the
inputs (and calling ``B.prepare(module, rng)`` for module weights) in the same
order makes both frameworks see the same numbers.

``--quick`` uses each component's ``quick`` configuration: batch 4 instead of 16
for the single ops and modules; the training steps keep the sizes the issue
defines (tiny, tutorial, large).

Timing modes: ``fwd`` runs ``Case.forward`` (graph recording on, as in
training); ``fwdbwd`` clears the leaves' gradients, runs the forward, the
backward with a fixed random cotangent (``loss.backward()`` for scalar losses)
and, for training steps, ``optimizer.step()``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .backends import draw_float
from .stats import attention_core_flops, gpt_train_flops, linear_flops, vit_train_flops


@dataclass
class Case:
    forward: Callable[[], Any]            # () -> the output tensor that the backward starts from
    leaves: list                          # [(name, tensor)]: gradients compared and cleared
    optimizer: Any = None                 # set for training steps: fwdbwd = forward + backward + step
    flops: int | None = None              # analytic FLOPs of one forward
    train_flops: int | None = None        # analytic FLOPs of forward + backward (default 3 × flops)
    info: dict = field(default_factory=dict)
    step_inputs: tuple = ()               # training steps: the step's inputs, passed as arguments ...
    forward_on: Callable | None = None    # ... to forward_on(*step_inputs) -> loss (what a compiler traces)

    def fwdbwd_flops(self):
        if self.train_flops is not None:
            return self.train_flops
        return None if self.flops is None else 3 * self.flops


@dataclass
class Component:
    name: str
    build: Callable
    full: dict
    quick: dict
    target: float | None = None   # limit on median fwd+bwd time ratio ours / torch-CPU
    kind: str = "op"               # "op", "module", "train" (main table) or "sweep"
    doc: str = ""
    variant: bool = False          # an extra row (full run only) whose attn_impl --attn-impl does not change
    numpy_path: bool = False       # also timed in the ``ours_numpy`` worker (TINYGRAD_TX_KERNELS=0); training steps always are

    def on_numpy_path(self) -> bool:
        """Whether the ``ours_numpy`` worker times this component too."""
        return self.kind == "train" or self.numpy_path

    def config(self, quick: bool) -> dict:
        return dict(self.quick if quick else self.full)


REGISTRY: dict[str, Component] = {}


def component(name, full, quick=None, target=None, kind="op", variant=False):
    def deco(fn):
        REGISTRY[name] = Component(name, fn, dict(full), dict(quick if quick is not None else full),
                                   target, kind, (fn.__doc__ or "").strip().split("\n")[0], variant)
        return fn
    return deco


def main_components(quick: bool = False):
    """The main table's components (``--quick`` leaves out the variant rows)."""
    return [c for c in REGISTRY.values() if c.kind != "sweep" and not (quick and c.variant)]


def build_case(B, name, cfg, seed):
    """Build component ``name`` with configuration ``cfg`` from a generator seeded with ``seed``."""
    if name not in REGISTRY:
        raise KeyError(f"unknown component {name!r}; known: {', '.join(REGISTRY)}")
    rng = np.random.default_rng(seed)
    return REGISTRY[name].build(B, rng, cfg)


def cotangent(shape, seed) -> np.ndarray:
    """The random cotangent for a non-scalar output: N(0, 1), float32 values."""
    return np.random.default_rng(seed + 7919).standard_normal(tuple(shape)).astype(np.float32)


# =========================================================================== single ops

D, T_LARGE, BATCH = 256, 128, 16          # the "large" GPT's activation shape (16, 128, 256)
QB = 4                                    # --quick: batch 4 instead of 16 for single ops and modules
ACT, ACT_Q = (BATCH, T_LARGE, D), (QB, T_LARGE, D)


@component("embedding", full=dict(vocab=4096, d=D, shape=(BATCH, T_LARGE)), quick=dict(vocab=4096, d=D, shape=(QB, T_LARGE)))
def embedding(B, rng, c):
    """F.embedding: a row gather; the backward scatter-adds rows into the table's gradient."""
    w = B.leaf(draw_float(rng, (c["vocab"], c["d"])))
    idx = B.const(rng.integers(0, c["vocab"], size=c["shape"]))
    return Case(lambda: B.F.embedding(idx, w), [("weight", w)])


@component("linear", full=dict(shape=ACT, d_out=4 * D), quick=dict(shape=ACT_Q, d_out=4 * D), target=1.10)
def linear(B, rng, c):
    """F.linear x Wᵀ + b, (16,128,256) -> 1024 (the MLP's up-projection)."""
    d_in = c["shape"][-1]
    x = B.leaf(draw_float(rng, c["shape"]))
    w = B.leaf(draw_float(rng, (c["d_out"], d_in), 1 / math.sqrt(d_in)))
    b = B.leaf(draw_float(rng, (c["d_out"],), 0.1))
    tokens = int(np.prod(c["shape"][:-1]))
    return Case(lambda: B.F.linear(x, w, b), [("x", x), ("weight", w), ("bias", b)],
                flops=linear_flops(tokens, d_in, c["d_out"]))


@component("softmax", full=dict(shape=(BATCH, 8, T_LARGE, T_LARGE)), quick=dict(shape=(QB, 8, T_LARGE, T_LARGE)),
           target=2.0)
def softmax(B, rng, c):
    """F.softmax over the last dim of attention-score-shaped input (16, 8, 128, 128)."""
    x = B.leaf(draw_float(rng, c["shape"], 2.0))
    return Case(lambda: B.F.softmax(x, dim=-1), [("x", x)])


@component("log_softmax", full=dict(shape=(BATCH * T_LARGE, 1024)), quick=dict(shape=(QB * T_LARGE, 1024)))
def log_softmax(B, rng, c):
    """F.log_softmax over the last dim of (2048, 1024) logits."""
    x = B.leaf(draw_float(rng, c["shape"], 2.0))
    return Case(lambda: B.F.log_softmax(x, dim=-1), [("x", x)])


@component("cross_entropy", full=dict(shape=(BATCH * T_LARGE, 1024)), quick=dict(shape=(QB * T_LARGE, 1024)),
           target=2.0)
def cross_entropy(B, rng, c):
    """F.cross_entropy (log-softmax + mean NLL) of (2048, 1024) logits: a scalar loss."""
    x = B.leaf(draw_float(rng, c["shape"], 2.0))
    t = B.const(rng.integers(0, c["shape"][-1], size=c["shape"][:-1]))
    return Case(lambda: B.F.cross_entropy(x, t), [("logits", x)])


@component("layer_norm", full=dict(shape=ACT), quick=dict(shape=ACT_Q), target=2.0)
def layer_norm(B, rng, c):
    """F.layer_norm over the last dim with gain and bias, (16, 128, 256)."""
    d = c["shape"][-1]
    x = B.leaf(draw_float(rng, c["shape"]))
    w = B.leaf(1.0 + draw_float(rng, (d,), 0.1))
    b = B.leaf(draw_float(rng, (d,), 0.1))
    return Case(lambda: B.F.layer_norm(x, (d,), w, b, 1e-5), [("x", x), ("weight", w), ("bias", b)])


@component("gelu", full=dict(shape=(BATCH, T_LARGE, 4 * D)), quick=dict(shape=(QB, T_LARGE, 4 * D)), target=2.0)
def gelu(B, rng, c):
    """F.gelu (exact, erf) on the MLP's hidden activation (16, 128, 1024)."""
    x = B.leaf(draw_float(rng, c["shape"]))
    return Case(lambda: B.F.gelu(x), [("x", x)])


@component("sdpa", full=dict(batch=BATCH, heads=8, T=T_LARGE, d_head=D // 8),
           quick=dict(batch=QB, heads=8, T=T_LARGE, d_head=D // 8))
def sdpa(B, rng, c):
    """F.scaled_dot_product_attention(q, k, v, is_causal=True), the fused attention core."""
    shape = (c["batch"], c["heads"], c["T"], c["d_head"])
    q, k, v = (B.leaf(draw_float(rng, shape)) for _ in range(3))
    return Case(lambda: B.F.scaled_dot_product_attention(q, k, v, is_causal=True),
                [("q", q), ("k", k), ("v", v)],
                flops=attention_core_flops(c["batch"], c["heads"], c["T"], c["T"], c["d_head"]))


# =========================================================================== modules

def _module_leaves(B, module, extra=()):
    return list(extra) + B.parameters(module)


def self_attention_flops(batch, T, d):
    return linear_flops(batch * T, d, 4 * d) + attention_core_flops(batch, 1, T, T, d)


def _causal_self_attention_case(B, rng, c):
    """models.gpt.CausalSelfAttention on x of shape (batch, T, d); x and the weights get gradients."""
    m = B.prepare(B.model("gpt", "CausalSelfAttention")(c["d"], c["heads"], c["T"], dropout=0.0,
                                                        attn_impl=c["attn_impl"]), rng)
    x = B.leaf(draw_float(rng, (c["batch"], c["T"], c["d"])))
    return Case(lambda: m(x), _module_leaves(B, m, [("x", x)]),
                flops=self_attention_flops(c["batch"], c["T"], c["d"]))


@component("self_attention", full=dict(batch=BATCH, T=T_LARGE, d=D, heads=8, attn_impl="naive"),
           quick=dict(batch=QB, T=T_LARGE, d=D, heads=8, attn_impl="naive"), target=1.10, kind="module")
def self_attention(B, rng, c):
    """models.gpt.CausalSelfAttention (c_attn, causal softmax attention, c_proj)."""
    return _causal_self_attention_case(B, rng, c)


@component("cross_attention", full=dict(batch=BATCH, T=T_LARGE, T_ctx=64, d=D, heads=8, attn_impl="naive"),
           quick=dict(batch=QB, T=T_LARGE, T_ctx=64, d=D, heads=8, attn_impl="naive"), target=1.10, kind="module")
def cross_attention(B, rng, c):
    """models.transformer.MultiHeadAttention(x, context): queries from x, keys/values from context."""
    m = B.prepare(B.model("transformer", "MultiHeadAttention")(c["d"], c["heads"], dropout=0.0,
                                                               attn_impl=c["attn_impl"]), rng)
    x = B.leaf(draw_float(rng, (c["batch"], c["T"], c["d"])))
    ctx = B.leaf(draw_float(rng, (c["batch"], c["T_ctx"], c["d"])))
    b, t, s, d = c["batch"], c["T"], c["T_ctx"], c["d"]
    flops = linear_flops(b * t, d, 2 * d) + linear_flops(b * s, d, 2 * d) + attention_core_flops(b, 1, t, s, d)
    return Case(lambda: m(x, context=ctx), _module_leaves(B, m, [("x", x), ("context", ctx)]), flops=flops)


@component("patch_embed", full=dict(batch=64, image=32, patch=4, channels=3, d=D),
           quick=dict(batch=16, image=32, patch=4, channels=3, d=D), kind="module")
def patch_embed(B, rng, c):
    """models.vit.PatchEmbedding: P×P stride-P patch projection (torch: Conv2d) of 32×32 images."""
    m = B.prepare(B.model("vit", "PatchEmbedding")(c["image"], c["patch"], c["channels"], c["d"]), rng)
    x = B.leaf(draw_float(rng, (c["batch"], c["channels"], c["image"], c["image"])))
    n = (c["image"] // c["patch"]) ** 2
    return Case(lambda: m(x), _module_leaves(B, m, [("images", x)]),
                flops=linear_flops(c["batch"] * n, c["channels"] * c["patch"] ** 2, c["d"]))


def _conv2d_case(B, rng, c):
    x = B.leaf(draw_float(rng, (c["batch"], c["c_in"], c["image"], c["image"])))
    fan_in = c["c_in"] * c["k"] ** 2
    w = B.leaf(draw_float(rng, (c["c_out"], c["c_in"], c["k"], c["k"]), 1 / math.sqrt(fan_in)))
    b = B.leaf(draw_float(rng, (c["c_out"],), 0.1))
    out = c["image"] + 2 * c["pad"] - c["k"] + 1
    return Case(lambda: B.F.conv2d(x, w, b, padding=c["pad"]), [("x", x), ("weight", w), ("bias", b)],
                flops=2 * c["batch"] * c["c_out"] * out * out * fan_in)


@component("conv2d_lenet", full=dict(batch=64, c_in=6, c_out=16, image=12, k=5, pad=0),
           quick=dict(batch=16, c_in=6, c_out=16, image=12, k=5, pad=0))
def conv2d_lenet(B, rng, c):
    """F.conv2d, LeNet's second layer: 6 -> 16 channels, 5×5, on 12×12 maps (28×28 digits after conv+pool)."""
    return _conv2d_case(B, rng, c)


@component("conv2d_cifar", full=dict(batch=32, c_in=64, c_out=64, image=32, k=3, pad=1),
           quick=dict(batch=4, c_in=64, c_out=64, image=32, k=3, pad=1))
def conv2d_cifar(B, rng, c):
    """F.conv2d, a CIFAR-sized layer: 64 -> 64 channels, 3×3, padding 1, on 32×32 maps."""
    return _conv2d_case(B, rng, c)


@component("transformer_block", full=dict(batch=BATCH, T=T_LARGE, d=D, heads=8, attn_impl="naive"),
           quick=dict(batch=QB, T=T_LARGE, d=D, heads=8, attn_impl="naive"), kind="module")
def transformer_block(B, rng, c):
    """models.gpt.TransformerBlock: pre-LN causal attention + GELU MLP with residuals."""
    m = B.prepare(B.model("gpt", "TransformerBlock")(c["d"], c["heads"], c["T"], dropout=0.0,
                                                     attn_impl=c["attn_impl"]), rng)
    x = B.leaf(draw_float(rng, (c["batch"], c["T"], c["d"])))
    flops = self_attention_flops(c["batch"], c["T"], c["d"]) + linear_flops(c["batch"] * c["T"], c["d"], 8 * c["d"])
    return Case(lambda: m(x), _module_leaves(B, m, [("x", x)]), flops=flops)


# =========================================================================== training steps

GPT_SIZES = {
    "tiny": dict(vocab=27, d=32, heads=4, layers=2, T=8, batch=8),
    "tutorial": dict(vocab=27, d=64, heads=4, layers=4, T=16, batch=32),
    "large": dict(vocab=27, d=256, heads=8, layers=4, T=128, batch=16),
}


def _adamw(B, params):
    return B.AdamW([p for _, p in params], lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)


def gpt_step(B, rng, c):
    """GPTLanguageModel training step: forward with loss, backward, AdamW step (dropout 0)."""
    m = B.prepare(B.model("gpt", "GPTLanguageModel")(c["vocab"], c["d"], c["heads"], c["layers"], c["T"],
                                                     dropout=0.0, attn_impl=c.get("attn_impl", "naive")), rng)
    idx = B.const(rng.integers(0, c["vocab"], size=(c["batch"], c["T"])))
    targets = B.const(rng.integers(0, c["vocab"], size=(c["batch"], c["T"])))
    params = B.parameters(m)
    flops = gpt_train_flops(c["batch"], c["T"], c["d"], c["layers"], c["vocab"])
    def loss(idx, targets):
        return m(idx, targets)[1]

    return Case(lambda: loss(idx, targets), params, optimizer=_adamw(B, params),
                flops=flops // 3, train_flops=flops,
                info={"params": int(sum(np.prod(tuple(p.shape)) for _, p in params)),
                      "tokens": c["batch"] * c["T"]}, step_inputs=(idx, targets), forward_on=loss)


for _size, _target in (("tiny", 0.5), ("tutorial", 0.85), ("large", 0.95)):   # issue 33: tutorial, large
    component(f"gpt_{_size}", full=dict(GPT_SIZES[_size], attn_impl="naive"), target=_target, kind="train")(gpt_step)
# the large step with the other attention paths of both twins: "fused" (ours: one SDPA Function
# saving the probabilities; torch: F.scaled_dot_product_attention) and "flash" (ours: the tiled
# flash_attention; torch's twin runs its fused kernel for both)
for _impl in ("fused", "flash"):
    component(f"gpt_large_{_impl}", full=dict(GPT_SIZES["large"], attn_impl=_impl), kind="train",
              variant=True)(gpt_step)


@component("vit_step", full=dict(batch=32, image=32, patch=4, channels=3, classes=10, d=64, heads=4, layers=4,
                                 attn_impl="naive"), kind="train")
def vit_step(B, rng, c):
    """ViT training step (32×32 images, 4×4 patches, d 64, 4 layers): forward, backward, AdamW."""
    m = B.prepare(B.model("vit", "ViT")(c["image"], c["patch"], c["channels"], c["classes"], d_model=c["d"],
                                        n_heads=c["heads"], n_layers=c["layers"], dropout=0.0,
                                        attn_impl=c["attn_impl"]), rng)
    x = B.const(draw_float(rng, (c["batch"], c["channels"], c["image"], c["image"])))
    y = B.const(rng.integers(0, c["classes"], size=(c["batch"],)))
    params = B.parameters(m)
    n_tokens = (c["image"] // c["patch"]) ** 2 + 1
    flops = vit_train_flops(c["batch"], n_tokens, c["channels"] * c["patch"] ** 2, c["d"], c["layers"], c["classes"])
    def loss(x, y):
        return m(x, y)[1]

    return Case(lambda: loss(x, y), params, optimizer=_adamw(B, params), flops=flops // 3, train_flops=flops,
                info={"params": int(sum(np.prod(tuple(p.shape)) for _, p in params))}, step_inputs=(x, y),
                forward_on=loss)


# =========================================================================== sweeps (section 11, flash vs naive)

@component("attn_layer", full=dict(batch=1, T=256, d=64, heads=4, attn_impl="naive"), kind="sweep")
def attn_layer(B, rng, c):
    """One causal self-attention layer at sequence length T (the tutorial's section 11)."""
    return _causal_self_attention_case(B, rng, c)


def naive_attention(B, q, k, v, causal=True):
    """softmax(Q Kᵀ/√d + mask) V from primitives: materialises the T×T scores and probabilities."""
    t_q, t_k = q.shape[-2], k.shape[-2]
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        s = s.masked_fill(B.const(np.triu(np.ones((t_q, t_k), dtype=bool), 1)), float("-inf"))
    return B.F.softmax(s, dim=-1) @ v


@component("attn_core", full=dict(batch=1, heads=4, T=256, d_head=16, impl="naive"), kind="sweep")
def attn_core(B, rng, c):
    """Causal attention core on (batch, heads, T, d_head): impl naive (T×T scores from primitives),
    fused (F.scaled_dot_product_attention) or flash (ours: tiled flash_attention; torch: its fused SDPA)."""
    shape = (c["batch"], c["heads"], c["T"], c["d_head"])
    q, k, v = (B.leaf(draw_float(rng, shape)) for _ in range(3))
    impl = c["impl"]
    if impl == "naive":
        fn = lambda: naive_attention(B, q, k, v)  # noqa: E731
    elif impl == "fused":
        fn = lambda: B.F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    elif impl == "flash":
        fn = lambda: B.flash_attention(q, k, v, is_causal=True)  # noqa: E731
    else:
        raise ValueError(f"attn_core: impl must be naive, fused or flash, got {impl!r}")
    return Case(fn, [("q", q), ("k", k), ("v", v)],
                flops=attention_core_flops(c["batch"], c["heads"], c["T"], c["T"], c["d_head"]))
