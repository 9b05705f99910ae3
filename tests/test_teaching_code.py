"""Small PyTorch models written the way teaching code writes them run on tinygrad_tx with the
word ``torch`` replaced, and match PyTorch: character-level bigram, MLP, RNN and GRU cells,
bag-of-words, a Transformer with ``F.scaled_dot_product_attention``, ``nn.init`` through
``Module.apply``, and ``configure_optimizers``-style parameter groups.

Each model's source below is ordinary PyTorch (written for this test). It is executed twice —
as written, and with ``torch`` -> ``tinygrad_tx`` — the torch copy gets our initial weights via
``load_state_dict``, and both train for a few AdamW steps in float64 on the same batches: every
loss and every parameter gradient of the first step must agree to 1e-10.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import tinygrad_tx

pytestmark = pytest.mark.cpu_only(reason="the teaching models run on torch as written: their tensors are built on the CPU")

MODELS = r'''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Bigram(nn.Module):
    def __init__(self, vocab_size, block_size):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros((vocab_size, vocab_size)))

    def forward(self, idx, targets=None):
        logits = self.logits[idx]
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class MLP(nn.Module):
    def __init__(self, vocab_size, block_size, n_embd=8, n_hidden=16):
        super().__init__()
        self.block_size = block_size
        self.vocab_size = vocab_size
        self.wte = nn.Embedding(vocab_size + 1, n_embd)     # one extra token: the blank before the start
        self.mlp = nn.Sequential(
            nn.Linear(block_size * n_embd, n_hidden),
            nn.Tanh(),
            nn.Linear(n_hidden, vocab_size),
        )

    def forward(self, idx, targets=None):
        embs = []
        for k in range(self.block_size):
            tok_emb = self.wte(idx)
            idx = torch.roll(idx, 1, 1)
            idx[:, 0] = self.vocab_size
            embs.append(tok_emb)
        x = torch.cat(embs, -1)
        logits = self.mlp(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class RNNCell(nn.Module):
    def __init__(self, n_embd, n_hidden):
        super().__init__()
        self.xh_to_h = nn.Linear(n_embd + n_hidden, n_hidden)

    def forward(self, xt, hprev):
        return F.tanh(self.xh_to_h(torch.cat([xt, hprev], dim=1)))


class GRUCell(nn.Module):
    def __init__(self, n_embd, n_hidden):
        super().__init__()
        self.xh_to_z = nn.Linear(n_embd + n_hidden, n_hidden)
        self.xh_to_r = nn.Linear(n_embd + n_hidden, n_hidden)
        self.xh_to_hbar = nn.Linear(n_embd + n_hidden, n_hidden)

    def forward(self, xt, hprev):
        xh = torch.cat([xt, hprev], dim=1)
        r = F.sigmoid(self.xh_to_r(xh))
        xhr = torch.cat([xt, hprev * r], dim=1)
        hbar = F.tanh(self.xh_to_hbar(xhr))
        z = F.sigmoid(self.xh_to_z(xh))
        return (1 - z) * hprev + z * hbar


class RNN(nn.Module):
    def __init__(self, vocab_size, block_size, cell_type="rnn", n_embd=8, n_hidden=12):
        super().__init__()
        self.start = nn.Parameter(torch.zeros(1, n_hidden))
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.cell = RNNCell(n_embd, n_hidden) if cell_type == "rnn" else GRUCell(n_embd, n_hidden)
        self.lm_head = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        emb = self.wte(idx)
        hprev = self.start.expand((b, -1))
        hiddens = []
        for i in range(t):
            xt = emb[:, i, :]
            hprev = self.cell(xt, hprev)
            hiddens.append(hprev)
        hidden = torch.stack(hiddens, 1)
        logits = self.lm_head(hidden)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class CausalBoW(nn.Module):
    def __init__(self, block_size):
        super().__init__()
        self.block_size = block_size
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        att = torch.zeros((B, T, T), dtype=x.dtype, device=x.device)
        att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ x


class BoW(nn.Module):
    def __init__(self, vocab_size, block_size, n_embd=8, n_hidden=16):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.cbow = CausalBoW(block_size)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, n_hidden), c_proj=nn.Linear(n_hidden, n_embd)))
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.cbow(x)
        x = x + self.mlp.c_proj(F.tanh(self.mlp.c_fc(x)))
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class SelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = SelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(0.0))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, vocab_size, block_size, n_embd=16, n_head=2, n_layer=2):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.block_size
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay = [p for n, p in param_dict.items() if p.dim() >= 2]
        no_decay = [p for n, p in param_dict.items() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx
'''

VOCAB, BLOCK = 7, 6
BUILDERS = {
    "bigram": lambda ns: ns["Bigram"](VOCAB, BLOCK),
    "mlp": lambda ns: ns["MLP"](VOCAB, BLOCK),
    "rnn": lambda ns: ns["RNN"](VOCAB, BLOCK, "rnn"),
    "gru": lambda ns: ns["RNN"](VOCAB, BLOCK, "gru"),
    "bow": lambda ns: ns["BoW"](VOCAB, BLOCK),
    "transformer": lambda ns: ns["Transformer"](VOCAB, BLOCK),
}


def _namespaces():
    ours, theirs = {"__name__": "teaching"}, {"__name__": "teaching"}
    exec(compile(re.sub(r"\btorch\b", "tinygrad_tx", MODELS), "<teaching>", "exec"), ours)
    exec(compile(MODELS, "<teaching>", "exec"), theirs)
    return ours, theirs


@pytest.fixture(scope="module")
def namespaces():
    return _namespaces()


def _batches(seed, n=4):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.integers(0, VOCAB, size=(5, BLOCK))
        y = rng.integers(0, VOCAB, size=(5, BLOCK))
        y[0, -2:] = -1                     # ignore_index, as makemore pads its targets
        out.append((x, y))
    return out


def _optimizer(model, lib):
    if hasattr(model, "configure_optimizers"):
        return model.configure_optimizers(0.1, 3e-3, (0.9, 0.99))
    return lib.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_teaching_model_trains_like_pytorch(namespaces, name):
    ours_ns, theirs_ns = namespaces
    tinygrad_tx.manual_seed(0)
    ours = BUILDERS[name](ours_ns).double()
    theirs = BUILDERS[name](theirs_ns).double()
    if name == "bigram":   # zeros are a blind start for gradients: give both the same random table
        with tinygrad_tx.no_grad():
            ours.logits.copy_(tinygrad_tx.randn(VOCAB, VOCAB, dtype=tinygrad_tx.float64))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in ours.state_dict().items()})
    opt, t_opt = _optimizer(ours, tinygrad_tx), _optimizer(theirs, torch)
    assert len(opt.param_groups) == len(t_opt.param_groups)
    for step, (x, y) in enumerate(_batches(1)):
        _, loss = ours(tinygrad_tx.tensor(x), tinygrad_tx.tensor(y))
        _, t_loss = theirs(torch.tensor(x), torch.tensor(y))
        opt.zero_grad(set_to_none=True)
        t_opt.zero_grad(set_to_none=True)
        loss.backward()
        t_loss.backward()
        assert abs(loss.item() - t_loss.item()) <= 1e-10 * abs(t_loss.item()), (step, loss.item(), t_loss.item())
        if step == 0:
            t_params = dict(theirs.named_parameters())
            for pname, p in ours.named_parameters():
                tg_ = t_params[pname].grad
                assert tg_ is not None and torch.any(tg_ != 0), f"{pname}: zero reference gradient"
                ref = tg_.numpy()
                err = np.max(np.abs(p.grad.numpy() - ref)) / np.max(np.abs(ref))
                assert err <= 1e-10, (pname, err)
        opt.step()
        t_opt.step()


def test_transformer_generates_with_top_k(namespaces):
    ours_ns, _ = namespaces
    tinygrad_tx.manual_seed(3)
    model = BUILDERS["transformer"](ours_ns)
    out = model.generate(tinygrad_tx.zeros((2, 1), dtype=tinygrad_tx.long), max_new_tokens=8, top_k=3)
    assert out.shape == (2, 9) and out.dtype == tinygrad_tx.long
    assert int(out.max()) < VOCAB and int(out.min()) >= 0
