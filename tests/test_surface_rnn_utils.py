"""torch.nn.utils.rnn (tinygrad_tx/nn/utils/rnn.py) and packed input to RNN/GRU/LSTM, against
torch: values and gradients with a random cotangent (reference.testing), finite differences, and
torch's errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import check_module_parity, check_parity
from tinygrad_tx import gradcheck
from tinygrad_tx.nn.utils import rnn
from tinygrad_tx.testing.strategies import seeds, values

DTYPES = st.sampled_from([np.float64, np.float32])


@st.composite
def batches(draw, distinct=False, sorted_=None, min_steps=1):
    """(steps, lengths, feature shape, enforce_sorted): lengths in 1..steps, the longest = steps."""
    n = draw(st.integers(1, 4))
    steps = draw(st.integers(min_steps, 5))
    if distinct:
        steps = max(steps, n)
        lengths = draw(st.permutations(list(range(steps, steps - n, -1))))
    else:
        lengths = draw(st.lists(st.integers(1, steps), min_size=n, max_size=n))
        lengths[draw(st.integers(0, n - 1))] = steps
    enforce = draw(st.booleans()) if sorted_ is None else sorted_
    if enforce:
        lengths = sorted(lengths, reverse=True)
    feat = draw(st.sampled_from([(), (2,), (2, 3)]))
    return steps, list(lengths), feat, enforce


def _T(lib):
    return lib.nn.utils.rnn


@given(b=batches(distinct=True), batch_first=st.booleans(), seed=seeds, dtype=DTYPES)
def test_pack_padded_sequence_parity(b, batch_first, seed, dtype):
    """data (gathered rows, their layout included), batch_sizes and the sorted indices equal torch's;
    the gradient reaches only the valid positions (distinct lengths: torch's sort is not stable)."""
    steps, lengths, feat, enforce = b
    shape = (len(lengths), steps, *feat) if batch_first else (steps, len(lengths), *feat)
    x = values(shape, seed + 1)
    for lib in (tg, torch):
        p = _T(lib).pack_padded_sequence(lib.zeros(*shape), lengths, batch_first=batch_first, enforce_sorted=enforce)
        if lib is tg:
            ours = p
    np.testing.assert_array_equal(ours.batch_sizes.numpy(), p.batch_sizes.numpy())
    for a, b_ in ((ours.sorted_indices, p.sorted_indices), (ours.unsorted_indices, p.unsorted_indices)):
        assert (a is None) == (b_ is None)
        if a is not None:
            np.testing.assert_array_equal(a.numpy(), b_.numpy())
    check_parity(lambda t: rnn.pack_padded_sequence(t, lengths, batch_first, enforce).data,
                 lambda t: torch.nn.utils.rnn.pack_padded_sequence(t, lengths, batch_first, enforce).data,
                 x, dtype=dtype, seed=seed, name="pack_padded_sequence")


@given(b=batches(), batch_first=st.booleans(), seed=seeds, dtype=DTYPES, extra=st.integers(0, 2),
       padding_value=st.sampled_from([0.0, -1.5]))
def test_pad_packed_sequence_roundtrip_parity(b, batch_first, seed, dtype, extra, padding_value):
    """pad(pack(x)) equals torch's (values, padding, lengths in batch order) and its gradient: the
    cotangent at the valid positions, 0 at the padding."""
    steps, lengths, feat, enforce = b
    shape = (len(lengths), steps, *feat) if batch_first else (steps, len(lengths), *feat)
    total = steps + extra if extra else None

    def run(lib):
        def f(t):
            mod = _T(lib)
            packed = mod.pack_padded_sequence(t, lengths, batch_first=batch_first, enforce_sorted=enforce)
            out, out_lengths = mod.pad_packed_sequence(packed, batch_first=batch_first, padding_value=padding_value,
                                                       total_length=total)
            np.testing.assert_array_equal(np.asarray(out_lengths.numpy()), lengths)
            return out
        return f

    check_parity(run(tg), run(torch), values(shape, seed + 1), dtype=dtype, seed=seed, name="pad_packed_sequence")


@given(n=st.integers(1, 4), feat=st.sampled_from([(), (3,)]), batch_first=st.booleans(),
       side=st.sampled_from(["right", "left"]), seed=seeds, dtype=DTYPES, data=st.data())
def test_pad_sequence_parity(n, feat, batch_first, side, seed, dtype, data):
    lens = data.draw(st.lists(st.integers(1, 4), min_size=n, max_size=n), label="lengths")
    arrays = [values((k, *feat), seed + 1 + i) for i, k in enumerate(lens)]
    check_parity(lambda *ts: rnn.pad_sequence(list(ts), batch_first, 0.25, side),
                 lambda *ts: torch.nn.utils.rnn.pad_sequence(list(ts), batch_first, 0.25, side),
                 *arrays, dtype=dtype, seed=seed, name="pad_sequence")


def _packed_net(kind, lengths, enforce, bidirectional, batch_first):
    """A factory (for check_module_parity) of a 2-layer RNN/GRU/LSTM run on a packed batch; the
    output is the padded output and the final states, concatenated."""
    def factory(T):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(T.nn, kind)(3, 4, num_layers=2, bidirectional=bidirectional,
                                               batch_first=batch_first)

            def forward(self, x):
                mod = T.nn.utils.rnn
                packed = mod.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce)
                out, h = self.rnn(packed)
                assert isinstance(out, mod.PackedSequence)
                states = list(h) if kind == "LSTM" else [h]
                padded, _ = mod.pad_packed_sequence(out, batch_first=batch_first, padding_value=0.5)
                return T.cat([padded.reshape(-1)] + [s.reshape(-1) for s in states])
        return Net()
    return factory


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@given(b=batches(min_steps=2), bidirectional=st.booleans(), batch_first=st.booleans(), seed=seeds, dtype=DTYPES)
def test_recurrent_layers_on_packed_input_parity(kind, b, bidirectional, batch_first, seed, dtype):
    """output, h_n (and c_n), the input's and every parameter's gradient equal torch's: each
    sequence runs over its own length, the reverse direction starting at its last step. (The
    longest sequence has two steps or more: with one, h_0 = 0 makes dL/dW_hh exactly 0.)"""
    steps, lengths, _, enforce = b
    shape = (len(lengths), steps, 3) if batch_first else (steps, len(lengths), 3)
    check_module_parity(_packed_net(kind, lengths, enforce, bidirectional, batch_first), values(shape, seed + 1),
                        dtype=dtype, seed=seed, name=f"packed {kind}")


