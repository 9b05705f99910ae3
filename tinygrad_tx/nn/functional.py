"""``tinygrad_tx.nn.functional`` is ``tinygrad_tx.functional`` (torch's ``torch.nn.functional`` path).

Importing this module puts the one functional module in its place, so ``import
tinygrad_tx.nn.functional as F`` and ``from tinygrad_tx import functional as F`` give the same
object: one set of functions, nothing copied.
"""
import sys

from .. import functional as _functional

sys.modules[__name__] = _functional
