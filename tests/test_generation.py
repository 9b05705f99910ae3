"""Generation (``tinygrad_tx.generation``) against its torch twin (``reference.generation``).

* the sampling step: filtered distributions equal to 1e-12 (float64), the same token for
  the same uniform draw, for hypothesis-drawn logits with ties, -inf and extreme values;
  plus independent oracles (a plain-Python nucleus, the exact inverse-CDF measure);
* KV caches: cached logits equal the uncached forward of every prefix to 1e-10 (float64),
  GPT and encoder-decoder, hypothesis over configurations and ways of chunking the prompt;
* ``generate``: same ids with and without the cache, reproducible seeds, the same ids as
  the twin's tutorial loop given the same uniforms, stopping at '$', argument errors.

Numerical ambiguity. Our softmax and torch's differ by a few ulps, so a uniform draw (or a
top-p threshold) that lands within ~1e-12 of a boundary of the cumulative distribution may
legitimately go either way. The tests accept a disagreement only when such a boundary is
that close, and say so in the assertion message.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import event, given
from hypothesis import strategies as st

import reference as R
import reference.generation as RG
import tinygrad_tx as tg
from reference.testing import DEVICE, rel_err
from tinygrad_tx.testing.strategies import seeds
from tinygrad_tx import generation as G
from tinygrad_tx import models as M
from tinygrad_tx.data import CharVocab

PROB_TOL = 1e-12    # filtered probabilities, ours vs torch (float64)
BOUNDARY = 1e-12    # a draw this close to a CDF boundary may go either way
CACHE_TOL = 1e-10   # cached vs uncached logits, relative (float64)


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """The twins run tiny tensors: one thread avoids oversubscribing a shared CPU (restored after)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# =========================================================================== sampling step

special = st.sampled_from([0.0, 1.0, -1.0, 2.5, 1e4, -1e4, 1e8, -1e8, -math.inf])


@st.composite
def logits_rows(draw):
    """(B, V) float64 logits: ordinary values, repeated values (ties), +-1e4/1e8 and -inf entries;
    every row keeps a finite logit."""
    B, V = draw(st.integers(1, 3)), draw(st.integers(1, 9))
    vals = st.one_of(st.floats(-30, 30, allow_nan=False), special)
    rows = []
    for _ in range(B):
        row = [draw(vals) for _ in range(V)]
        if draw(st.booleans()) and V > 1:            # force a tie
            i, j = draw(st.integers(0, V - 1)), draw(st.integers(0, V - 1))
            row[i] = row[j]
        if all(x == -math.inf for x in row):
            row[draw(st.integers(0, V - 1))] = draw(st.floats(-30, 30))
        rows.append(row)
    return np.array(rows, dtype=np.float64)


knobs = st.fixed_dictionaries({
    "temperature": st.sampled_from([0.0, 1e-5, 0.3, 1.0, 1.7, 10.0]),
    "top_k": st.one_of(st.none(), st.integers(1, 10)),
    "top_p": st.one_of(st.none(), st.sampled_from([1.0, 0.5, 0.9, 1e-9]), st.floats(0.01, 1.0)),
})
uniforms = st.floats(0.0, 1.0, exclude_max=True)


def _near_top_p_threshold(logits, kw) -> bool:
    """True when some token's ranked-above mass lies within BOUNDARY of top_p (ours or torch's
    rounding may then keep or drop it)."""
    if kw["top_p"] is None:
        return False
    p = G.next_token_probs(logits, kw["temperature"], kw["top_k"], None)
    order = np.argsort(-p, axis=1, kind="stable")
    before = np.cumsum(np.take_along_axis(p, order, axis=1), axis=1) - np.take_along_axis(p, order, axis=1)
    return bool((np.abs(before - kw["top_p"]) <= BOUNDARY).any())


