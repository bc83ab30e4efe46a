"""Every Warp module of the project compiles for CUDA (NVRTC, sm_90 PTX), also on machines
without a GPU: the kernels are tested on Warp's CPU device, and this keeps their CUDA side
compiling (device code paths, no CPU-only constructs). Running them on a GPU is the job of
the `cuda`-marked tests. Compiled PTX goes to Warp's kernel cache, so only the first run of
a code version pays for the compile (~30 s for all modules on the development machine)."""
from __future__ import annotations

import importlib

import pytest
import warp as wp

# the modules that define kernels (the cpu module holds the whole machine kernel)
MODULES = ["gbx_lightning.emu.cpu", "gbx_lightning.emu.machine", "gbx_lightning.emu.mbc",
           "gbx_lightning.emu.savestate", "gbx_lightning.envs.foraging_kernels", "gbx_lightning.envs.pixels"]


def _nvrtc_archs() -> int:
    """CUDA architectures Warp's bundled NVRTC can target (0: a CPU-only Warp build)."""
    wp.init()
    from warp._src import context   # no public query for NVRTC without a CUDA driver

    core = getattr(context.runtime, "core", None)
    if core is None or not hasattr(core, "wp_nvrtc_supported_arch_count"):
        return 0
    return int(core.wp_nvrtc_supported_arch_count())


@pytest.mark.parametrize("name", MODULES)
def test_module_compiles_for_cuda(name):
    if _nvrtc_archs() == 0:
        pytest.skip("this Warp build has no NVRTC")
    importlib.import_module(name)
    paths = wp.compile_aot_module(name, arch=90, use_ptx=True)
    assert paths and all(p.suffix == ".ptx" and p.stat().st_size > 0 for p in paths)
