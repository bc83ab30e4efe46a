"""Kernels that call render.py's native (C++) helpers, built twice: as this module (with
Warp's default -march=native, so BMI2/AVX-512 here) and, through ``generic_build()``, as
a second Warp module compiled for a generic CPU, whose build takes the snippets' portable
branches that the development machine's native build never does. Two modules because
Warp's compiler flags are per module."""
import importlib.util
import sys

import warp as wp

from gbx_lightning.emu import render


@wp.kernel(enable_backward=False)
def even_bytes_pair(a: wp.array(dtype=wp.uint64), b: wp.array(dtype=wp.uint64), out: wp.array(dtype=wp.uint64)):
    i = wp.tid()
    out[i] = render._even_bytes_pair(a[i], b[i])


@wp.kernel(enable_backward=False)
def objects_covering(oam: wp.array2d(dtype=wp.uint8), lines: wp.array2d(dtype=wp.int32),
                     out: wp.array(dtype=wp.uint64)):
    i = wp.tid()
    out[i] = render._objects_covering(wp.uint64(oam.ptr) + wp.uint64(i * 160), lines[i, 0], lines[i, 1])


def generic_build():
    """This file loaded again as its own Warp module, compiled for a generic CPU."""
    name = __name__ + "_generic_cpu"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, __file__)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        wp.set_module_options({"cpu_compiler_flags": ""}, module=name)
    return sys.modules[name]
