"""``tinygrad_tx.cuda``: no CUDA here (the engine is NumPy on the CPU), answered the way torch
answers on a machine without a GPU, so device-selection code (``'cuda' if
torch.cuda.is_available() else 'cpu'``) picks the CPU."""


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_bf16_supported() -> bool:
    return False


def manual_seed(seed) -> None:
    """Nothing to seed (as torch's on a CPU-only machine)."""


manual_seed_all = manual_seed


def synchronize(device=None) -> None:
    """Nothing runs asynchronously here."""
