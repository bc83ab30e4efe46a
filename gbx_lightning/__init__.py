"""gbx_lightning: RL on thousands of Game Boys emulated in NVIDIA Warp kernels, trained with Lightning."""

import os

# torch's OpenMP threads sleep when they wait rather than spin, unless the user says otherwise. A fit alternates the
# emulator's CPU shards (threads of our own) with the update (torch's threads); spinning OpenMP workers took cores
# from the shards and from other processes (docs/training.md, CPU speed). Read once, when torch loads its OpenMP
# runtime: it applies where this package is imported before torch (the CLI, the tools).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
