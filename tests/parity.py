import sys, reference.testing; sys.modules[__name__] = reference.testing  # noqa: E401,E702 - the kit is the harness
