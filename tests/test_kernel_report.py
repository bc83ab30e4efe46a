"""The machine kernel's GPU footprint, measured without a GPU (tools/kernel_report.py: NVRTC PTX for sm_90,
assembled by ptxas -v), must not grow past the figures pinned here; lower them as the footprint work lands.
Skipped where no ptxas that reads Warp's PTX is installed (the gpu-dev extra provides one)."""
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import kernel_report  # noqa: E402

# The machine kernel the GPU runs (cpu.machine_kernel_staged, the CUDA shape, with the per-dot PPU path), sm_90,
# warp-lang 1.19 / ptxas 13.5: 255 registers, 2,120 B stack frame, 1,048 B spill stores, 1,402 B spill loads
# (2,096 before the refused window's colour-0 pixel, whose scanline-renderer side costs the 24 B; the form tried
# with a smaller frame spilled more: docs/gpu.md; 1,976 / 928 / 1,106 without the per-dot path,
# GBX_EMU_CUDA_DOTS=0; the CPU shape, which CUDA ran before:
# 255 / 5,416 / 4,636 / 4,724; 10,056 / 4,980 / 6,144 before the footprint work: docs/gpu.md, Kernel footprint)
PINNED = {"registers": 255, "stack": 2120, "spill_stores": 1048, "spill_loads": 1402}

PTXAS_SAMPLE = """\
ptxas info    : Compiling entry function 'machine_kernel_320e4d27_cuda_kernel_forward' for 'sm_90'
ptxas info    : Function properties for machine_kernel_320e4d27_cuda_kernel_forward
    10056 bytes stack frame, 4980 bytes spill stores, 6144 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 10056 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Function properties for _ZN66_INTERNAL_00000000_35_wp_gbx_lightning_emu_cpu_3bea4bc_cu_cdba681410io_write_0Eyiiix
    0 bytes stack frame, 1510 bytes spill stores, 1524 bytes spill loads
"""


def test_ptxas_lines_are_read_per_function():
    rows = kernel_report.parse_ptxas(PTXAS_SAMPLE)
    assert rows == [
        {"function": "machine_kernel", "kind": "kernel", "registers": 255, "stack": 10056, "spill_stores": 4980,
         "spill_loads": 6144},
        {"function": "io_write", "kind": "function", "registers": None, "stack": 0, "spill_stores": 1510,
         "spill_loads": 1524}]


def test_machine_kernel_footprint_does_not_grow():
    """The footprint of the CUDA shape, which tools/kernel_report.py reports for gbx_lightning.emu.cpu."""
    ptxas = kernel_report.find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas (pip install -e '.[gpu-dev]')")
    import warp as wp

    wp.init()
    from warp._src import context

    core = getattr(context.runtime, "core", None)
    if core is None or not hasattr(core, "wp_nvrtc_supported_arch_count") or not core.wp_nvrtc_supported_arch_count():
        pytest.skip("this Warp build has no NVRTC")
    try:
        rows = kernel_report.module_report("gbx_lightning.emu.cpu", 90, ptxas)
    except subprocess.CalledProcessError as err:
        if "Unsupported .version" in (err.stderr or ""):
            pytest.skip(f"{ptxas} is older than Warp's NVRTC (pip install -e '.[gpu-dev]')")
        raise
    (kernel,) = [r for r in rows if r["kind"] == "kernel"]      # only the kernel CUDA launches is reported
    assert kernel["function"] == "machine_kernel_staged"
    grown = {k: (kernel[k], v) for k, v in PINNED.items() if kernel[k] > v}
    assert not grown, f"machine_kernel_staged grew (now, pinned): {grown}"
