"""Per-env copies between machine states, done in kernels, never in a Python loop over envs:
reset from the power-on template, restore from a snapshot, reset ended envs from a cache of
start states; and the state file format (one env's machine in an ``.npz``).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import warp as wp

STATE_FILE_FORMAT = "gbx_lightning.state"
STATE_FILE_VERSION = 4   # 2: the rows' sha256 (rows_sha256) is stored and checked; 3: the APU's counters;
                         # 4: the PPU's mode-3 write log (ppu_log)
STATE_FILE_VERSIONS_READ = (2, 3, 4)   # a version-2 file has no "apu" row: its counters start from the file's
                                       # time; before 4 no "ppu_log": empty (no line in mode 3 has writes)


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


@wp.kernel(enable_backward=False)
def gather_rows(cache: wp.array2d(dtype=Any), dst: wp.array2d(dtype=Any),
                slot: wp.array(dtype=wp.int32), mask: wp.array(dtype=wp.uint8), chunk: int):
    """dst[env, k] = cache[slot[env], k] for k in this thread's chunk, where mask[env] != 0.

    `chunk` elements per thread: the whole row on a CPU (one thread per env, so envs that
    did not end cost one test), 1 on a GPU (neighbouring threads copy neighbouring bytes:
    coalesced). A slot outside the cache copies nothing.
    """
    env, c = wp.tid()
    if mask[env] == wp.uint8(0):
        return
    s = slot[env]
    if s < 0 or s >= cache.shape[0]:
        return
    k1 = wp.min((c + 1) * chunk, dst.shape[1])
    for k in range(c * chunk, k1):
        dst[env, k] = cache[s, k]


# Concrete instances for the element types the machine state uses (compiled with the module).
_DTYPES = (wp.uint8, wp.int32, wp.int64)
_KERNELS = {dt: wp.overload(masked_copy_rows, [wp.array2d(dtype=dt), wp.array2d(dtype=dt),
                                                wp.array(dtype=wp.int32), int])
            for dt in _DTYPES}
_GATHER = {dt: wp.overload(gather_rows, [wp.array2d(dtype=dt), wp.array2d(dtype=dt),
                                         wp.array(dtype=wp.int32), wp.array(dtype=wp.uint8), int])
           for dt in _DTYPES}


def _rows(arr: wp.array) -> wp.array:
    """The array as [envs, elements per env] (a view; a 2-d array as it is: r32/r64 in the soa
    layout are strided [env, slot] views, which the kernels index logically)."""
    if arr.ndim == 2:
        return arr
    width = 1
    for s in arr.shape[1:]:
        width *= s
    return arr.reshape((arr.shape[0], width))


def masked_copy(src: wp.array, dst: wp.array, mask: wp.array, broadcast: bool) -> None:
    """dst[env] = src[env] (or src[0] when broadcast) for every env with mask[env] != 0."""
    d2, s2 = _rows(dst), _rows(src)
    wp.launch(_KERNELS[dst.dtype], dim=d2.shape, inputs=[s2, d2, mask, int(broadcast)],
              device=dst.device)


def record_gather(cache: wp.array, dst: wp.array, slot: wp.array, mask: wp.array) -> wp.Launch:
    """A recorded launch of dst[env] = cache[slot[env]] where mask[env] (replay with .launch())."""
    d2, c2 = _rows(dst), _rows(cache)
    width = d2.shape[1]
    chunk = 1 if dst.device.is_cuda else width
    return wp.launch(_GATHER[dst.dtype], dim=(d2.shape[0], -(-width // chunk)),
                     inputs=[c2, d2, slot, mask, chunk], device=dst.device, record_cmd=True)


# ---- state files -----------------------------------------------------------------------------
class StateFileError(ValueError):
    """A state file that cannot be loaded; the message names the file and the reason."""


def write_state_file(path: str | os.PathLike, rows: dict[str, np.ndarray], rom_sha256: str,
                     rom_title: str = "") -> None:
    """Write one env's machine rows (name -> per-env array) as a gbx_lightning state file.

    An ``.npz`` holding the format name, version and the ROM's sha256 next to the rows, so a
    load can refuse a state made for another ROM or by an incompatible version. Written to a
    temporary file and renamed, so a crash never leaves a torn file under `path`.
    """
    path = os.fspath(path)
    meta = {"format": np.array(STATE_FILE_FORMAT), "version": np.array(STATE_FILE_VERSION),
            "rom_sha256": np.array(rom_sha256), "rom_title": np.array(rom_title),
            "rows_sha256": np.array(rows_digest(rows))}
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **meta, **{f"row_{k}": v for k, v in rows.items()})
    os.replace(tmp, path)


def read_state_file(path: str | os.PathLike, layout: list[tuple[str, tuple, type]],
                    rom_sha256: str) -> dict[str, np.ndarray]:
    """One env's machine rows from a state file, checked against the machine's layout and ROM."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no state file at {path!r}")
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except Exception as err:  # noqa: BLE001 - a damaged zip fails in many ways (bad CRC, compression, struct, zlib)
        raise StateFileError(f"{path}: not a gbx_lightning state file ({type(err).__name__}: {err})") from None
    fmt = str(data.get("format", ""))
    if fmt != STATE_FILE_FORMAT:
        raise StateFileError(f"{path}: not a gbx_lightning state file (format {fmt!r}, expected "
                             f"{STATE_FILE_FORMAT!r}); a PyBoy savestate loads with load_pyboy_state")
    version = int(data.get("version", -1))
    if version not in STATE_FILE_VERSIONS_READ:
        raise StateFileError(f"{path}: state file version {version}, this build reads versions "
                             f"{', '.join(map(str, STATE_FILE_VERSIONS_READ))}")
    theirs = str(data.get("rom_sha256", ""))
    if theirs != rom_sha256:
        raise StateFileError(f"{path}: the state was saved for another ROM (sha256 {theirs[:12]}..., "
                             f"{str(data.get('rom_title', ''))!r}), the loaded ROM has {rom_sha256[:12]}...")
    rows = {}
    missing = {}
    for name, shape, dt in layout:
        arr = data.get(f"row_{name}")
        if arr is None and ((name == "apu" and version == 2) or (name == "ppu_log" and version < 4)):
            missing[name] = (shape, dt)
            continue
        if arr is None or arr.shape != shape or arr.dtype != np.dtype(dt):
            got = "missing" if arr is None else f"{arr.dtype} {arr.shape}"
            raise StateFileError(f"{path}: machine field {name!r} must be {np.dtype(dt)} {shape}, got {got}")
        rows[name] = arr
    if str(data.get("rows_sha256", "")) != rows_digest(rows):
        raise StateFileError(f"{path}: the machine fields were changed after the state was saved (their sha256 "
                             f"does not match the one saved with them)")
    if "apu" not in rows:
        rows["apu"] = apu_row_from(rows)
    if "ppu_log" in missing:
        rows["ppu_log"] = np.zeros(*missing["ppu_log"])
    check_clock_words(rows, path)
    return rows


