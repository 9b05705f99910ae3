"""``ctc_loss``: out of scope, said in one line.

The connectionist temporal classification loss needs the alpha-beta (forward-backward)
recursion over the blank-extended label sequence, in log space, and its gradient by hand; it
is not implemented in this engine. ``ctc_loss`` and ``nn.CTCLoss`` exist so that code using
them fails with this reason instead of an AttributeError.
"""
from __future__ import annotations

CTC_OUT_OF_SCOPE = ("ctc_loss (nn.CTCLoss) is not implemented in tinygrad_tx: it needs the alpha-beta "
                    "recursion in log space and its hand-written backward, which this engine does not "
                    "have; compute CTC with torch, or use a per-frame cross_entropy")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False):
    """Not implemented: raises NotImplementedError naming why (see the module docstring)."""
    raise NotImplementedError(CTC_OUT_OF_SCOPE)
