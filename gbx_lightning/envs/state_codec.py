"""Machine states stored compactly: a state pool's entries in a checkpoint (``features/pool.py``).

A Game Boy's state is mostly the bytes of another one: two states of a game share most of their RAM, VRAM and
registers. Each entry (its machine's arrays and its frame stack, as bytes in a fixed order) is XORed with a
reference entry (the task's first start state) and compressed with zlib at level 1; where that would not be
smaller, the entry is kept as it is. Measured on orchard/level3 (``tools/pool_compression.py``, 913 pooled states of
73,465 bytes): zlib 1 alone 20x; XOR with the start state, then zlib 1, 67x at ~70 MB/s encode, ~160 MB/s decode on
one core (zlib 6: 137x at ~28 MB/s; lzma is no smaller and slower). Level 1, because a checkpoint compresses every
entry harvested since the last one and 67x already makes a full pool small beside the envs' own state.

``Layout``: the arrays of an entry, each (name, shape, dtype); ``pack`` one entry; the packed entries of a pool are
one uint8 blob with offsets, a method byte (0 stored, 1 XOR + zlib) and a CRC-32 each (a damaged entry is refused,
stored ones too), and the reference itself (zlib, with its sha256) rides with them, so a pool unpacks whatever the
task's start states are when it is loaded.
"""
from __future__ import annotations

import hashlib
import zlib

import numpy as np
import torch

__all__ = ["CODEC", "Layout", "StateCodecError", "pack", "pack_many", "unpack_many"]

CODEC = "xor-zlib1"
STORED, XOR_ZLIB = 0, 1


class StateCodecError(ValueError):
    """Packed states that do not unpack: the message says which entry and why."""


class Layout:
    """The arrays of one entry, in order: [(name, shape, dtype), ...]; ``nbytes`` of an entry."""

    def __init__(self, arrays: list[tuple[str, tuple[int, ...], str]]):
        self.arrays = [(str(n), tuple(int(s) for s in shape), str(dt)) for n, shape, dt in arrays]
        self.sizes = [int(np.prod(shape)) * np.dtype(dt).itemsize for _, shape, dt in self.arrays]
        self.nbytes = sum(self.sizes)

    @classmethod
    def of(cls, tensors: dict[str, torch.Tensor]) -> "Layout":
        """The layout of ``tensors`` (name -> [E, ...]): one row each."""
        return cls([(name, tuple(t.shape[1:]), str(t.dtype).removeprefix("torch.")) for name, t in tensors.items()])

    def to_list(self) -> list:
        return [[name, list(shape), dt] for name, shape, dt in self.arrays]

    def rows(self, tensors: dict[str, torch.Tensor]) -> list[bytes]:
        """Each row of ``tensors`` (CPU, name -> [E, ...], this layout's order) as the bytes of one entry."""
        parts = [np.ascontiguousarray(tensors[name].numpy()).reshape(tensors[name].shape[0], -1).view(np.uint8)
                 for name, _, _ in self.arrays]
        count = parts[0].shape[0] if parts else 0
        return [b"".join(p[i].tobytes() for p in parts) for i in range(count)]

    def tensors(self, entries: list[bytes]) -> dict[str, torch.Tensor]:
        """The inverse of ``rows``: name -> [E, ...] CPU tensors."""
        flat = np.frombuffer(b"".join(entries), np.uint8).reshape(len(entries), self.nbytes)
        out, at = {}, 0
        for (name, shape, dt), size in zip(self.arrays, self.sizes):
            part = np.ascontiguousarray(flat[:, at:at + size]).view(np.dtype(dt)).reshape(len(entries), *shape)
            out[name] = torch.from_numpy(part.copy())
            at += size
        return out


def pack(entry: bytes, reference: bytes) -> tuple[int, bytes]:
    """(method, bytes) of one entry against ``reference`` (the same length)."""
    delta = (np.frombuffer(entry, np.uint8) ^ np.frombuffer(reference, np.uint8)).tobytes()
    packed = zlib.compress(delta, 1)
    return (XOR_ZLIB, packed) if len(packed) < len(entry) else (STORED, entry)


