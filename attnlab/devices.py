"""The devices a run may use: --device auto | cpu | cuda, resolved against what torch sees, and the
description a record names its device by.
"""
from __future__ import annotations

import os
import platform


DEVICES = ("auto", "cpu", "cuda")


def resolve_device(name: str) -> str:
    """'auto' -> 'cuda' when available else 'cpu'; 'cuda' without a GPU is a ValueError."""
    if name not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {name!r}")
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but torch.cuda.is_available() is False; use --device cpu")
    return name


def device_description(device: str) -> str:
    import torch

    if device == "cuda":
        return f"cuda:{torch.cuda.get_device_name(0)}"
    return f"cpu:{platform.processor() or platform.machine()} x{os.cpu_count()}"
