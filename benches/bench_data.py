"""Deterministic content shared by the benchmark scripts."""

import random


def pseudo_binary(seed: str, size: int) -> bytes:
    """Deterministic bytes that compress like a binary: 3/4 noise, 1/4 repeated text."""
    rng = random.Random(seed)
    text = (f"{seed} symbol table runtime.gopanic crypto/tls " * 64).encode()
    out = bytearray()
    while len(out) < size:
        out += rng.randbytes(3072) + text[:1024]
    return bytes(out[:size])
