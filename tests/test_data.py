"""Tests of tinygrad_tx.data: vocabulary, corpora, split, datasets and DataLoader.

The datasets are checked against a literal transcription of the tutorial's
``CharAutoregressiveDataset`` loop (section 4) and the DataLoader against
``torch.utils.data.DataLoader``. Tests on makemore's ``names.txt`` skip cleanly
when ``../shared/data/names.txt`` is absent.
"""
from __future__ import annotations

import math
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tinygrad_tx.data import (IGNORE_INDEX, ArrayDataset, CharAutoregressiveDataset, CharVocab, DataLoader,
                              FullSequenceDataset, load_census_first_names, load_census_last_names, load_names,
                              split_names)
from reference.testing import DEVICE

NAMES_TXT = Path(__file__).resolve().parents[2] / "shared" / "data" / "names.txt"
needs_names_txt = pytest.mark.skipif(not NAMES_TXT.exists(), reason=f"{NAMES_TXT} not present")

SAMPLE_NAMES = ["sada", "john", "emma", "olivia", "liam", "noah", "ava", "lucas"]   # tutorial section 3.2
LETTERS = "abcdefghijklmnopqrstuvwxyz"
names_st = st.lists(st.text(alphabet=LETTERS, min_size=0, max_size=12), min_size=1, max_size=8)


def tutorial_dataset(names, stoi, block_size, special_char="$"):
    """The tutorial's CharAutoregressiveDataset.__init__ loop, transcribed with Python lists."""
    inputs, targets = [], []
    for name in names:
        encoded = [stoi[special_char]] + [stoi[c] for c in name] + [stoi[special_char]]
        for i in range(1, len(encoded)):
            subseq = encoded[:i]
            target = encoded[i]
            if len(subseq) > block_size:
                subseq = subseq[-block_size:]
            else:
                subseq = [stoi[special_char]] * (block_size - len(subseq)) + subseq
            inputs.append(subseq)
            targets.append(target)
    return inputs, targets


# ---------------------------------------------------------------------------- vocabulary
def test_tutorial_vocab_matches_section_2_1():
    v = CharVocab.tutorial()
    vocab = ["$"] + [chr(i) for i in range(ord("a"), ord("z") + 1)]
    assert v.chars == vocab and len(v) == v.vocab_size == 27
    assert v.stoi == {c: i for i, c in enumerate(vocab)}
    assert v.itos == {i: c for i, c in enumerate(vocab)}
    assert v.encode("$john$") == [0, 10, 15, 8, 14, 0]
    assert v.encode("$sada$") == [0, 19, 1, 4, 1, 0]
    assert v.decode(np.array([0, 10, 15, 8, 14, 0])) == "$john$"
    assert v.sentinel == "$" and v.sentinel_id == 0


def test_vocab_from_corpus():
    v = CharVocab.from_corpus(["zoë", "anne-marie"])
    assert v.chars == ["$", "-", "a", "e", "i", "m", "n", "o", "r", "z", "ë"]
    assert CharVocab.from_corpus(LETTERS) == CharVocab.tutorial()
    with pytest.raises(ValueError, match="empty corpus"):
        CharVocab.from_corpus(["", ""])
    with pytest.raises(ValueError, match="contains the sentinel"):
        CharVocab.from_corpus(["a$b"])
    assert CharVocab.from_corpus(["a$b"], sentinel="#").chars == ["#", "$", "a", "b"]


def test_unknown_characters_are_listed_sorted_and_unique():
    v = CharVocab.tutorial()
    with pytest.raises(ValueError, match=r"\['!', '1', 'A', 'é'\]"):
        v.encode("Abé1bé!!a")
    assert v.unknown_chars(["ab", "c d", "e-f "]) == [" ", "-"]


def test_decode_rejects_bad_ids():
    v = CharVocab.tutorial()
    with pytest.raises(ValueError, match=r"\[-1, 27\]"):
        v.decode([3, 27, -1, 27])
    with pytest.raises(TypeError):
        v.decode([1.5])


@pytest.mark.parametrize("chars, message", [
    (["a", "$"], "first symbol"), (["$", "ab"], "single character"), (["$", "a", "a"], "repeated"), ([], "first")])
def test_vocab_constructor_validates(chars, message):
    with pytest.raises(ValueError, match=message):
        CharVocab(chars)


