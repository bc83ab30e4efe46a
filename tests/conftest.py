"""Shared pytest setup: quiet Warp, skip CUDA-marked tests without a GPU."""

import pytest


def _cuda_available() -> bool:
    try:
        import warp as wp

        wp.config.quiet = True
        wp.init()
        return wp.get_cuda_device_count() > 0
    except Exception:  # warp missing or broken: CUDA tests cannot run either
        return False


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


# torch.compile of the pixel policies' updates is on by default on a CPU with a C++ compiler (models.compile_choice):
# its ~30 s first compile would dominate the suite's short runs, so the suite runs them eager (this process and the
# CLI processes it starts). Tests of the compiled update set compile_update: true, which this does not change.
import os  # noqa: E402

os.environ.setdefault("GBX_COMPILE_UPDATE", "0")
