import sys, tinygrad_tx.testing.strategies; sys.modules[__name__] = tinygrad_tx.testing.strategies  # noqa: E401,E702
