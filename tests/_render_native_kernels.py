"""Kernels that call render.py's native (C++) helpers, compiled for a generic x86-64/ARM
target (no BMI2): so the tests also run the snippets' portable branches, which the
development machine's -march=native build never takes. A module of its own because
Warp's compiler flags are per module."""
import warp as wp

from gbx_lightning.emu import render

wp.set_module_options({"cpu_compiler_flags": ""})


@wp.kernel(enable_backward=False)
def even_bytes_pair_generic(a: wp.array(dtype=wp.uint64), b: wp.array(dtype=wp.uint64),
                            out: wp.array(dtype=wp.uint64)):
    i = wp.tid()
    out[i] = render._even_bytes_pair(a[i], b[i])


@wp.kernel(enable_backward=False)
def objects_covering_generic(oam: wp.array2d(dtype=wp.uint8), lines: wp.array2d(dtype=wp.int32),
                             out: wp.array(dtype=wp.uint64)):
    i = wp.tid()
    out[i] = render._objects_covering(wp.uint64(oam.ptr) + wp.uint64(i * 160), lines[i, 0], lines[i, 1])
