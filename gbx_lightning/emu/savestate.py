"""Masked per-env copies between machine states (reset from the power-on template, restore
from a snapshot) done in kernels, never in a Python loop over envs."""
import warp as wp


@wp.kernel(enable_backward=False)
def masked_copy_u8(src: wp.array2d(dtype=wp.uint8), dst: wp.array2d(dtype=wp.uint8),
                   mask: wp.array(dtype=wp.int32), broadcast: int):
    env, k = wp.tid()
    if mask[env] != 0:
        s = env
        if broadcast != 0:
            s = 0
        dst[env, k] = src[s, k]


@wp.kernel(enable_backward=False)
def masked_copy_i32(src: wp.array2d(dtype=wp.int32), dst: wp.array2d(dtype=wp.int32),
                    mask: wp.array(dtype=wp.int32), broadcast: int):
    env, k = wp.tid()
    if mask[env] != 0:
        s = env
        if broadcast != 0:
            s = 0
        dst[env, k] = src[s, k]


@wp.kernel(enable_backward=False)
def masked_copy_i64(src: wp.array2d(dtype=wp.int64), dst: wp.array2d(dtype=wp.int64),
                    mask: wp.array(dtype=wp.int32), broadcast: int):
    env, k = wp.tid()
    if mask[env] != 0:
        s = env
        if broadcast != 0:
            s = 0
        dst[env, k] = src[s, k]


_KERNELS = {wp.uint8: masked_copy_u8, wp.int32: masked_copy_i32, wp.int64: masked_copy_i64}


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