def _near_cdf_boundary(probs, u) -> np.ndarray:
    cdf = np.cumsum(probs, axis=1)
    return (np.abs(cdf - (u * cdf[:, -1])[:, None]) <= BOUNDARY).any(axis=1)


def _twin(fn, logits, **kw):
    return fn(torch.from_numpy(logits.copy()).to(DEVICE), **kw).cpu().numpy()


def _both_or_neither_raise(logits, kw):
    """Run our filter and the twin's; they must raise the same error type or both succeed."""
    try:
        ours = G.filter_logits(logits, **kw)
    except ValueError as e:
        with pytest.raises(ValueError, match="overflows"):
            RG.filter_logits(torch.from_numpy(logits).to(DEVICE), **kw)
        assert "overflows" in str(e)
        return None
    return ours


@given(logits_rows(), knobs, st.data())
def test_sampling_matches_torch_twin(logits, kw, data):
    """Same filtered distribution (1e-12) and the same token for the same uniform draws."""
    ours = _both_or_neither_raise(logits, kw)
    if ours is None:
        return
    theirs = _twin(RG.filter_logits, logits, **kw)
    p_ours = G.next_token_probs(logits, **kw)
    p_theirs = _twin(RG.next_token_probs, logits, **kw)
    if not np.array_equal(np.isfinite(ours), np.isfinite(theirs)):
        assert _near_top_p_threshold(logits, kw), (logits, kw, ours, theirs)
        event("top-p kept sets differ at a threshold within 1e-12")
        return
    assert np.abs(p_ours - p_theirs).max() <= PROB_TOL, (logits, kw, p_ours, p_theirs)
    assert np.allclose(p_ours.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    u = np.array([data.draw(uniforms) for _ in range(logits.shape[0])])
    a = G.sample_next(logits, uniform=u, **kw)
    b = _twin(RG.sample_next, logits, uniform=u, **kw)
    differ = a != b
    if differ.any():
        event("draw within 1e-12 of a CDF boundary picked differently")
    assert not (differ & ~_near_cdf_boundary(p_ours, u)).any(), (logits, kw, u, a, b)
    assert (p_ours[np.arange(len(a)), a] > 0).all(), "sampled a token of probability 0"
    g_ours = G.sample_next(logits, greedy=True, **kw)
    assert np.array_equal(g_ours, _twin(RG.sample_next, logits, greedy=True, **kw))
    assert np.array_equal(g_ours, [int(np.flatnonzero(r == r.max())[0]) for r in logits])


def _nucleus_oracle(logits, temperature, top_k, top_p):
    """Section 9.2 in plain Python, one row at a time: temperature, top-k by value (ties kept),
    then the smallest descending-probability prefix (ties by lower id) reaching top_p."""
    out = []
    for row in logits:
        z = [x / max(temperature, 1e-5) for x in row]
        if top_k is not None and top_k < len(z):
            kth = sorted(z, reverse=True)[top_k - 1]
            z = [x if x >= kth else -math.inf for x in z]
        if top_p is not None:
            m = max(z)
            e = [math.exp(x - m) for x in z]
            p = [x / sum(e) for x in e]
            mass, kept = 0.0, set()
            for i in sorted(range(len(z)), key=lambda i: (-p[i], i)):
                if mass >= top_p:
                    break
                kept.add(i)
                mass += p[i]
            z = [x if i in kept else -math.inf for i, x in enumerate(z)]
        m = max(z)
        e = [math.exp(x - m) for x in z]
        out.append([x / sum(e) for x in e])
    return np.array(out)


@given(logits_rows(), knobs)
def test_next_token_probs_match_plain_python_oracle(logits, kw):
    try:
        ours = G.next_token_probs(logits, **kw)
    except ValueError:
        return  # overflow, covered by the twin test
    oracle = _nucleus_oracle(logits, **kw)
    if not np.array_equal(ours > 0, oracle > 0):
        assert _near_top_p_threshold(logits, kw), (logits, kw, ours, oracle)
        event("top-p kept sets differ at a threshold within 1e-12")
        return
    assert np.abs(ours - oracle).max() <= PROB_TOL, (logits, kw, ours, oracle)


def test_top_k_is_the_tutorials_code_and_keeps_ties():
    """The tutorial's ``logits[logits < v[:, [-1]]] = -inf``: ties with the k-th logit survive."""
    z = np.array([[1.0, 3.0, 2.0, 3.0, 2.0, 0.0]])
    kept = np.isfinite(G.filter_logits(z, top_k=3))
    assert kept.tolist() == [[False, True, True, True, True, False]]
    logits = torch.from_numpy(z.copy()).to(DEVICE)
    v, _ = torch.topk(logits, 3)
    logits[logits < v[:, [-1]]] = -float("Inf")
    assert np.abs(G.next_token_probs(z, top_k=3) - torch.softmax(logits, -1).cpu().numpy()).max() <= PROB_TOL
    assert np.isfinite(G.filter_logits(z, top_k=100)).all()


def test_top_p_worked_examples():
    p = np.array([[0.1, 0.4, 0.2, 0.3]])
    z = np.log(p)
    assert np.isfinite(G.filter_logits(z, top_p=0.4)).tolist() == [[False, True, False, False]]
    assert np.isfinite(G.filter_logits(z, top_p=0.41)).tolist() == [[False, True, False, True]]
    assert np.isfinite(G.filter_logits(z, top_p=1.0)).all()
    assert np.isfinite(G.filter_logits(z, top_p=1e-9)).sum() == 1            # always one token
    tie = np.log(np.array([[0.25, 0.25, 0.25, 0.25]]))
    assert np.isfinite(G.filter_logits(tie, top_p=0.5)).tolist() == [[True, True, False, False]]  # lower ids win
    np.testing.assert_allclose(G.next_token_probs(z, top_p=0.41), [[0, 4 / 7, 0, 3 / 7]], rtol=1e-14)


def test_inverse_cdf_gives_each_token_its_probability():
    """The measure of {u in [0, 1): token i} is p_i: a uniform grid of N midpoints lands on token
    i N p_i +- 1 times (torch.multinomial samples the same probabilities)."""
    probs = np.array([[0.0, 0.125, 0.0, 0.5, 0.375, 0.0], [0.3, 0.0, 0.0, 0.0, 0.0, 0.7]])
    N = 100_000
    u = (np.arange(N) + 0.5) / N
    for row in probs:
        picks = G.inverse_cdf(np.repeat(row[None], N, axis=0), u)
        counts = np.bincount(picks, minlength=len(row))
        assert np.abs(counts - N * row).max() <= 1, counts
        twin = RG.inverse_cdf(torch.from_numpy(np.repeat(row[None], N, axis=0)).to(DEVICE), torch.from_numpy(u).to(DEVICE)).cpu().numpy()
        assert np.array_equal(picks, twin)
    # u just below 1 with a cumsum that rounds under u * total can never select a 0-probability tail
    tail = np.array([[0.6, 0.4, 0.0, 0.0]])
    assert G.inverse_cdf(tail, np.array([np.nextafter(1.0, 0)]))[0] == 1


def test_temperature_limits():
    z = np.array([[1.0, 2.0, 2.0 - 1e-3, -5.0]])
    near = G.next_token_probs(z, temperature=0.0)  # divided by 1e-5: the argmax takes ~all mass
    assert near[0, 1] == 1.0 and near[0, 2] < 1e-40
    flat = G.next_token_probs(z, temperature=1e6)
    np.testing.assert_allclose(flat, 0.25, rtol=1e-5)
    with pytest.raises(ValueError, match="overflows"):
        G.sample_next(np.array([[1e305, 0.0]]), temperature=0.0)
    assert G.sample_next(np.array([[1e305, 0.0]]), temperature=0.0, greedy=True)[0] == 0


def test_sample_next_uses_the_generator():
    z = np.zeros((4, 5))
    a = G.sample_next(z, generator=np.random.default_rng(7))
    b = G.inverse_cdf(np.full((4, 5), 0.2), np.random.default_rng(7).random(4))
    assert np.array_equal(a, b)
    tg.manual_seed(3)
    c = G.sample_next(z)
    tg.manual_seed(3)
    assert np.array_equal(c, G.sample_next(z))


@pytest.mark.parametrize("kw, match", [
    ({"temperature": -0.5}, r"temperature.*-0\.5"),
    ({"temperature": float("nan")}, "temperature"),
    ({"top_k": 0}, r"top_k.*0"),
    ({"top_k": -3}, r"top_k.*-3"),
    ({"top_p": 0.0}, r"top_p.*0\.0"),
    ({"top_p": 1.5}, r"top_p.*1\.5"),
    ({"top_p": float("nan")}, "top_p"),
    ({"uniform": [0.2, 1.0]}, r"\[0, 1\)"),
    ({"uniform": [0.2]}, r"shape \(2,\)"),
])
def test_sampling_rejects_bad_arguments(kw, match):
    for fn, z in ((G.sample_next, np.zeros((2, 3))), (RG.sample_next, torch.zeros(2, 3, dtype=torch.float64, device=DEVICE))):
        with pytest.raises(ValueError, match=match):
            fn(z, **kw)


@pytest.mark.parametrize("z, match", [
    (np.array([[0.0, np.nan]]), "nan"),
    (np.array([[0.0, np.inf]]), r"\+inf"),
    (np.array([[0.0, 1.0], [-np.inf, -np.inf]]), "row 1"),
    (np.zeros(3), r"shape \(batch, vocab_size\)"),
])
def test_sampling_rejects_bad_logits(z, match):
    with pytest.raises(ValueError, match=match):
        G.sample_next(z)
    with pytest.raises(ValueError, match=match):
        RG.sample_next(torch.from_numpy(z).to(DEVICE))


def test_sampling_type_errors():
    with pytest.raises(TypeError, match="top_k"):
        G.sample_next(np.zeros((1, 2)), top_k=2.5)
    with pytest.raises(TypeError, match="greedy"):
        G.sample_next(np.zeros((1, 2)), greedy="yes")
    with pytest.raises(TypeError, match="floating"):
        G.sample_next(np.zeros((1, 2), dtype=np.int64))


# =========================================================================== KV cache


def _gpt(V, d_model, n_heads, n_layers, block_size, seed, attn_impl="fused", dtype=np.float64):
    tg.manual_seed(seed)
    m = M.GPTLanguageModel(V, d_model, n_heads, n_layers, block_size, dropout=0.1, attn_impl=attn_impl)
    return m.to(dtype).eval()


def _seq2seq(V_src, V_tgt, d_model, n_heads, n_layers, block_size, src_block, seed, attn_impl="fused"):
    tg.manual_seed(seed)
    m = M.EncoderDecoder(V_src, V_tgt, d_model, n_heads, n_layers, n_layers, block_size, src_block,
                         dropout=0.1, attn_impl=attn_impl)
    return m.double().eval()


def _chunks(draw, T):
    """Split range(T) into a prefill and later chunks (mostly single tokens)."""
    bounds, start = [], 0
    first = draw(st.integers(1, T))
    bounds.append((0, first))
    start = first
    while start < T:
        step = draw(st.sampled_from([1, 1, 1, 2, 3]))
        bounds.append((start, min(T, start + step)))
        start = min(T, start + step)
    return bounds


def _architecture(data):
    """d_model, n_heads, n_layers, attn_impl of a small random model."""
    n_heads = data.draw(st.sampled_from([1, 2]), label="n_heads")
    d_model = n_heads * data.draw(st.sampled_from([2, 4]), label="d_k")
    n_layers = data.draw(st.integers(1, 2), label="n_layers")
    return d_model, n_heads, n_layers, data.draw(st.sampled_from(M.ATTN_IMPLS), label="attn_impl")


@given(st.data(), seeds)
def test_gpt_cached_logits_equal_uncached(data, seed):
    d_model, n_heads, n_layers, attn_impl = _architecture(data)
    block_size = data.draw(st.integers(1, 8), label="block_size")
    V, B = data.draw(st.integers(2, 6), label="V"), data.draw(st.integers(1, 2), label="B")
    model = _gpt(V, d_model, n_heads, n_layers, block_size, seed % 1000, attn_impl)
    T = data.draw(st.integers(1, block_size), label="T")
    ids = np.random.default_rng(seed).integers(0, V, (B, T))
    cache = G.GPTKVCache(model, B)
    with tg.no_grad():
        for start, end in _chunks(data.draw, T):
            cached = G.gpt_forward_cached(model, ids[:, start:end], cache)._data
            uncached = model(ids[:, :end])[0]._data[:, start:end]  # the tutorial's step: the whole prefix
            assert cached.dtype == np.float64
            assert rel_err(cached, uncached) <= CACHE_TOL, (start, end, rel_err(cached, uncached))
    assert cache.length == T and np.array_equal(cache.tokens[:, :T], ids)


@given(st.data(), seeds)
def test_seq2seq_cached_logits_equal_uncached(data, seed):
    d_model, n_heads, n_layers, attn_impl = _architecture(data)
    block_size = data.draw(st.integers(1, 7), label="block_size")
    S, B = data.draw(st.integers(1, 6), label="S"), data.draw(st.integers(1, 3), label="B")
    model = _seq2seq(7, 5, d_model, n_heads, n_layers, block_size, 6, seed % 1000, attn_impl)
    rng = np.random.default_rng(seed)
    src, T = rng.integers(0, 7, (B, S)), data.draw(st.integers(1, block_size), label="T")
    tgt = rng.integers(0, 5, (B, T))
    pad = None
    if data.draw(st.booleans(), label="padded"):
        lengths = rng.integers(1, S + 1, B)
        pad = np.arange(S)[None, :] < lengths[:, None]   # True = real token
    cache = G.Seq2SeqKVCache(model, src, pad)
    with tg.no_grad():
        for start, end in _chunks(data.draw, T):
            cached = G.decoder_forward_cached(model, tgt[:, start:end], cache)._data
            uncached = model(src, tgt[:, :end], src_padding_mask=pad)[0]._data[:, start:end]
            assert rel_err(cached, uncached) <= CACHE_TOL, (start, end, rel_err(cached, uncached))


def test_cache_is_preallocated_and_float32_follows_the_model():
    model = _gpt(5, 8, 2, 2, 6, 0, dtype=np.float32)
    cache = G.GPTKVCache(model, 2)
    buffers = [id(k) for k in cache.keys]
    ids = np.random.default_rng(0).integers(0, 5, (2, 6))
    with tg.no_grad():
        full = model(ids)[0]._data
    out = [G.gpt_forward_cached(model, ids[:, i:i + 1], cache)._data for i in range(6)]
    assert [id(k) for k in cache.keys] == buffers and cache.keys[0].shape == (2, 2, 6, 4)
    assert cache.keys[0].dtype == np.float32 and out[0].dtype == np.float32
    assert rel_err(np.concatenate(out, 1), full) <= 1e-5


def test_cache_errors():
    model = _gpt(5, 8, 2, 1, 4, 0)
    cache = G.GPTKVCache(model, 1)
    G.gpt_forward_cached(model, [[1, 2, 3]], cache)
    with pytest.raises(ValueError, match=r"3 cached \+ 2 new tokens exceed block_size=4"):
        G.gpt_forward_cached(model, [[1, 2]], cache)
    with pytest.raises(ValueError, match="batch size 1"):
        G.gpt_forward_cached(model, [[1], [2]], cache)
    with pytest.raises(ValueError, match="outside"):
        G.gpt_forward_cached(model, [[5]], cache)
    model.train()
    with pytest.raises(ValueError, match=r"eval\(\)"):
        G.gpt_forward_cached(model, [[1]], cache)
    with pytest.raises(TypeError, match="GPTLanguageModel"):
        G.GPTKVCache(M.NeuralBigram(5))
    with pytest.raises(TypeError, match="EncoderDecoder"):
        G.Seq2SeqKVCache(model, [[1]])
    cache.reset()
    assert cache.length == 0


# =========================================================================== generate


def _twin_gpt(model, **kw):
    twin = R.GPTLanguageModel(model.vocab_size, model.blocks[0].attn.d_model, model.blocks[0].attn.n_heads,
                              len(model.blocks), model.block_size, **kw).double().to(DEVICE)
    twin.load_state_dict(model.state_dict())
    return twin


GEN_KNOBS = [
    dict(greedy=True),
    dict(temperature=1.0),
    dict(temperature=0.7, top_k=3),
    dict(temperature=1.3, top_p=0.8),
    dict(temperature=0.9, top_k=4, top_p=0.95),
]


@pytest.mark.parametrize("kw", GEN_KNOBS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_generate_cached_uncached_and_twin_agree(kw):
    """Same seed -> same ids with the cache, without it, and in the torch twin's tutorial loop fed
    the same uniforms; past block_size too (the cache then recomputes the cropped window)."""
    model = _gpt(11, 16, 2, 2, 8, 5)
    prompt = np.array([[0, 3, 4], [0, 7, 7]])
    n = 12  # runs 7 tokens past block_size
    cached = G.generate(model, prompt, n, seed=42, stop_token=None, **kw)
    uncached = G.generate(model, prompt, n, seed=42, stop_token=None, use_cache=False, **kw)
    assert cached.shape == (2, 3 + n)
    assert np.array_equal(cached, uncached)
    draws = np.random.default_rng(42).random((n, 2))
    twin = RG.generate(_twin_gpt(model), torch.from_numpy(prompt).to(DEVICE), n, stop_token=None, uniforms=draws, **kw)
    assert np.array_equal(cached, twin.cpu().numpy())
    assert np.array_equal(G.generate(model, prompt, n, seed=42, stop_token=None, **kw), cached)  # reproducible


def test_cache_handles_long_prompts_and_unrelated_sequences():
    """A prompt longer than block_size is cropped like the tutorial's; a sequence that does not
    continue the cached tokens makes NextLogits refill the cache instead of reusing it."""
    model = _gpt(7, 8, 2, 2, 5, 9)
    long_prompt = np.random.default_rng(0).integers(0, 7, (2, 9))
    a = G.generate(model, long_prompt, 4, seed=0, stop_token=None)
    assert np.array_equal(a, G.generate(model, long_prompt, 4, seed=0, stop_token=None, use_cache=False))
    assert np.array_equal(a[:, :9], long_prompt)
    with tg.no_grad():
        step = G.NextLogits(model, 1, use_cache=True)
        step(np.array([[1, 2, 3]]))
        other = step(np.array([[4, 2, 3, 1]]))   # not a continuation of [1, 2, 3]
        assert rel_err(other, model(np.array([[4, 2, 3, 1]]))[0]._data[:, -1]) <= CACHE_TOL
        assert step.cache.tokens[0, :4].tolist() == [4, 2, 3, 1] and step.cache.length == 4


def test_generate_stops_at_sentinel_per_row():
    """A bigram table that walks i -> i+1 (mod V) greedily: from 3 the names sentinel '$' (0)
    comes after V-1; rows stop separately and are then filled with '$'."""
    V = 6
    model = M.NeuralBigram(V).double()
    model.logits_table.weight._data[:] = np.eye(V)[(np.arange(V) + 1) % V] * 10
    out = G.generate(model, [[3], [1]], 20, greedy=True, use_cache=False)
    assert out.tolist() == [[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 0]]
    assert G.generate(model, [2], 20, greedy=True, use_cache=False).tolist() == [2, 3, 4, 5, 0]
    assert G.generate(model, [2], 2, greedy=True, use_cache=False).tolist() == [2, 3, 4]   # max_new_tokens
    assert G.generate(model, [2], 0, use_cache=False).tolist() == [2]
    assert len(G.generate(model, [2], 9, greedy=True, stop_token=None, use_cache=False)) == 10
    assert G.generate(model, [2], 20, greedy=True, stop_token=4, use_cache=False).tolist() == [2, 3, 4]


def test_generate_respects_max_new_tokens_and_stop_with_gpt():
    model = _gpt(5, 8, 2, 1, 6, 1)
    for seed in range(5):
        out = G.generate(model, [0], 9, seed=seed)
        gen = out[1:]
        assert 1 <= len(gen) <= 9
        stops = np.flatnonzero(gen == 0)
        assert len(stops) == 0 and len(gen) == 9 or stops.tolist() == [len(gen) - 1]


def test_generate_seq2seq_cached_uncached_and_twin_agree():
    model = _seq2seq(9, 6, 8, 2, 2, 5, 7, 3)
    src = np.array([[1, 2, 3, 4, 0, 0], [5, 6, 7, 8, 8, 1]])
    pad = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=bool)
    for kw in GEN_KNOBS:
        a = G.generate_seq2seq(model, src, 8, src_padding_mask=pad, seed=1, start_token=2, stop_token=None, **kw)
        b = G.generate_seq2seq(model, src, 8, src_padding_mask=pad, seed=1, start_token=2, stop_token=None,
                               use_cache=False, **kw)
        assert a.shape == (2, 9) and (a[:, 0] == 2).all() and np.array_equal(a, b)
        twin = R.EncoderDecoder(9, 6, 8, 2, 2, 2, 5, 7).double().to(DEVICE)
        twin.load_state_dict(model.state_dict())
        t = RG.generate_seq2seq(twin, torch.from_numpy(src).to(DEVICE), 8, src_padding_mask=torch.from_numpy(pad).to(DEVICE),
                                start_token=2, stop_token=None, uniforms=np.random.default_rng(1).random((8, 2)),
                                **kw)
        assert np.array_equal(a, t.cpu().numpy())
    one = G.generate_seq2seq(model, src[1], 8, seed=1, stop_token=None)
    assert one.ndim == 1 and one[0] == 0


def test_generate_restores_mode_and_grad_state():
    model = _gpt(5, 8, 2, 1, 6, 1)
    model.train()
    model.blocks[0].mlp.eval()
    G.generate(model, [0, 1], 3, seed=0)
    assert model.training and model.blocks[0].attn.training and not model.blocks[0].mlp.training
    assert tg.is_grad_enabled()
    model.eval()
    G.generate(model, [0, 1], 3, seed=0)
    assert not model.training


def test_generate_uses_global_generator_without_seed():
    model = _gpt(7, 8, 2, 1, 6, 2)
    tg.manual_seed(11)
    a = G.generate(model, [0], 6, stop_token=None)
    tg.manual_seed(11)
    assert np.array_equal(a, G.generate(model, [0], 6, stop_token=None))
    # the global generator is a tinygrad_tx.Generator: an explicit one seeded alike samples the same
    assert np.array_equal(a, G.generate(model, [0], 6, stop_token=None, generator=tg.Generator().manual_seed(11)))


@pytest.mark.parametrize("args, kw, err, match", [
    (([],), {}, ValueError, "empty"),
    ((np.zeros((1, 0), dtype=np.int64),), {}, ValueError, "empty"),
    (([0, 5],), {}, ValueError, r"token id 5 outside \[0, vocab_size\) = \[0, 5\)"),
    (([[0, -1]],), {}, ValueError, "token id -1"),
    ((np.zeros((1, 1, 1), dtype=np.int64),), {}, ValueError, "1-D or 2-D"),
    (([0.5],), {}, TypeError, "integer"),
    (([0], -1), {}, ValueError, r"max_new_tokens must be >= 0, got -1"),
    (([0], 3, -1.0), {}, ValueError, r"temperature.*-1\.0"),
    (([0], 3, 1.0, 0), {}, ValueError, r"top_k.*got 0"),
    (([0], 3, 1.0, None, 1.2), {}, ValueError, r"top_p.*1\.2"),
    (([0], 3, 1.0, None, 0.0), {}, ValueError, r"top_p.*0\.0"),
    (([0],), {"stop_token": 9}, ValueError, "stop_token 9"),
    (([0],), {"seed": 1, "generator": np.random.default_rng(1)}, ValueError, "either seed or generator"),
])
def test_generate_rejects_bad_arguments(args, kw, err, match):
    model = _gpt(5, 8, 2, 1, 6, 1)
    with pytest.raises(err, match=match):
        G.generate(model, *args, **kw)


def test_generate_cache_needs_a_gpt():
    with pytest.raises(TypeError, match="use_cache=False"):
        G.generate(M.NeuralBigram(4), [0], 3)
    with pytest.raises(TypeError, match="EncoderDecoder"):
        G.generate_seq2seq(_gpt(5, 8, 2, 1, 6, 1), [0], 3)
    with pytest.raises(ValueError, match="start_token 9"):
        G.generate_seq2seq(_seq2seq(5, 5, 8, 2, 1, 4, 4, 0), [1], 3, start_token=9)


def test_generate_names_decodes_without_sentinels():
    vocab = CharVocab.tutorial()
    model = _gpt(len(vocab), 8, 2, 1, 6, 4)
    names = G.generate_names(model, vocab, 7, seed=3)
    assert len(names) == 7 and all(isinstance(n, str) and "$" not in n and len(n) <= 6 for n in names)
    ids = G.generate(model, np.zeros((7, 1), dtype=np.int64), 6, seed=3)
    assert names == [vocab.decode(r[1:]).split("$")[0] for r in ids]
    assert G.generate_names(model, vocab, 0) == []


def test_time_generation_reports_both_paths():
    model = _gpt(5, 8, 2, 1, 8, 4)
    for use_cache in (True, False):
        r = G.time_generation(model, 3, 4, use_cache, repeats=2)
        assert r["use_cache"] is use_cache and r["repeats"] == 2
        assert r["first_step_s"] > 0 and r["per_token_s"] > 0 and r["total_s"] >= r["first_step_s"]
    with pytest.raises(ValueError, match="n_tokens >= 2"):
        G.time_generation(model, 3, 1, True)


def test_twin_multinomial_path_samples_the_same_support():
    """Without uniforms the twin is the tutorial's torch.multinomial loop: reproducible with a
    seeded torch.Generator, and it only ever picks tokens our filtered distribution allows."""
    model = _gpt(9, 8, 2, 1, 6, 6)
    twin = _twin_gpt(model)
    prompt = torch.tensor([[0, 1, 2]], device=DEVICE)
    kw = dict(temperature=0.8, top_k=3, top_p=0.9)
    a = RG.generate(twin, prompt, 5, stop_token=None, generator=torch.Generator(device=DEVICE).manual_seed(0), **kw)
    b = RG.generate(twin, prompt, 5, stop_token=None, generator=torch.Generator(device=DEVICE).manual_seed(0), **kw)
    assert torch.equal(a, b) and a.shape == (1, 8)
    with tg.no_grad():
        for t in range(3, 8):
            allowed = G.next_token_probs(model(a[:, max(0, t - 6):t].cpu().numpy())[0]._data[:, -1], **kw) > 0
            assert allowed[0, a[0, t].item()]
    assert twin.training  # the mode it had before