@given(st.text(alphabet="$" + LETTERS, max_size=30))
def test_vocab_round_trip(s):
    v = CharVocab.tutorial()
    ids = v.encode(s)
    assert v.decode(ids) == s
    assert v.encode(v.decode(ids)) == ids


# ---------------------------------------------------------------------------- corpora
def test_load_names_file_cleaning(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("\ufeffEmma\n\n  OLIVIA \r\nmary-ann\nzoë\n\t\nava\nava\n", encoding="utf-8")
    with pytest.warns(UserWarning, match=r"dropped 2 name\(s\).*\['-', 'ë'\].*line 4: 'mary-ann'"):
        names = load_names(path)
    assert names == ["emma", "olivia", "ava", "ava"]          # duplicates and order kept
    with pytest.raises(ValueError, match=r"2 name\(s\).*\['-', 'ë'\]"):
        load_names(path, on_invalid="raise")
    assert load_names(path, vocab=CharVocab.from_corpus(LETTERS + "-ë")) == [
        "emma", "olivia", "mary-ann", "zoë", "ava", "ava"]
    with pytest.raises(ValueError, match="on_invalid"):
        load_names(path, on_invalid="ignore")


def test_load_names_empty_corpus_raises(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="no names left"):
        load_names(empty)
    invalid = tmp_path / "invalid.txt"
    invalid.write_text("1\n2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"no names left.*2 invalid"), pytest.warns(UserWarning):
        load_names(invalid)


def test_offline_default_is_census_first_names():
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # nothing dropped, nothing to warn about
        names = load_names()
    assert len(names) == len(set(names)) == 5163
    assert all(set(n) <= set(LETTERS) for n in names)
    assert {"james", "mary", "john", "olivia"} <= set(names)


def test_census_first_names_with_gender():
    pairs = load_census_first_names()
    genders = Counter(g for _, g in pairs)
    assert genders == {"male": 1219, "female": 4275}
    assert pairs[0] == ("james", "male") and pairs[1219] == ("mary", "female")
    by_gender = {g: {n for n, gg in pairs if gg == g} for g in genders}
    assert len(by_gender["male"] & by_gender["female"]) == 331
    assert all(n and set(n) <= set(LETTERS) for n, _ in pairs)


def test_census_last_names():
    last = load_census_last_names()
    assert len(last) == 88799 and last[:3] == ["smith", "johnson", "williams"]


@needs_names_txt
def test_names_txt_loads_and_splits_like_makemore():
    names = load_names(NAMES_TXT)
    assert len(names) == 32033 and names[0] == "emma"
    train, dev, test = split_names(names, seed=42)
    assert (len(train), len(dev), len(test)) == (25626, 3203, 3204)
    assert Counter(train + dev + test) == Counter(names)
    perm = np.random.default_rng(42).permutation(len(names))
    assert train[:5] == [names[i] for i in perm[:5]] and test[-1] == names[perm[-1]]


@given(st.lists(st.integers(0, 10**6), min_size=10, max_size=200, unique=True), st.integers(0, 2**32 - 1))
def test_split_is_deterministic_partition(items, seed):
    parts = split_names(items, seed=seed)
    assert parts == split_names(items, seed=seed)
    sizes = [len(p) for p in parts]
    n = len(items)
    assert sizes == [math.floor(0.8 * n), math.floor(0.1 * n), n - math.floor(0.8 * n) - math.floor(0.1 * n)]
    assert sorted(parts[0] + parts[1] + parts[2]) == sorted(items)
    two = split_names(items, seed=seed, fractions=(0.5, 0.5))
    assert len(two) == 2 and len(two[0]) == n // 2


def test_split_differs_by_seed_and_validates():
    items = list(range(100))
    assert split_names(items, seed=0) != split_names(items, seed=1)
    with pytest.raises(ValueError, match="sum to 1"):
        split_names(items, fractions=(0.8, 0.1))
    with pytest.raises(ValueError, match="positive"):
        split_names(items, fractions=(1.1, -0.1))
    with pytest.raises(ValueError, match="part sizes would be"):
        split_names(items[:5])


# ---------------------------------------------------------------------------- datasets
@pytest.mark.parametrize("block_size", [1, 3, 6, 10])
def test_autoregressive_dataset_equals_tutorial_loop(block_size):
    v = CharVocab.tutorial()
    d = CharAutoregressiveDataset(SAMPLE_NAMES, v.stoi, block_size=block_size)
    ref_x, ref_y = tutorial_dataset(SAMPLE_NAMES, v.stoi, block_size)
    assert d.inputs.dtype == d.targets.dtype == np.int64
    assert d.inputs.shape == (sum(len(n) + 1 for n in SAMPLE_NAMES), block_size)
    np.testing.assert_array_equal(d.inputs, ref_x)
    np.testing.assert_array_equal(d.targets, ref_y)
    x, y = d[3]
    assert x.tolist() == ref_x[3] and int(y) == ref_y[3] and len(d) == len(ref_y)


@given(names_st, st.integers(1, 14))
def test_autoregressive_dataset_property(names, block_size):
    v = CharVocab.tutorial()
    d = CharAutoregressiveDataset(names, v, block_size)
    ref_x, ref_y = tutorial_dataset(names, v.stoi, block_size)
    np.testing.assert_array_equal(d.inputs, np.array(ref_x, dtype=np.int64).reshape(-1, block_size))
    np.testing.assert_array_equal(d.targets, ref_y)


@needs_names_txt
def test_autoregressive_dataset_on_names_txt():
    names = load_names(NAMES_TXT)[::50]
    v = CharVocab.tutorial()
    d = CharAutoregressiveDataset(names, v, 8)
    ref_x, ref_y = tutorial_dataset(names, v.stoi, 8)
    np.testing.assert_array_equal(d.inputs, ref_x)
    np.testing.assert_array_equal(d.targets, ref_y)


def test_datasets_reject_bad_input():
    v = CharVocab.tutorial()
    for cls in (CharAutoregressiveDataset, FullSequenceDataset):
        with pytest.raises(ValueError, match=r"\['!', 'B'\]"):
            cls(["ab", "aB!"], v, 4)
        with pytest.raises(ValueError, match="sentinel"):
            cls(["a$b"], v, 4)
        with pytest.raises(ValueError, match="block_size"):
            cls(["ab"], v, 0)
        with pytest.raises(ValueError, match="at least one name"):
            cls([], v, 4)
        with pytest.raises(ValueError, match="sentinel '#' is not in"):
            cls(["ab"], v.stoi, 4, sentinel="#")
    with pytest.raises(ValueError, match="ignore_index 3"):
        FullSequenceDataset(["ab"], v, 4, ignore_index=3)


def test_full_sequence_dataset_layout():
    v = CharVocab.tutorial()
    d = FullSequenceDataset(["ava", "bo"], v, block_size=6)
    np.testing.assert_array_equal(d.inputs, [[0, 1, 22, 1, 0, 0], [0, 2, 15, 0, 0, 0]])
    np.testing.assert_array_equal(d.targets, [[1, 22, 1, 0, -100, -100], [2, 15, 0, -100, -100, -100]])
    assert d.inputs.dtype == d.targets.dtype == np.int64 and d.num_targets == 7 and d.num_truncated == 0


@given(names_st, st.integers(1, 14))
def test_full_sequence_matches_autoregressive_prefixes(names, block_size):
    """Causal position t of a full-sequence row is the tutorial example (prefix x[:t+1] -> y[t])."""
    v = CharVocab.tutorial()
    ar = CharAutoregressiveDataset(names, v, block_size)
    full = FullSequenceDataset(names, v, block_size, long_names="truncate")
    k = 0   # row of the autoregressive dataset
    for name, x, y in zip(names, full.inputs, full.targets):
        scored = np.flatnonzero(y != IGNORE_INDEX)
        assert scored.tolist() == list(range(min(len(name) + 1, block_size)))
        for t in scored:
            ctx = x[:t + 1]
            np.testing.assert_array_equal(ar.inputs[k + t][block_size - len(ctx):], ctx)
            assert ar.targets[k + t] == y[t]
        k += len(name) + 1
    assert full.num_truncated == sum(len(n) + 1 > block_size for n in names)


@given(names_st, st.integers(1, 14))
def test_full_sequence_windows_score_every_target_once(names, block_size):
    v = CharVocab.tutorial()
    d = FullSequenceDataset(names, v, block_size, long_names="windows")
    assert d.num_targets == sum(len(n) + 1 for n in names)
    assert len(d) == sum(math.ceil((len(n) + 1) / block_size) for n in names)
    ys = d.targets[d.targets != IGNORE_INDEX]
    xs = d.inputs[d.targets != IGNORE_INDEX]
    assert v.decode(ys) == "".join(n + "$" for n in names)
    assert v.decode(xs) == "".join("$" + n for n in names)


def test_full_sequence_long_names_error():
    v = CharVocab.tutorial()
    with pytest.raises(ValueError, match="'abcdef' needs 7 positions but block_size is 4"):
        FullSequenceDataset(["ab", "abcdef"], v, 4, long_names="error")
    with pytest.raises(ValueError, match="long_names"):
        FullSequenceDataset(["ab"], v, 4, long_names="wrap")


# ---------------------------------------------------------------------------- DataLoader
def _torch_batches(dataset, batch_size, drop_last):
    tds = torch.utils.data.TensorDataset(*(torch.from_numpy(a).to(DEVICE) for a in dataset.arrays))
    loader = torch.utils.data.DataLoader(tds, batch_size=batch_size, shuffle=False, drop_last=drop_last)
    return len(loader), [tuple(t.numpy() for t in batch) for batch in loader]


@given(st.integers(1, 40), st.integers(1, 12), st.booleans())
def test_dataloader_matches_torch_without_shuffle(n, batch_size, drop_last):
    rng = np.random.default_rng(n)
    ds = ArrayDataset(rng.integers(0, 27, size=(n, 3)), rng.integers(0, 27, size=n))
    loader = DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
    torch_len, torch_batches = _torch_batches(ds, batch_size, drop_last)
    ours = list(loader)
    assert len(loader) == torch_len == len(ours) == len(torch_batches)
    for a, b in zip(ours, torch_batches):
        assert len(a) == 2
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
            assert x.dtype == y.dtype == np.int64


@given(st.integers(1, 50), st.integers(1, 9), st.booleans(), st.integers(0, 2**32 - 1))
def test_dataloader_shuffle_is_seeded_and_complete(n, batch_size, drop_last, seed):
    ds = ArrayDataset(np.arange(n, dtype=np.int64))
    epochs = [[b[0].tolist() for b in DataLoader(ds, batch_size, shuffle=True, drop_last=drop_last, seed=seed)]
              for _ in range(2)]
    assert epochs[0] == epochs[1]
    loader = DataLoader(ds, batch_size, shuffle=True, drop_last=drop_last, seed=seed)
    seen = [sum(b, []) for b in epochs]
    for batches, flat in zip(epochs, seen):
        assert len(batches) == len(loader)
        assert all(len(b) == batch_size for b in batches[:-1] if b)
        assert len(set(flat)) == len(flat)
        assert len(flat) == (n // batch_size * batch_size if drop_last else n)
    # the permutation comes from np.random.default_rng(seed)
    assert seen[0] == np.random.default_rng(seed).permutation(n)[:len(seen[0])].tolist()


def test_dataloader_epochs_differ_and_generator_argument():
    ds = ArrayDataset(np.arange(100))
    loader = DataLoader(ds, batch_size=100, shuffle=True, seed=0)
    first, second = next(iter(loader))[0], next(iter(loader))[0]
    assert not np.array_equal(first, second)
    assert sorted(first.tolist()) == sorted(second.tolist()) == list(range(100))
    g = np.random.default_rng(0)
    np.testing.assert_array_equal(next(iter(DataLoader(ds, 100, shuffle=True, generator=g)))[0], first)
    with pytest.raises(ValueError, match="either seed or generator"):
        DataLoader(ds, 4, seed=0, generator=g)
    with pytest.raises(TypeError, match="Generator"):
        DataLoader(ds, 4, generator=np.random.RandomState(0))
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(ds, 0)


def test_dataloader_generic_dataset_collates():
    class Pairs:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.array([i, i + 1]), i * 10

    batches = list(DataLoader(Pairs(), batch_size=2))
    assert len(batches) == 3
    np.testing.assert_array_equal(batches[0][0], [[0, 1], [1, 2]])
    np.testing.assert_array_equal(batches[2][1], [40])


def test_dataloader_over_char_dataset():
    d = CharAutoregressiveDataset(SAMPLE_NAMES, CharVocab.tutorial(), block_size=6)
    loader = DataLoader(d, batch_size=4, shuffle=True, seed=1)
    x, y = next(iter(loader))
    assert x.shape == (4, 6) and y.shape == (4,) and x.dtype == y.dtype == np.int64
    assert len(loader) == math.ceil(len(d) / 4)