def pack_many(packed: list[tuple[int, bytes]], reference: bytes, layout: Layout) -> dict:
    """The packed entries of a pool as checkpoint tensors (plain types and CPU tensors: ``weights_only`` loads)."""
    blob = b"".join(p for _, p in packed)
    offsets = np.cumsum([0] + [len(p) for _, p in packed]).astype(np.int64)
    return {"codec": CODEC, "layout": layout.to_list(),
            "reference": torch.frombuffer(bytearray(zlib.compress(reference, 1)), dtype=torch.uint8),
            "reference_sha256": hashlib.sha256(reference).hexdigest(),
            "methods": torch.tensor([m for m, _ in packed], dtype=torch.uint8),
            "crc32": torch.tensor([zlib.crc32(p) for _, p in packed], dtype=torch.int64),
            "offsets": torch.from_numpy(offsets), "blob": torch.frombuffer(bytearray(blob), dtype=torch.uint8)
            if blob else torch.zeros(0, dtype=torch.uint8)}


def unpack_many(state: dict, where: str) -> tuple[Layout, bytes, list[bytes], list[tuple[int, bytes]]]:
    """(layout, the reference, the entries' bytes, their packed form) of ``pack_many``'s output; StateCodecError naming the entry
    for anything that does not unpack (another codec, a damaged blob, a wrong length)."""
    if state.get("codec") != CODEC:
        raise StateCodecError(f"{where}: the state pool is stored as {state.get('codec')!r}, this code reads {CODEC!r}")
    try:
        layout = Layout([(n, tuple(s), dt) for n, s, dt in state["layout"]])
        reference = zlib.decompress(bytes(torch.as_tensor(state["reference"]).numpy()))
        methods = torch.as_tensor(state["methods"]).tolist()
        crcs = torch.as_tensor(state["crc32"]).tolist()
        offsets = torch.as_tensor(state["offsets"]).tolist()
        blob = bytes(torch.as_tensor(state["blob"]).numpy())
    except (KeyError, TypeError, ValueError, zlib.error) as err:
        raise StateCodecError(f"{where}: the state pool's packed form is damaged ({type(err).__name__}: {err})") \
            from None
    if len(reference) != layout.nbytes or hashlib.sha256(reference).hexdigest() != state.get("reference_sha256"):
        raise StateCodecError(f"{where}: the state pool's reference state is damaged (its length or sha256)")
    if len(offsets) != len(methods) + 1 or len(crcs) != len(methods) or offsets[0] != 0 or offsets[-1] != len(blob) or \
            any(b < a for a, b in zip(offsets, offsets[1:])):
        raise StateCodecError(f"{where}: the state pool's offsets do not fit its {len(blob)}-byte blob")
    ref = np.frombuffer(reference, np.uint8)
    entries, packed = [], []
    for j, (method, crc, lo, hi) in enumerate(zip(methods, crcs, offsets, offsets[1:])):
        data = blob[lo:hi]
        if zlib.crc32(data) != crc:
            raise StateCodecError(f"{where}: the state pool's entry {j} does not unpack (its CRC-32 does not match: "
                                  f"damaged)")
        try:
            entry = data if method == STORED else \
                (np.frombuffer(zlib.decompress(data), np.uint8) ^ ref).tobytes() if method == XOR_ZLIB else None
        except (zlib.error, ValueError) as err:
            raise StateCodecError(f"{where}: the state pool's entry {j} does not unpack ({err})") from None
        if entry is None or len(entry) != layout.nbytes:
            raise StateCodecError(f"{where}: the state pool's entry {j} does not unpack (method {method}, "
                                  f"{0 if entry is None else len(entry)} bytes where {layout.nbytes})")
        entries.append(entry)
        packed.append((method, data))
    return layout, reference, entries, packed
