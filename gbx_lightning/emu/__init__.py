"""gbx_lightning.emu: the DMG Game Boy in Warp kernels (no torch import here)."""
from .machine import Snapshot, VecGameBoy

__all__ = ["VecGameBoy", "Snapshot"]
