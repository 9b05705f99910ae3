"""The GPT training step's fast paths: the cached causal mask of the naive attention, and whole
training steps (fused AdamW over flat parameters, graph freed as backward runs) against the
PyTorch twin."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import reference
import tinygrad_tx as tg
from tinygrad_tx import SavedMemory, optim
from tinygrad_tx.models import CausalSelfAttention, GPTLanguageModel
from reference.testing import DEVICE


def test_causal_mask_is_derived_once_and_still_follows_the_buffer():
    attn = CausalSelfAttention(8, 2, 6, dropout=0.0, attn_impl="naive")
    expected = attn.causal_mask[:, :, :4, :4] == 0
    first = attn._future_positions(4)
    np.testing.assert_array_equal(first._data, expected._data)
    assert attn._future_positions(4) is first                    # reused at the next step
    assert attn._future_positions(5).shape == (1, 1, 5, 5)
    with pytest.raises(ValueError, match="read-only"):
        attn.causal_mask._data[..., 0, 1] = 1.0                   # the constant cannot drift
    attn.double()
    assert attn.causal_mask._data.dtype == np.float64 and not attn.causal_mask._data.flags.writeable
    np.testing.assert_array_equal(attn._future_positions(4)._data, expected._data)
    attn.causal_mask = tg.Tensor(np.ones((1, 1, 6, 6)))          # a writeable buffer: read each time
    assert not attn._future_positions(4)._data.any()
    attn.causal_mask._data[..., 0, 1] = 0.0
    assert attn._future_positions(4)._data[0, 0, 0, 1]


@pytest.mark.parametrize("attn_impl", ["naive", "fused"])
def test_gpt_training_steps_match_torch(attn_impl):
    """Five AdamW steps (weight decay on matrices only, tied embedding) of the float64 GPT and
    its twin: every parameter within 1e-10 after the last step; the flat path was taken, and
    nothing stays saved between steps."""
    tg.manual_seed(0)
    ours = GPTLanguageModel(11, d_model=16, n_heads=2, n_layers=2, block_size=8, dropout=0.0,
                            attn_impl=attn_impl).double()
    twin = reference.GPTLanguageModel(11, d_model=16, n_heads=2, n_layers=2, block_size=8, dropout=0.0).double().to(DEVICE)
    twin.load_state_dict({k: torch.from_numpy(v).to(DEVICE) for k, v in ours.state_dict().items()})
    groups = lambda m: [{"params": [p for n, p in m.named_parameters() if p.ndim >= 2], "weight_decay": 0.1},  # noqa: E731
                        {"params": [p for n, p in m.named_parameters() if p.ndim < 2], "weight_decay": 0.0}]
    opt = optim.AdamW(groups(ours), lr=3e-3)
    topt = torch.optim.AdamW(groups(twin), lr=3e-3)
    rng = np.random.default_rng(0)
    start = SavedMemory.current
    for _ in range(5):
        idx, tgt = rng.integers(0, 11, (3, 8)), rng.integers(0, 11, (3, 8))
        opt.zero_grad()
        _, loss = ours(idx, tgt)
        loss.backward()
        opt.step()
        assert SavedMemory.current == start
        topt.zero_grad()
        twin(torch.from_numpy(idx).to(DEVICE), torch.from_numpy(tgt).to(DEVICE))[1].backward()
        topt.step()
    assert len(opt._flat_states) == 2 and all(f.params.valid() for f in opt._flat_states.values())
    theirs = dict(twin.named_parameters())
    for name, p in ours.named_parameters():
        t = theirs[name].detach().cpu().numpy()
        assert np.abs(p._data - t).max() <= 1e-10 * np.abs(t).max(), name
