"""placeholder: filled in by the op-family work."""
TENSOR_METHODS = {}
FUNCTIONS = {}
