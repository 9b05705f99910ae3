"""``python -m tinygrad_tx``: the ``tinygrad-tx`` command line (see :mod:`tinygrad_tx.cli`)."""
import sys

from .cli import main

sys.exit(main())
