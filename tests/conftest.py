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
