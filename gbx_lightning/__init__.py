"""gbx_lightning: RL on thousands of Game Boys emulated in NVIDIA Warp kernels, trained with Lightning."""

__version__ = "0.1.0"
