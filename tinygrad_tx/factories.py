"""placeholder: factories."""
TENSOR_METHODS = {}
FUNCTIONS = {}