def rows_digest(rows: dict[str, np.ndarray]) -> str:
    """sha256 of one env's machine rows (names, dtypes, shapes and bytes), saved with them: the kernels index
    memory with some of these words, so a file edited by hand is refused rather than trusted."""
    import hashlib

    h = hashlib.sha256()
    for name in sorted(rows):
        arr = np.ascontiguousarray(rows[name])
        h.update(f"{name}:{arr.dtype.str}:{arr.shape};".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def apu_row_from(rows: dict[str, np.ndarray]) -> np.ndarray:
    """The APU counters of a machine saved before they existed (state file version 2): current at its CPU
    time, length timers and sweep at rest (emu/apu.py)."""
    from . import state as S

    apu = np.zeros(S.NUM_APU, np.int64)
    apu[S.A_SYNC_T] = int(rows["r64"][int(S.T_NOW)])
    apu[S.A_WAVE_PERIOD] = 4096
    return apu


MAX_TIME = 1 << 52   # T-cycles: ~34 years of emulated time, far beyond any state a machine reaches


def check_clock_words(rows: dict[str, np.ndarray], where: str) -> None:
    """Refuse a state whose clock words no running machine can hold: the kernel would run (or catch up) that
    many cycles, and never return. (The zip's CRCs catch damaged bytes and ``rows_sha256`` edited fields; this
    is the last line, for a file whose digest was made to match.)

    Checked: every r64 timestamp within +-MAX_TIME (NEVER, 2**62, for "no event"; the idle-loop signatures
    are hashes, not times), the CPU time in [0, MAX_TIME], with the LCD on the current line's start at most
    a frame before the CPU time, and LY a line number (0..153).
    """
    from . import state as S

    r64, r32, io = rows["r64"].astype(np.int64), rows["r32"], rows["io"]
    hashes = {int(S.T_IDLE_SIG), int(S.T_IDLE_SIG2)}
    now = int(r64[int(S.T_NOW)])
    problems = []
    if not 0 <= now <= MAX_TIME:
        problems.append(f"CPU time {now}")
    for slot, value in enumerate(r64.tolist()):
        if slot not in hashes and value != int(S.NEVER) and not -MAX_TIME <= value <= MAX_TIME:
            problems.append(f"r64[{slot}] = {value}")
    apu = rows["apu"].astype(np.int64)
    for slot in (S.A_SYNC_T, S.A_WAVE_T):
        if not -MAX_TIME <= int(apu[int(slot)]) <= MAX_TIME:
            problems.append(f"apu[{int(slot)}] = {int(apu[int(slot)])}")
    if not -1 <= int(apu[int(S.A_STEP)]) <= 7 or not 0 <= int(apu[int(S.A_WAVE_PERIOD)]) <= 4096:
        problems.append(f"APU step {int(apu[int(S.A_STEP)])}, wave period {int(apu[int(S.A_WAVE_PERIOD)])}")
    ly = int(r32[int(S.R_LY)])
    if not 0 <= ly <= 153:
        problems.append(f"LY {ly}")
    line_start = int(r64[int(S.T_LINE_START)])
    if int(io[0x40]) & 0x80 and not now - 2 * S.FRAME_CYCLES <= line_start <= now:
        problems.append(f"line start {line_start} with the LCD on at CPU time {now}")
    if problems:
        raise StateFileError(f"{where}: not a state a Game Boy can be in ({', '.join(problems[:3])})")
