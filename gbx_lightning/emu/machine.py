"""VecGameBoy: N DMG Game Boys stepped by one Warp kernel (one thread = one Game Boy)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import warp as wp

from . import state as S
from .bus import bus_peek
from .cartridge import load_boot_rom, load_cartridge
from .cpu import kernel_for, kernel_inputs
from .ppu import POST_BOOT_LINE0_T
from .render import BIT_BYTES, LINE_BUF_WORDS
from .savestate import masked_copy, read_state_file, record_gather, write_state_file
from .state import (NEVER, R_HALTED, R_LOCKED, R_STOPPED, T_NOW,
                    Machine, MachineRef, machine_ref)

RENDER_MODES = {"none": 0, "obs": 1, "full": 2}


@wp.kernel(enable_backward=False)
def peek_kernel(ms: MachineRef, env: int, addr0: int, out: wp.array(dtype=wp.uint8)):
    m = ms[0]
    i = wp.tid()
    out[i] = wp.uint8(bus_peek(ms, env, (addr0 + i) & 0xFFFF, m.r64[env, T_NOW]))


# ----------------------------------------------------------------------------------------
REGISTERED_MARK = (0x3C, 0x42, 0xB9, 0xA5, 0xB9, 0xA5, 0x42, 0x3C)  # the boot ROM's (R) tile


def boot_logo_vram(rom: np.ndarray) -> np.ndarray:
    """VRAM as the DMG boot ROM leaves it (Pan Docs, Power Up Sequence): cleared, the header
    logo ($0104-$0133) unpacked into tiles 1-24 (each nibble -> two tile rows, each bit
    doubled, bit plane 0), the (R) mark in tile 25, BG map rows at $9904 and $9924."""
    vram = np.zeros(0x2000, np.uint8)
    doubled = [sum(((n >> b) & 1) * (3 << (2 * b)) for b in range(4)) for n in range(16)]
    addr = 0x10
    for byte in rom[0x104:0x134]:
        for nib in (int(byte) >> 4, int(byte) & 0xF):
            vram[addr] = vram[addr + 2] = doubled[nib]
            addr += 4
    for i, row in enumerate(REGISTERED_MARK):
        vram[0x190 + 2 * i] = row
    vram[0x1904:0x1910] = np.arange(1, 13)
    vram[0x1910] = 0x19
    vram[0x1924:0x1930] = np.arange(13, 25)
    return vram


@dataclass
class Snapshot:
    """Whole-machine state of every env (device arrays in the machine's layout: r32/r64 soa when
    the machine's are; the copies index logically, so a snapshot restores into either layout)."""
    arrays: dict
    num_envs: int
    rom_sha256: str


def _check_int(name, value, minimum=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, got {value}")
    return int(value)


class VecGameBoy:
    """`num_envs` DMG Game Boys on one Warp device, all running the same cartridge.

    The ROM is stored once; each env holds only writable state (see ``state_bytes_per_env``).
    ``run_frames`` is one kernel launch for all frames and envs.
    """

    # The arrays stored [slot, env] in the "soa" layout (state.per_env_zeros; issue 24).
    SOA_ARRAYS = ("r32", "r64")

    def __init__(self, rom, num_envs: int, *, device: str = "cpu", boot_rom=None, layout: str | None = None):
        """layout: how r32/r64 are stored, "rows" or "soa" (state.LAYOUTS); None: soa where the code is built
        for it (GBX_EMU_LAYOUT=soa at import, which soa needs), else rows."""
        num_envs = _check_int("num_envs", num_envs, 1)
        self.cart = load_cartridge(rom)
        boot = None if boot_rom is None else load_boot_rom(boot_rom)   # RomError if not 256 B
        self.num_envs = num_envs
        self.device = wp.get_device(device)
        self._boot = boot
        spec = self.cart.spec()
        self._mbc_regs = len(S.mbc_power_on_regs(spec))
        self._layout = S.per_env_layout(int(self.cart.ram_bytes), self._mbc_regs)
        d = self.device
        self.layout = S.check_layout(S.default_layout(d) if layout is None else layout, d)
        self._arrays = {name: self._zeros(num_envs, name, shape, wp.dtype_from_numpy(np.dtype(dt)))
                        for name, shape, dt in self._layout}
        self._template = {name: wp.array(arr[None], device=d)
                          for name, arr in self._power_on_template(spec).items()}
        m = Machine()
        m.rom = wp.array(self.cart.rom, dtype=wp.uint8, device=d)
        m.boot = wp.array(boot if boot is not None else np.zeros(256, np.uint8), dtype=wp.uint8,
                          device=d)
        m.io_rmask = wp.array(S.IO_READ_MASK, dtype=wp.uint8, device=d)
        m.spec = spec
        for name, arr in self._arrays.items():
            setattr(m, name, arr)
        m.line_buf = wp.zeros((num_envs, LINE_BUF_WORDS), dtype=wp.uint64, device=d)
        m.bit_bytes = wp.array(BIT_BYTES, dtype=wp.uint64, device=d)
        m.flat_addr = wp.zeros((1, 1), dtype=wp.int32, device=d)
        m.flat_val = wp.zeros((1, 1), dtype=wp.uint8, device=d)
        m.flat_mode = 0
        m.render_mode = RENDER_MODES["full"]
        m.idle_skip = 1
        self._m = m
        self._refs = {}   # render mode -> MachineRef of self._m (its arrays never change)
        self._no_buttons = wp.zeros(num_envs, dtype=wp.uint8, device=d)
        # numpy buttons are copied here on the CPU device (kernels there run synchronously,
        # so the next copy cannot race a launch still reading it)
        self._button_stage = wp.zeros(num_envs, dtype=wp.uint8, device=d)
        self._launches = {}   # render mode -> [recorded machine_kernel launch, its last frames, buttons, release]
        self._gather = None   # the last restore_from's arrays and recorded launches
        self.reset()

    def _zeros(self, n: int, name: str, shape: tuple, dtype) -> wp.array:
        """A zeroed [n, *shape] per-env array for state `name`, in this machine's layout."""
        layout = self.layout if name in self.SOA_ARRAYS else "rows"
        return S.per_env_zeros(n, shape, dtype, self.device, layout)

    # -- state ---------------------------------------------------------------------------
    @property
    def state_bytes_per_env(self) -> int:
        """Bytes of per-env state (everything writable, incl. frame and obs buffers)."""
        return int(sum(int(np.prod(shape)) * np.dtype(dt).itemsize
                       for _, shape, dt in self._layout))

    @property
    def state_names(self) -> tuple[str, ...]:
        """The names of the per-env state arrays (``state_array``): together, the whole machine."""
        return tuple(self._arrays)

    def state_array(self, name: str) -> wp.array:
        """The live per-env state array ``name`` ([num_envs, ...]; e.g. "wram", uint8[num_envs, 8192]). The
        same object for the machine's life, so zero-copy views of it (``wp.to_torch``) stay valid; writing
        into it changes the machines."""
        if name not in self._arrays:
            raise KeyError(f"name: expected one of {list(self._arrays)}, got {name!r}")
        return self._arrays[name]

    def _power_on_template(self, spec) -> dict:
        t = {name: np.zeros(shape, dtype=dt) for name, shape, dt in self._layout}
        t["mbc"][:] = S.mbc_power_on_regs(spec)
        r32, r64, io = t["r32"], t["r64"], t["io"]
        never = int(NEVER.value if hasattr(NEVER, "value") else NEVER)
        r64[S.T_TIMA_OVERFLOW] = -1
        r64[S.T_TIMA_RELOADED] = -1000
        r64[S.T_TIMER_EVENT] = never
        r64[S.T_SERIAL_END] = never
        r32[S.R_JOYP_LINES] = 0xF
        if self._boot is None:
            post_boot = dict(a=0x01, f=0xB0, b=0x00, c=0x13, d=0x00, e=0xD8, h=0x01, l=0x4D,
                             sp=0xFFFE, pc=0x0100)
            for name, v in post_boot.items():
                r32[S.REG_SLOTS[name]] = v
            for reg, v in S.POST_BOOT_IO.items():
                io[reg] = v
            io[0x41] = 0x85 & 0x78
            r64[S.T_DIV_BASE] = -S.POST_BOOT_SYSTEM_COUNTER
            r32[S.R_LY], r32[S.R_PPU_MODE] = 153, 1
            r64[S.T_LINE_START] = POST_BOOT_LINE0_T - 456
            r64[S.T_PPU_EVENT] = POST_BOOT_LINE0_T
            t["vram"][:] = boot_logo_vram(self.cart.rom)
            t["apu"][S.A_LEN1] = 64      # the boot ROM writes NR11 = $80 (length 0: 64 clocks) and triggers CH1
        else:
            r64[S.T_BOOT_MAPPED] = 1
            io[0x00] = 0xCF
            io[0x46] = 0xFF
            io[0x0F] = 0xE0
            r64[S.T_DIV_BASE] = 0
            r64[S.T_PPU_EVENT] = never
        r64[S.T_NEXT_EVENT] = min(r64[S.T_TIMER_EVENT], r64[S.T_PPU_EVENT], r64[S.T_SERIAL_END])
        return t

    def _mask_array(self, mask, name="mask"):
        if mask is None:
            return wp.array(np.ones(self.num_envs, np.int32), device=self.device)
        if isinstance(mask, wp.array):
            mask = mask.numpy()
        mask = np.asarray(mask)
        if mask.shape != (self.num_envs,) or not (mask.dtype == np.bool_ or
                                                   np.issubdtype(mask.dtype, np.integer)):
            raise ValueError(f"{name}: expected bool/int array of shape ({self.num_envs},), "
                             f"got {mask.dtype} {mask.shape}")
        return wp.array(mask.astype(np.int32), device=self.device)

    def reset(self, mask=None) -> None:
        """Power-on (post-boot DMG state, PC=$0100; or boot ROM at $0000) for envs in mask."""
        m = self._mask_array(mask)
        for name, arr in self._arrays.items():
            masked_copy(self._template[name], arr, m, broadcast=True)

    def snapshot(self) -> Snapshot:
        arrays = {}
        for k, v in self._arrays.items():
            arrays[k] = self._zeros(self.num_envs, k, tuple(v.shape[1:]), v.dtype)
            wp.copy(arrays[k], v)
        return Snapshot(arrays, self.num_envs, self.cart.sha256)

    def restore(self, snapshot: Snapshot, mask=None) -> None:
        """Copy the snapshot's state into every env (or those in mask), in kernels."""
        if not isinstance(snapshot, Snapshot):
            raise TypeError(f"snapshot: expected a Snapshot from .snapshot(), got "
                            f"{type(snapshot).__name__}")
        if (snapshot.num_envs != self.num_envs or set(snapshot.arrays) != set(self._arrays)
                or snapshot.rom_sha256 != self.cart.sha256):
            raise ValueError(f"snapshot: expected one taken from a machine with "
                             f"{self.num_envs} envs and this cartridge, got {snapshot.num_envs} envs")
        m = self._mask_array(mask)
        for name, arr in self._arrays.items():
            masked_copy(snapshot.arrays[name], arr, m, broadcast=False)

    # -- one env's state on the host: state files and start-state caches --------------------
    def env_rows(self, env: int = 0) -> dict:
        """Env `env`'s whole machine state as host arrays (field name -> per-env array)."""
        env = self._check_env(env)
        return {name: arr.numpy()[env].copy() for name, arr in self._arrays.items()}

    def load_rows(self, rows: dict, mask=None) -> None:
        """Copy one env's state (``env_rows``) into every env (or those in mask), in kernels."""
        m = self._mask_array(mask)
        for name, arr in self._arrays.items():
            row = np.asarray(rows[name])
            if row.shape != tuple(arr.shape[1:]):
                raise ValueError(f"rows[{name!r}]: expected shape {tuple(arr.shape[1:])}, got {row.shape}")
            src = wp.array(np.ascontiguousarray(row, dtype=wp.dtype_to_numpy(arr.dtype))[None],
                           dtype=arr.dtype, device=self.device)
            masked_copy(src, arr, m, broadcast=True)

    def save_state(self, path, env: int = 0) -> None:
        """Write env `env`'s machine to a state file (an .npz with the ROM's sha256; see
        savestate.write_state_file). ``load_state`` reads it back, into any number of envs."""
        write_state_file(path, self.env_rows(env), self.cart.sha256, self.cart.title)

    def load_state(self, path, mask=None) -> None:
        """Load a state file written by ``save_state`` into every env (or those in mask);
        refused (StateFileError) if it was saved for another ROM or does not fit this machine."""
        rows = read_state_file(path, [(n, tuple(s), dt) for n, s, dt in self._layout], self.cart.sha256)
        self.load_rows(rows, mask)

    def make_cache(self, rows_list: list) -> Snapshot:
        """A cache of start states on this device: one "env" per entry of rows_list (each
        ``env_rows``-shaped). ``restore_from`` resets envs from it."""
        if not rows_list:
            raise ValueError("rows_list: expected at least one state, got none")
        arrays = {}
        for name, arr in self._arrays.items():
            stacked = np.stack([np.asarray(r[name]) for r in rows_list]).astype(wp.dtype_to_numpy(arr.dtype))
            arrays[name] = self._zeros(len(rows_list), name, tuple(arr.shape[1:]), arr.dtype)
            wp.copy(arrays[name], wp.array(stacked, dtype=arr.dtype, device=self.device))
        return Snapshot(arrays, len(rows_list), self.cart.sha256)

    def make_pool(self, rows_list: list, capacity: int) -> Snapshot:
        """A cache of ``capacity`` states on this device whose first ``len(rows_list)`` entries are rows_list (as
        ``make_cache``) and the rest zeros, to be filled by ``store_into``: start states and a pool of states
        harvested from running envs in one cache, so ``restore_from`` resets envs from either."""
        if not rows_list or capacity < len(rows_list):
            raise ValueError(f"capacity: expected at least len(rows_list) = {len(rows_list)} (>= 1), got {capacity}")
        arrays = {}
        for name, arr in self._arrays.items():
            stacked = np.stack([np.asarray(r[name]) for r in rows_list]).astype(wp.dtype_to_numpy(arr.dtype))
            full = self._zeros(capacity, name, tuple(arr.shape[1:]), arr.dtype)
            wp.copy(full[:len(rows_list)], wp.array(stacked, dtype=arr.dtype, device=self.device))
            arrays[name] = full
        return Snapshot(arrays, capacity, self.cart.sha256)

    def store_into(self, cache: Snapshot, envs: wp.array, mask: wp.array) -> None:
        """cache state j <- env envs[j], for every j with mask[j] != 0 (an env index outside 0..num_envs-1 copies
        nothing): the reverse of ``restore_from``, harvesting running envs' states into a pool (``make_pool``).
        envs: int32[cache entries], mask: uint8[cache entries], wp.arrays on this device read in the kernels (no
        host sync); the launches are recorded on the first call for these arrays and replayed after."""
        if not isinstance(cache, Snapshot) or cache.rom_sha256 != self.cart.sha256 \
                or set(cache.arrays) != set(self._arrays):
            raise ValueError("cache: expected a Snapshot from make_pool()/make_cache() of a machine with this "
                             "cartridge")
        for name, arr in (("envs", envs), ("mask", mask)):
            want = wp.int32 if name == "envs" else wp.uint8
            if not isinstance(arr, wp.array) or arr.dtype != want or arr.shape != (cache.num_envs,) \
                    or arr.device != self.device:
                raise ValueError(f"{name}: expected a {want.__name__}[{cache.num_envs}] wp.array on {self.device}, "
                                 f"got {arr!r}")
        rec = getattr(self, "_store", None)
        if rec is None or rec[0] is not cache or rec[1] is not envs or rec[2] is not mask:
            # gather_rows with the roles swapped: each cache entry (a "dst env") takes a machine's row as its "slot"
            rec = self._store = (cache, envs, mask, [record_gather(a, cache.arrays[n], envs, mask)
                                                     for n, a in self._arrays.items()])
        for cmd in rec[3]:
            cmd.launch()

    def restore_from(self, cache: Snapshot, slots: wp.array, mask: wp.array) -> None:
        """env i <- cache state slots[i], for every i with mask[i] != 0: the reset of ended RL
        envs. slots: int32[num_envs], mask: uint8[num_envs], both wp.arrays on this device,
        read in the kernels (no host sync). The launches are recorded on the first call for
        these arrays and replayed after (pass the same array objects every step)."""
        if not isinstance(cache, Snapshot) or cache.rom_sha256 != self.cart.sha256 \
                or set(cache.arrays) != set(self._arrays):
            raise ValueError("cache: expected a Snapshot from make_cache()/snapshot() of a machine "
                             "with this cartridge")
        for name, arr in (("slots", slots), ("mask", mask)):
            want = wp.int32 if name == "slots" else wp.uint8
            if not isinstance(arr, wp.array) or arr.dtype != want or arr.shape != (self.num_envs,) \
                    or arr.device != self.device:
                raise ValueError(f"{name}: expected a {want.__name__}[{self.num_envs}] wp.array on "
                                 f"{self.device}, got {arr!r}")
        rec = self._gather     # (cache, slots, mask, launches): held, so the arrays stay alive
        if rec is None or rec[0] is not cache or rec[1] is not slots or rec[2] is not mask:
            rec = self._gather = (cache, slots, mask, [record_gather(cache.arrays[n], a, slots, mask)
                                                       for n, a in self._arrays.items()])
        for cmd in rec[3]:
            cmd.launch()

    def load_pyboy_state(self, path_or_bytes, mask=None) -> None:
        """Import a PyBoy 2.8.x savestate (path, bytes or binary file) into every env (or
        those in mask); checked against this cartridge first (emu/pyboy_state.py)."""
        from .pyboy_state import load_pyboy_state
        load_pyboy_state(self, path_or_bytes, mask)

    # -- running ---------------------------------------------------------------------------
    def run_frames(self, frames: int, buttons=None, release_after: int | None = None,
                   render: str = "full") -> None:
        """Run `frames` frames in every env, in one kernel launch.

        Frame boundary: while the LCD is on, a frame ends as the VBlank interrupt is
        requested (2 T after LY becomes 144), so afterwards frame() and obs() hold one
        whole, just-completed frame, and frames line up with gambatte's. While the LCD is
        off a frame is 70224 T-cycles. In general a frame ends at the first of: the VBlank
        request, or 70224 T after the previous frame ended (which only comes first with
        the LCD off or in the frame the LCD is switched on in). Ends fall on instruction
        boundaries (the instruction in progress completes). The first frame after reset
        ends at the first VBlank request, 65722 T-cycles after power-on.

        buttons: uint8[num_envs] (bit0 Right, 1 Left, 2 Up, 3 Down, 4 A, 5 B, 6 Select,
        7 Start), pressed from frame 0 and released at frame `release_after` (held through
        all frames, and after, if None); None = no button pressed.
        render: "full" (frame() and obs()), "obs" (obs() only) or "none". Only the last
        frame of the call is drawn: the earlier ones would be overwritten unseen (an env that
        repeats an action for 24 frames pays for one drawn frame).
        A wp.array for buttons (uint8, on this device) is read in the kernel directly.
        """
        frames = _check_int("frames", frames, 0)
        if render not in RENDER_MODES:
            raise ValueError(f"render: expected one of {sorted(RENDER_MODES)}, got {render!r}")
        rel = -1
        if release_after is not None:
            rel = _check_int("release_after", release_after, 0)
        if buttons is None:
            b = self._no_buttons
        elif isinstance(buttons, wp.array):           # used as is: no copy, no host sync
            if (buttons.dtype != wp.uint8 or buttons.shape != (self.num_envs,)
                    or buttons.device != self.device):
                raise ValueError(f"buttons: expected a uint8[{self.num_envs}] wp.array on "
                                 f"{self.device}, got {buttons.dtype.__name__}"
                                 f"{list(buttons.shape)} on {buttons.device}")
            b = buttons
        else:
            arr = np.asarray(buttons)
            if arr.dtype != np.uint8 or arr.shape != (self.num_envs,):
                raise ValueError(f"buttons: expected a uint8 array of shape ({self.num_envs},) "
                                 f"(bitmask: bit0 Right .. bit7 Start), got {arr.dtype} {arr.shape}")
            if self._button_stage.device.is_cpu:
                self._button_stage.numpy()[:] = arr
                b = self._button_stage
            else:
                b = wp.array(arr, dtype=wp.uint8, device=self.device)
        if frames == 0:
            return
        self._launch(render, frames, b, rel)

    def _launch(self, render: str, frames: int, buttons: wp.array, release: int) -> None:
        """The machine kernel (cpu.kernel_for: the CPU or the CUDA shape) from a command recorded
        once per render mode (wp.launch with record_cmd): packing all of its arguments anew took
        ~80 us of Python per call (more than one env's frame of the built-in game); only the
        arguments that changed are packed again."""
        rec = self._launches.get(render)
        kernel = kernel_for(self.device)
        if rec is None:
            cmd = wp.launch(kernel, dim=self.num_envs, device=self.device, record_cmd=True,
                            inputs=kernel_inputs(self._m, self._ref(render)) + [frames, buttons, 1, release])
            rec = self._launches[render] = [cmd, frames, buttons, release]
        cmd, n = rec[0], len(kernel.adj.args) - 4   # frames, buttons, set_flag, release_after
        if rec[1] != frames:
            cmd.set_param_at_index(n, frames)
            rec[1] = frames
        if rec[2] is not buttons:
            cmd.set_param_at_index(n + 1, buttons)
            rec[2] = buttons
        if rec[3] != release:
            cmd.set_param_at_index(n + 3, release)
            rec[3] = release
        cmd.launch()

    def _ref(self, render: str) -> wp.array:
        """The MachineRef the kernels take, with this render mode; built once per mode."""
        ref = self._refs.get(render)
        if ref is None:
            self._m.render_mode = RENDER_MODES[render]
            ref = self._refs[render] = machine_ref(self._m)
        return ref

    # -- outputs ---------------------------------------------------------------------------
    def frame(self) -> np.ndarray:
        """uint8[num_envs, 144, 160] shades 0..3: after run_frames, the frame that just
        completed (blank while the LCD is off and in the first frame after it is switched on)."""
        return self._arrays["frame"].numpy()

    def obs(self) -> wp.array:
        """The kernel-written observation buffer uint8[num_envs, 72, 80] (same array object
        every call, so wp.to_torch views stay valid)."""
        return self._arrays["obs"]

    def _check_env(self, env):
        env = _check_int("env", env)
        if not 0 <= env < self.num_envs:
            raise IndexError(f"env: expected 0 <= env < {self.num_envs}, got {env}")
        return env

    def serial_output(self, env: int = 0) -> bytes:
        """Every SB byte latched by an internal-clock transfer start, in order (the last
        SERIAL_CAP bytes if more were sent)."""
        env = self._check_env(env)
        count = int(self._arrays["r32"].numpy()[env, S.R_SERIAL_COUNT])
        ring = self._arrays["serial"].numpy()[env]
        cap = S.SERIAL_CAP_PY
        if count <= cap:
            return bytes(ring[:count])
        k = count % cap
        return bytes(np.concatenate([ring[k:], ring[:k]]))

    def registers(self, env: int = 0) -> dict:
        """a f b c d e h l sp pc ime halted, plus locked (illegal opcode hang), stopped
        (STOP) and cycles (T-cycles since reset)."""
        env = self._check_env(env)
        r = self._arrays["r32"].numpy()[env]
        out = {n: int(r[S.REG_SLOTS[n]]) for n in ("a", "f", "b", "c", "d", "e", "h", "l", "sp", "pc")}
        out["ime"] = int(r[S.R_IME])
        out["halted"] = int(r[R_HALTED] != 0)
        out["locked"] = int(r[R_LOCKED])
        out["stopped"] = int(r[R_STOPPED])
        out["cycles"] = int(self._arrays["r64"].numpy()[env, T_NOW])
        return out

    def read_memory(self, env: int, addr: int, length: int) -> bytes:
        """Bytes of the CPU address space (wrapping at $FFFF), read without side effects."""
        env = self._check_env(env)
        addr = _check_int("addr", addr, 0)
        if addr > 0xFFFF:
            raise ValueError(f"addr: expected 0..0xFFFF, got {addr:#x}")
        length = _check_int("length", length, 0)
        if length > 0x10000:
            raise ValueError(f"length: expected 0..65536, got {length}")
        if length == 0:
            return b""
        out = wp.zeros(length, dtype=wp.uint8, device=self.device)
        wp.launch(peek_kernel, dim=length, inputs=[self._ref("none"), env, addr, out], device=self.device)
        return bytes(out.numpy())
