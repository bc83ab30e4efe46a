"""A RAM map's field and its decoder: ``RamField`` (``count`` numbers of ``size`` bytes from ``address``; the
format is ``ram_map.py``'s docstring) and ``FieldReader`` (a field's numbers for every env, on the device).

Apart from ``ram_map.py`` (which reads RAM maps from YAML) so that ``world.py`` can read fields without importing the
module that parses it.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["FieldReader", "RamField"]


@dataclass(frozen=True)
class RamField:
    """``count`` numbers of ``size`` bytes from ``address`` (module docstring)."""
    name: str
    address: int
    size: int = 1
    count: int = 1
    stride: int | None = None
    endian: str = "little"
    bcd: bool = False
    meaning: str = ""

    @property
    def step(self) -> int:
        return self.size if self.stride is None else self.stride

    @property
    def span(self) -> int:
        """Bytes from the first to the last one the field covers."""
        return (self.count - 1) * self.step + self.size

    @property
    def bits(self) -> int:
        """Bits of one number (its wrap width as a counter)."""
        return 8 * self.size

    def describe(self) -> str:
        shape = f"{self.count} x {self.size} B" if self.count > 1 else f"{self.size} B"
        return f"{self.name} (0x{self.address:04X}, {shape})"



class FieldReader:
    """A field's numbers for every env, decoded on the device: ``reader(env) -> int64 [N, count]``.

    value[n, k] = sum_j digit(byte[n, k, j]) * base**(place of j), byte[n, k, j] the j-th byte of number k at
    ``address + k * stride + j``; place of j is j (little endian) or size - 1 - j (big endian); base 256 (binary)
    or 100 with digit(b) = 10 * (b >> 4) + (b & 15) (BCD).
    """

    def __init__(self, ram_field: RamField, device: torch.device):
        self.field = f = ram_field
        k = torch.arange(f.count, device=device)[:, None] * f.step
        self.index = (k + torch.arange(f.size, device=device)[None, :]).reshape(-1)     # [count * size]
        places = torch.arange(f.size, device=device)
        if f.endian == "big":
            places = f.size - 1 - places
        self.scale = (100 if f.bcd else 256) ** places.to(torch.int64)                   # [size]
        self.contiguous = f.step == f.size

    def decode(self, raw: torch.Tensor) -> torch.Tensor:
        """int64 [N, count] from the field's bytes uint8 [N, span]."""
        f = self.field
        data = raw if self.contiguous else raw[:, self.index]
        data = data.reshape(raw.shape[0], f.count, f.size).to(torch.int64)
        if f.bcd:
            data = 10 * (data >> 4) + (data & 15)
        if f.size == 1:
            return data[..., 0]
        return (data * self.scale).sum(-1)

    def __call__(self, env) -> torch.Tensor:
        """The values now (int64 [N, count]): through ``env.read_field`` where the env has it (GameBoyEnv: decoded once
        per step while the machines stand still; not to be written into), else from ``env.read_ram``."""
        read = getattr(env, "read_field", None)
        return read(self) if read is not None else self.decode(env.read_ram(self.field.address, self.field.span))
