"""Optimizers, learning-rate schedules and gradient clipping with ``torch.optim``'s API.

* :class:`SGD` (momentum, Nesterov, weight decay), :class:`Adam`, :class:`AdamW`
  (both with AMSGrad): torch's signatures, defaults, update formulas and
  ``state_dict`` layout; parameters are updated in place.
* :class:`LambdaLR`, :class:`CosineAnnealingLR` and :func:`warmup_cosine`
  (linear warmup + cosine decay, for ``LambdaLR``).
* :func:`clip_grad_norm_`, :func:`clip_grad_value_` (``torch.nn.utils``'s).
* :func:`weight_decay_groups`: parameter groups without decay on biases and norms.
"""
from .adam import Adam, AdamW
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .lr_scheduler import CosineAnnealingLR, LambdaLR, LRScheduler, WarmupCosine, warmup_cosine
from .optimizer import Optimizer, required, weight_decay_groups
from .sgd import SGD

__all__ = [
    "Adam", "AdamW", "CosineAnnealingLR", "LRScheduler", "LambdaLR", "Optimizer", "SGD", "WarmupCosine",
    "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "required",
    "warmup_cosine", "weight_decay_groups",
]
