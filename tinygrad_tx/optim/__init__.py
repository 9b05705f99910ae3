"""Optimizers, learning-rate schedules and gradient clipping with ``torch.optim``'s API.

* :class:`SGD` (momentum, Nesterov, weight decay), :class:`Adam`, :class:`AdamW`
  (both with AMSGrad), :class:`RMSprop`, :class:`Adagrad`, :class:`Adadelta` (:mod:`.adaptive`),
  :class:`Adamax`, :class:`NAdam`, :class:`RAdam` (:mod:`.adam_variants`), :class:`LBFGS`
  (:mod:`.lbfgs`, with its strong-Wolfe line search): torch's signatures,
  defaults, update formulas and ``state_dict`` layout; parameters are updated in place.
* :mod:`.lr_scheduler` (``tinygrad_tx.optim.lr_scheduler``, torch's path): :class:`LambdaLR`,
  :class:`CosineAnnealingLR`, :class:`StepLR`, :class:`MultiStepLR`, :class:`ExponentialLR`,
  :class:`LinearLR`, :class:`ConstantLR`, :class:`OneCycleLR`, :class:`SequentialLR`,
  :class:`CosineAnnealingWarmRestarts`, :class:`ReduceLROnPlateau`, :class:`ChainedScheduler`, and
  :func:`warmup_cosine`
  (linear warmup + cosine decay, for ``LambdaLR``).
* :func:`clip_grad_norm_`, :func:`clip_grad_value_` (``torch.nn.utils``'s).
* :func:`weight_decay_groups`: parameter groups without decay on biases and norms.
"""
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, RMSprop
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from . import lr_scheduler
from .lr_scheduler import (ChainedScheduler, ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
                           ExponentialLR, LambdaLR,
                           LinearLR, LRScheduler, MultiStepLR, OneCycleLR, ReduceLROnPlateau, SequentialLR, StepLR,
                           WarmupCosine, warmup_cosine)
from .lbfgs import LBFGS
from .optimizer import Optimizer, required, weight_decay_groups
from .sgd import SGD

__all__ = [
    "Adam", "AdamW", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "ExponentialLR",
    "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "OneCycleLR", "Optimizer", "ReduceLROnPlateau", "SGD",
    "SequentialLR", "StepLR", "WarmupCosine", "lr_scheduler",
    "Adadelta", "Adagrad", "Adamax", "ChainedScheduler", "LBFGS", "NAdam", "RAdam", "RMSprop",
    "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "required",
    "warmup_cosine", "weight_decay_groups",
]
