"""``python -m tinygrad_tx.exercises list | start | check | solution`` (= ``tinygrad-tx exercise ...``)."""
import sys

from .commands import main

sys.exit(main())
