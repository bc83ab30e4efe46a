"""Masked per-env copies between machine states (reset from the power-on template, restore
from a snapshot) done in kernels, never in a Python loop over envs."""
from typing import Any

import warp as wp


@wp.kernel(enable_backward=False)
def masked_copy_rows(src: wp.array2d(dtype=Any), dst: wp.array2d(dtype=Any),
                     mask: wp.array(dtype=wp.int32), broadcast: int):
    """dst[env, k] = src[env or 0, k] where mask[env] != 0 (generic over the element type)."""
    env, k = wp.tid()
    if mask[env] != 0:
        s = env
        if broadcast != 0:
            s = 0
        dst[env, k] = src[s, k]


# Concrete instances for the element types the machine state uses (compiled with the module).
_KERNELS = {dt: wp.overload(masked_copy_rows, [wp.array2d(dtype=dt), wp.array2d(dtype=dt),
                                                wp.array(dtype=wp.int32), int])
            for dt in (wp.uint8, wp.int32, wp.int64)}


def masked_copy(src: wp.array, dst: wp.array, mask: wp.array, broadcast: bool) -> None:
    """dst[env] = src[env] (or src[0] when broadcast) for every env with mask[env] != 0."""
    n = dst.shape[0]
    width = 1
    for s in dst.shape[1:]:
        width *= s
    d2 = dst.reshape((n, width))
    s2 = src.reshape((src.shape[0], width))
    wp.launch(_KERNELS[dst.dtype], dim=(n, width), inputs=[s2, d2, mask, int(broadcast)],
              device=dst.device)