def test_finite_differences():
    x = values((4, 3, 2), 1)
    lengths = [2, 4, 1]

    def roundtrip(t):
        p = rnn.pack_padded_sequence(t, lengths, enforce_sorted=False)
        return rnn.pad_packed_sequence(p, padding_value=2.0, total_length=5)[0] * t.sum()

    assert gradcheck(roundtrip, [x])
    assert gradcheck(lambda a, b: rnn.pad_sequence([a, b], batch_first=True, padding_side="left") ** 2,
                     [values((2, 3), 2), values((3, 3), 3)])
    lstm = tg.nn.LSTM(2, 3, bidirectional=True).double()
    assert gradcheck(lambda t: rnn.pad_packed_sequence(lstm(rnn.pack_padded_sequence(t, lengths, enforce_sorted=False))[0])[0],
                     [x])


@pytest.mark.cpu_only(reason="packed layouts (index arithmetic), exact values")
def test_pack_sequence_and_unpacking():
    seqs = [values((k, 2), k) for k in (3, 1, 2)]
    ours = rnn.pack_sequence([tg.tensor(s) for s in seqs], enforce_sorted=False)
    ref = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    np.testing.assert_array_equal(ours.data.numpy(), ref.data.numpy())
    np.testing.assert_array_equal(ours.batch_sizes.numpy(), ref.batch_sizes.numpy())
    for a, s in zip(rnn.unpack_sequence(ours), seqs):
        np.testing.assert_array_equal(a.numpy(), s)
    padded = rnn.pad_sequence([tg.tensor(s) for s in seqs])
    for a, s in zip(rnn.unpad_sequence(padded, tg.tensor([3, 1, 2])), seqs):
        np.testing.assert_array_equal(a.numpy(), s)
    assert isinstance(ours, tuple) and ours._fields == ref._fields
    assert ours.to(tg.float64) is ours and ours.to(tg.float32).data.dtype == tg.float32
    np.testing.assert_array_equal(rnn.invert_permutation(tg.tensor([2, 0, 1])).numpy(), [1, 2, 0])


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda m, x: m.pack_padded_sequence(x, [2, 4, 1]), RuntimeError, "must be sorted in decreasing order"),
    (lambda m, x: m.pack_padded_sequence(x, [4, 2, 0]), RuntimeError, "has to be greater than 0"),
    (lambda m, x: m.pad_packed_sequence(m.pack_padded_sequence(x, [4, 2, 1]), total_length=2), ValueError,
     "at least the length of the longest sequence"),
    (lambda m, x: m.pad_sequence([x[0], x[1]], padding_side="middle"), RuntimeError, "padding_side"),
])
@pytest.mark.cpu_only(reason="argument errors, no tensor computed")
def test_errors_as_torch(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call(rnn, tg.zeros(4, 3, 2))
    with pytest.raises(exc, match=pattern):
        call(torch.nn.utils.rnn, torch.zeros(4, 3, 2))


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"lengths=\[5, 2, 1\] has a length larger than the 4 time steps"):
        rnn.pack_padded_sequence(tg.zeros(4, 3), [5, 2, 1])
    with pytest.raises(ValueError, match="one entry per sequence"):
        rnn.pack_padded_sequence(tg.zeros(4, 3), [4, 2])
    with pytest.raises(TypeError, match="batch_first must be a bool, got 'yes'"):
        rnn.pack_padded_sequence(tg.zeros(4, 3), [4, 2, 1], batch_first="yes")
    with pytest.raises(TypeError, match="must be a PackedSequence, got Tensor"):
        rnn.pad_packed_sequence(tg.zeros(4, 3))
    with pytest.raises(RuntimeError, match=r"sequences\[1\] has shape \(2, 3\)"):
        rnn.pad_sequence([tg.zeros(2, 2), tg.zeros(2, 3)])
    with pytest.raises(ValueError, match=r"GRU: a packed input's data must be 2-D .*got shape \(7,\)"):   # a packed batch of the wrong feature rank
        tg.nn.GRU(2, 3)(rnn.pack_padded_sequence(tg.zeros(4, 3), [4, 2, 1]))


def test_importable_as_torch_lays_it_out():
    """``from torch.nn.utils.rnn import ...`` under ``tinygrad-tx run``'s import hook."""
    from tinygrad_tx.torch_shim import torch_as_tinygrad_tx
    with torch_as_tinygrad_tx():
        from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence  # noqa: F401
        import torch.nn.utils.rnn as shimmed
    assert shimmed is rnn and PackedSequence is rnn.PackedSequence
