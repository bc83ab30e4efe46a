"""PPU timing: modes 2/3/0/1, LY/LYC, the STAT interrupt line, VBlank, LCD on/off.

Event driven and lazy: r64[T_PPU_EVENT] is the next PPU state change; ``ppu_sync(now)``
processes every event up to `now`. It runs when the CPU could tell the difference —
before any PPU register, VRAM/OAM slow-path access, IF read, IE write or OAM DMA start —
and at the stops bus.ppu_wake schedules (where a PPU interrupt the CPU could take is
requested), so mid-frame register writes land between the right lines. Each visible
line is drawn by render.py's ``render_line`` when its mode 3 ends, with the
registers of that moment; a line whose LCDC, SCY, SCX, BGP, OBP0/1, WY or WX the CPU
writes during its mode 3 is drawn dot by dot instead, from the logged writes, and a
write that moves its last pixel moves mode 3's end with it (``_mode3_write``,
ppu_dots.py; on every device unless GBX_EMU_CUDA_DOTS=0: ppu_dots.dots_compiled). A catch-up takes a visible line that lies wholly before `now`
in one step when no STAT source is enabled (nothing can observe its four events apart).

Times are T-cycles on the CPU's clock; the CPU's M-cycles start at multiples of 4. The
PPU's events fall between them (hardware: its dot clock is out of phase with the CPU's
M-cycles), which is what the CPU can observe at 1-M resolution: a read in the M-cycle at t
sees the PPU as it is at t + 1 (``READ_PHASE``), an interrupt request at time e is seen by
the instruction loop at the first M-cycle boundary at or after e, and a HALT wakes without
its extra M-cycle when e lies 2 or more T before that boundary (bus.sleep_until). Values
from the mooneye-gb acceptance tests verified on DMG (intr_2_*, hblank_ly_scx_timing,
lcdon_timing, lcdon_write_timing, vblank_stat_intr) and checked against gambatte with
probe ROMs sweeping reads in 1-M steps (the test ROMs tests/roms/ppu_*_timing.asm,
irq_timing.asm).

A line of 456 T, from its start ls (an M-cycle boundary; LY changes there):
  ls       the mode-2 request of lines 1..144 (it precedes the mode bits by an M-cycle);
           STAT still reads mode 0, LY=LYC is not compared; OAM is closed to reads.
  ls+2     mode 2 shows (LINE_STEP_T); LY=LYC compares; line 144: VBlank request and
           mode 1; line 0 after VBlank: its mode-2 request.
  ls+80    VRAM closes to reads; OAM opens to writes for one M-cycle (lcdon_write_timing).
  ls+82    mode 3 (MODE3_START_T) for 172 T plus SCX mod 8, 6 if the window is drawn and
           6..11 per object (render.objects_mode3_penalty; Pan Docs, "Mode 3 length"), so
           mode 0 and its request at ls+254+SCX mod 8 (hblank_ly_scx_timing: LY changes
           51, 50 or 49 M-cycles after it for SCX mod 8 = 0, 1-4, 5-7).
  line 153 LY reads 0 from ls+4; LYC is compared with 153 in [ls+2, ls+6), with nothing
           in [ls+6, ls+10), with 0 from ls+10 (so LYC=0 matches during line 153).
Lines 144..153 are mode 1. r32[R_PPU_MODE] holds the mode, or one of these phases:

  PH_LINE_START   lines 1..143, [ls, ls+2): STAT reads mode 0, the interrupt line already
                  sees mode 2 (so HBlank -> OAM does not re-trigger), no LY=LYC.
  PH_VBLANK_START line 144, [ls, ls+2): the mode-2 source fires once more (the DMG "OAM
                  interrupt at VBlank", at the same M-cycle as the VBlank request:
                  vblank_stat_intr), no LY=LYC; then mode 1.
  PH_VBLANK_LINE  lines 145..153, [ls, ls+2): mode 1, no LY=LYC.
  PH_LY153        line 153, [ls+2, ls+6): compares LYC with 153 (LY reads 0 from ls+4).
  PH_LY153_GAP    line 153, [ls+6, ls+10): no LY=LYC; then it compares with 0.
  PH_LINE0_START  line 0 after VBlank, [ls, ls+2): STAT reads mode 0, the interrupt line
                  still sees mode 1 (so VBlank -> OAM does not re-trigger).
  PH_LCD_ON_LINE0 the first line after the LCD is switched on, until its mode 3: no OAM
                  scan - STAT reads mode 0, no mode-2 interrupt, OAM and VRAM stay open.
                  The line runs as if it had started 4 T before the LCDC write
                  (LCD_ON_LINE0_LEAD; lcdon_timing: mode 3 read 80 T after the write,
                  LY=1 452 T after it), but its mode 3 (the pixel pipeline) starts 2 T later
                  than on other lines, at ls+84 (ppu_dots.LCD_ON_PIPE_DELAY_T), so mode 0
                  and its request come at write + 252 + SCX mod 8 (gbmicrotest
                  int_hblank_{nops,incs,halt}_scx*, DMG; gambatte agrees; a STAT read
                  cannot tell ls+82 from ls+84 for mode 3's start:
                  tests/roms/stat_irq_lcdon.asm).

The STAT interrupt (IF bit 1) fires on the rising edge of the OR of the enabled sources
(LY=LYC, mode 0, mode 1, mode 2), so a source already high blocks the others. The mode-2
source is a pulse, not a level: high in [ls, ls+2) (PH_LINE_START, PH_VBLANK_START), at ls+2
alone on line 0 after VBlank, low through the rest of mode 2 (interrupt_mode). Writing
STAT on the DMG behaves as if $FF were written for one cycle (Pan Docs, STAT), which can
raise a spurious interrupt: from mode 0, mode 1 or LY=LYC, not from mode 2 (_stat_write_glitch).

Cost: events are processed through one env's rows of io/r32/r64 (``state.io_row`` ...),
built once per catch-up. The line's OAM selection is made once, as mode 3 starts, and kept in
spare r32 words for drawing as mode 3 ends (``_line_selection`` says why OAM cannot have
changed in between, or scans again). A line that draws nothing (render "none", odd lines
in "obs", the blank frame after LCD on) and is caught up whole in one call skips the OAM
scan: its mode 3 ends before the call's time whatever its length. On the CPU, a frame that
draws nothing catches up a run of such lines in one step (``_lines_in_bulk``: LY, the line
start and the window's line counter moved at once; cpu_mix, a frame polling nothing, catches
up ~140 lines in a few calls).

The WY condition (window may show from this line on) is set when LY == WY while the
window is enabled (LCDC.5): as a line starts, or when LCDC/WY is written mid-line.

CPU access (reads $FF, writes ignored; ``vram_accessible`` / ``oam_accessible``): VRAM is
closed in mode 3, and to reads from ls+80; OAM in modes 2 and 3, to reads from ls, open to
writes in [ls, ls+4) and [ls+80, ls+84) (lcdon_timing, lcdon_write_timing: measured on
DMG); the LCD-on line 0 closes both only in mode 3.
LCD off (LCDC.7 = 0): LY = 0, mode 0, no events or interrupts, screen blank (shade 0);
LY=LYC keeps the value it had (mooneye stat_lyc_onoff), and so does its part of the STAT
interrupt line, so switching on with the flag unchanged raises nothing;
LCD on restarts at line 0, and that first frame is not shown: it stays blank (Pan Docs,
LCDC.7; gambatte agrees), though the PPU runs and interrupts as usual.
Post-boot: the PPU is in line 153 (mode 1) with LY already reading 0 (the line-153
quirk), which is what STAT=$85 / LY=$00 at PC=$0100 mean; line 0 starts at t =
POST_BOOT_LINE0_T.
"""
import warp as wp

from .dma import dma_sync
from .interrupts import raise_if
from .ppu_dots import (LCD_ON_PIPE_DELAY_T, LOG_COUNT, PIPE_START_T, dots_compiled, log_mode3_write, mode3_end_logged,
                       ppu_log_row)
from .render import (RENDER_FULL, RENDER_NONE, RENDER_OBS, blank_scanline,  # noqa: F401
                     objects_mode3_penalty, objects_on_line, refused_window_x, render_line,
                     tile_stores_unaligned, window_visible)
from .state import (NEVER, R_RENDER_NOW, R_LCD_OFF_COINCIDENCE, R_LCD_WARMUP, R_OBJ_SEL_HI,
                    R_OBJ_SEL_LO, R_OBJ_SEL_T, R_LY, R_MODE3_LEN, R_PPU_MODE, R_STAT_LINE,
                    R_WIN_LINE, R_WY_TRIGGERED, T_DMA_START, T_LINE_START, T_PPU_EVENT, IO, R32, R64, MachinePtr, io_row, machine,
                    r32_row, r64_row)

LINE_CYCLES = wp.constant(456)
LINE_STEP_T = wp.constant(2)      # mode 2 and LY=LYC begin; the VBlank request (line 144)
MODE3_START_T = wp.constant(82)
VRAM_READ_LOCK_T = wp.constant(80)  # VRAM closes to reads; OAM opens to writes until 84
OAM_WRITE_GAP_END_T = wp.constant(84)
LY153_GAP_T = wp.constant(6)      # line 153: no LY=LYC in [6, 10), then LY=LYC with 0
LY153_ZERO_T = wp.constant(10)
LCD_ON_LINE0_LEAD = wp.constant(4)  # the LCD-on line 0 runs as if started 4 T early
READ_PHASE = wp.constant(wp.int64(1))  # a read in the M-cycle at t sees the PPU at t + 1
MODE3_MIN_CYCLES = wp.constant(172)
WINDOW_PENALTY = wp.constant(6)
POST_BOOT_LINE0_T = 56  # T-cycles from PC=$0100 until line 0 starts (calibration point)
PH_LINE_START = wp.constant(4)
PH_VBLANK_START = wp.constant(5)
PH_VBLANK_LINE = wp.constant(6)
PH_LY153 = wp.constant(7)
PH_LINE0_START = wp.constant(8)
PH_LCD_ON_LINE0 = wp.constant(9)
PH_LY153_GAP = wp.constant(10)


@wp.func
def stat_mode_bits(phase: int) -> int:
    """STAT bits 0-1 for a PPU state."""
    m = phase
    if phase == PH_LINE_START or phase == PH_VBLANK_START or phase == PH_LINE0_START or phase == PH_LCD_ON_LINE0:
        m = 0
    elif phase == PH_VBLANK_LINE or phase == PH_LY153 or phase == PH_LY153_GAP:
        m = 1
    return m


@wp.func
def interrupt_mode(phase: int) -> int:
    """The mode the STAT interrupt line sees (one M-cycle ahead of the STAT bits). Its mode-2
    source is a pulse in the line's first M-cycle, not the whole of mode 2: a STAT write enabling
    it one M-cycle later raises nothing (gbmicrotest oam_int_if_level_c/d, DMG and AGS; gambatte
    agrees, tests/roms/stat_write_glitch.asm)."""
    m = phase
    if phase == PH_LINE_START or phase == PH_VBLANK_START:
        m = 2
    elif phase == PH_VBLANK_LINE or phase == PH_LY153 or phase == PH_LY153_GAP or phase == PH_LINE0_START:
        m = 1
    elif phase == PH_LCD_ON_LINE0 or phase == 2:
        m = 3  # no source
    return m


@wp.func
def line_start_from(ls: wp.int64, ly: int, target: int) -> wp.int64:
    """Start of line `target` at or after the start `ls` of line `ly` (the current line if
    ly == target). While the LCD is on a line starts every 456 T and a frame has 154 lines,
    so a stale (lazy) line start still predicts the later ones."""
    return ls + wp.int64(((target - ly + 154) % 154) * LINE_CYCLES)


@wp.func
def next_vblank_start(ls: wp.int64, ly: int) -> wp.int64:
    """Start of the next VBlank (line 144) after the start `ls` of line `ly`: one frame on
    if line 144 is the current line (its VBlank request is already made)."""
    t = line_start_from(ls, ly, 144)
    if ly == 144:
        t = t + wp.int64(154 * LINE_CYCLES)
    return t


@wp.func
def ly_visible(ms: MachinePtr, env: int, t: wp.int64) -> int:
    """LY as read: line 153 reads 0 after its first M-cycle."""
    m = machine(ms)
    ly = m.r32[env, R_LY]
    if ly == 153 and t >= m.r64[env, T_LINE_START] + wp.int64(4):
        ly = 0
    return ly


@wp.func
def _ly_compared(r32: R32) -> int:
    phase = r32[R_PPU_MODE]
    ly = r32[R_LY]
    if phase == PH_LINE_START or phase == PH_VBLANK_START or phase == PH_VBLANK_LINE or phase == PH_LY153_GAP:
        ly = -1
    elif ly == 153 and phase != PH_LY153:
        ly = 0
    return ly


@wp.func
def ly_compared(ms: MachinePtr, env: int) -> int:
    """The LY value LYC is compared with now; -1 while no comparison happens."""
    return _ly_compared(r32_row(ms, env))


@wp.func
def _line_of_sources(io: IO, r32: R32, stat: int) -> int:
    """The STAT interrupt line: OR of the sources `stat` enables (bits 3-6)."""
    line = 0
    if (int(io[0x40]) & 0x80) == 0:
        # LCD off: the comparator is stopped, its flag frozen (R_LCD_OFF_COINCIDENCE), and
        # it stays in the interrupt line; no mode source (stat_lyc_onoff)
        if (stat & 0x40) != 0 and r32[R_LCD_OFF_COINCIDENCE] != 0:
            line = 1
    else:
        mode = interrupt_mode(r32[R_PPU_MODE])
        if (stat & 0x40) != 0 and _ly_compared(r32) == int(io[0x45]):
            line = 1
        if (stat & 0x08) != 0 and mode == 0:
            line = 1
        if (stat & 0x10) != 0 and mode == 1:
            line = 1
        if (stat & 0x20) != 0 and mode == 2:
            line = 1
    return line


@wp.func
def _stat_write_glitch(io: IO, r32: R32) -> int:
    """1 if a STAT write, acting for one cycle as if every source were enabled, sees a source
    rise: mode 0 (the line's first M-cycle included: the mode-2 request there is not seen),
    mode 1, or LY=LYC, but not mode 2 (gbmicrotest stat_write_glitch_l0_c, _l1_d, _l154_c/d,
    DMG: no interrupt from a write in mode 2; gambatte agrees at every M-cycle of a line,
    tests/roms/stat_write_glitch.asm)."""
    phase = r32[R_PPU_MODE]
    if (int(io[0x40]) & 0x80) != 0 and (phase == PH_LINE_START or phase == PH_VBLANK_START):
        # The write still sees the previous line's HBlank and LY=LYC, which the old enables
        # held high already (so nothing rises) or did not.
        stat = int(io[0x41])
        if (stat & 0x08) != 0 or ((stat & 0x40) != 0 and int(io[0x45]) == r32[R_LY] - 1):
            return 0
        return 1
    return _line_of_sources(io, r32, 0x58)


@wp.func
def _stat_update(io: IO, r32: R32):
    stat = int(io[0x41])
    if (stat & 0x78) == 0 and r32[R_STAT_LINE] == 0:
        return  # no source enabled: the line stays low
    line = _line_of_sources(io, r32, stat)
    if line == 1 and r32[R_STAT_LINE] == 0:
        io[0x0F] = wp.uint8(int(io[0x0F]) | 2)   # IF bit 1 (interrupts.raise_if)
    r32[R_STAT_LINE] = line


@wp.func
def stat_update(ms: MachinePtr, env: int, t: wp.int64):
    """Recompute the STAT interrupt line; IF bit 1 on its rising edge."""
    _stat_update(io_row(ms, env), r32_row(ms, env))


@wp.func
def _wy_check_rows(io: IO, r32: R32):
    ly = r32[R_LY]
    if (int(io[0x40]) & 0xA0) == 0xA0 and ly < 144 and ly == int(io[0x4A]):
        r32[R_WY_TRIGGERED] = 1


@wp.func
def _wy_check(ms: MachinePtr, env: int):
    """Set the frame's WY condition if LY == WY on a visible line with the window enabled."""
    _wy_check_rows(io_row(ms, env), r32_row(ms, env))


@wp.func
def _mode3_length(ms: MachinePtr, env: int, io: IO, r32: R32, ly: int, t: wp.int64) -> int:
    """Mode 3's length for line ly, starting at t (also keeps the line's OAM selection)."""
    m = machine(ms)
    lcdc = int(io[0x40])
    scx = int(io[0x43])
    wx = int(io[0x4B])
    length = MODE3_MIN_CYCLES + (scx & 7)
    win_start = int(1 << 20)
    if window_visible(lcdc, r32[R_WY_TRIGGERED], wx) != 0:
        length += WINDOW_PENALTY
        win_start = wx - 7
    dma_sync(ms, env, t)
    # the LCD-on line (line 0 of the warm-up frame) has no OAM scan: no objects (SameBoy, gambatte);
    # as a line no object reaches, branchless (a branch grew the CUDA kernel's frame by 40 B)
    selected = objects_on_line(m.oam, env, ly + wp.where(ly == 0, r32[R_LCD_WARMUP], 0) * 256, lcdc)
    r32[R_OBJ_SEL_LO] = int(selected & wp.uint64(0xFFFFF)) | (1 << 20) | ((lcdc & 0x06) << 20)
    r32[R_OBJ_SEL_HI] = int(selected >> wp.uint64(20))
    r32[R_OBJ_SEL_T] = int(t & wp.int64(0x7FFFFFFF))
    if selected != wp.uint64(0):
        # (a refused window's inserted pixel moves the BG fetches right of it: render.refused_window_x)
        length += objects_mode3_penalty(m.oam, env, selected, scx, win_start,
                                        refused_window_x(lcdc, r32[R_WY_TRIGGERED], wx, scx))
    # a window from x = -7 (WX = 0) with a fine scroll starts a dot later (ppu_dots): + 1 (branchless,
    # and last: a branch in the window's test above grew machine_kernel's stack frame by 16 B)
    return length + wp.min(scx & 7, wp.max(0, -6 - win_start))


@wp.func
def _line_selection(ms: MachinePtr, env: int, r32: R32, r64: R64, ly: int, lcdc: int,
                    t: wp.int64) -> wp.uint64:
    """objects_on_line for the line whose mode 3 ends at t: the selection kept from the
    start of mode 3 (t - R_MODE3_LEN) if OAM cannot have changed since — the CPU cannot
    write OAM in modes 2-3, and no OAM DMA started after it (a DMA written after the PPU
    caught up to that start is at or after it) — and LCDC.1/LCDC.2 are as they were; else
    a new scan."""
    m = machine(ms)
    lo = r32[R_OBJ_SEL_LO]
    start = t - wp.int64(r32[R_MODE3_LEN])
    if ((lo >> 20) & 7) == (1 | (lcdc & 0x06)) and r32[R_OBJ_SEL_T] == int(
            start & wp.int64(0x7FFFFFFF)) and r64[T_DMA_START] <= start:
        return wp.uint64(lo & 0xFFFFF) | (wp.uint64(r32[R_OBJ_SEL_HI]) << wp.uint64(20))
    dma_sync(ms, env, t)
    return objects_on_line(m.oam, env, ly, lcdc)


@wp.func
def _advance(ms: MachinePtr, env: int, io: IO, r32: R32, r64: R64, now: wp.int64):
    """Process the PPU event at r64[T_PPU_EVENT] (io/r32/r64: env's rows), catching up to `now`."""
    t = r64[T_PPU_EVENT]
    ls = r64[T_LINE_START]
    ly = r32[R_LY]
    phase = r32[R_PPU_MODE]
    nxt = NEVER
    if phase == PH_LINE_START or phase == PH_LINE0_START:
        if phase == PH_LINE0_START and (int(io[0x41]) & 0x20) != 0 and r32[R_STAT_LINE] == 0:
            # line 0's mode-2 pulse: it rises and falls here (interrupt_mode: no mode-2 level)
            io[0x0F] = wp.uint8(int(io[0x0F]) | 2)
        r32[R_PPU_MODE] = 2
        nxt = ls + wp.int64(MODE3_START_T)
    elif phase == 2 or phase == PH_LCD_ON_LINE0:
        r32[R_PPU_MODE] = 3
        m3 = MODE3_MIN_CYCLES
        if ls + wp.int64(LINE_CYCLES) > now:
            m3 = _mode3_length(ms, env, io, r32, ly, t)
        # else the whole line is caught up in this call: its mode 3 ends before `now`
        # whatever its length, in the same order of events, and the length is read by
        # nothing else. R_MODE3_LEN only tags the OAM selection kept for drawing; with the
        # tag unmatched, the line is drawn from a new scan, of the same OAM and LCDC (the
        # CPU changes neither during a catch-up: their writes sync the PPU first)
        r32[R_MODE3_LEN] = m3
        nxt = t + wp.int64(m3)
    elif phase == 3:
        _mode3_end(ms, env, io, r32, r64, ly, t, 0)
        r32[R_PPU_MODE] = 0
        nxt = ls + wp.int64(LINE_CYCLES)
    elif phase == PH_VBLANK_START:
        r32[R_PPU_MODE] = 1
        io[0x0F] = wp.uint8(int(io[0x0F]) | 1)   # the VBlank request (interrupts.raise_if)
        nxt = ls + wp.int64(LINE_CYCLES)
    elif phase == PH_VBLANK_LINE:
        if ly == 153:
            r32[R_PPU_MODE] = PH_LY153
            nxt = ls + wp.int64(LY153_GAP_T)
        else:
            r32[R_PPU_MODE] = 1
            nxt = ls + wp.int64(LINE_CYCLES)
    elif phase == PH_LY153:
        r32[R_PPU_MODE] = PH_LY153_GAP
        nxt = ls + wp.int64(LY153_ZERO_T)
    elif phase == PH_LY153_GAP:
        r32[R_PPU_MODE] = 1
        nxt = ls + wp.int64(LINE_CYCLES)
    else:  # end of a line (mode 0 or mode 1): the next line starts
        nxt = _next_line(io, r32, r64, ly, ls)
    r64[T_PPU_EVENT] = nxt
    _stat_update(io, r32)


@wp.func
def _mode3_end(ms: MachinePtr, env: int, io: IO, r32: R32, r64: R64, ly: int, t: wp.int64, scan: int):
    """Mode 3 of line ly ends at t: the line is drawn (if this launch draws it) with the
    registers as they are, and the window's line counter advances if it showed. scan: 1 to
    make a new OAM scan rather than look for the one kept from mode 3's start."""
    m = machine(ms)
    warmup = r32[R_LCD_WARMUP]
    mode = r32[R_RENDER_NOW]
    if warmup != 0:
        mode = RENDER_NONE
    if scan == 0 and dots_compiled() != 0 and ppu_log_row(ms, env)[LOG_COUNT] != 0:
        # registers were written during this mode 3: the line dot by dot (ppu_dots.py). Not
        # on ppu_sync's whole-line catch-up (scan = 1): a write in mode 3 syncs the PPU into
        # it, so a logged line's end always comes through _advance (and the check costs ~5%
        # of a frame there with nothing drawn: tools/ab_emu.py on orchard)
        r32[R_WIN_LINE] = r32[R_WIN_LINE] + mode3_end_logged(ms, env, ly, mode, t)
        if warmup != 0:
            blank_scanline(env, ly, 0, m.frame, m.obs, r32[R_RENDER_NOW])
        return
    lcdc = int(io[0x40])
    selected = wp.uint64(0)
    if mode == RENDER_FULL or (mode == RENDER_OBS and (ly & 1) == 0):
        if scan != 0:
            dma_sync(ms, env, t)
            selected = objects_on_line(m.oam, env, ly, lcdc)
        else:
            selected = _line_selection(ms, env, r32, r64, ly, lcdc, t)
    drew_window = render_line(
        m.vram, m.oam, env, ly, lcdc, int(io[0x42]), int(io[0x43]), r32[R_WY_TRIGGERED],
        int(io[0x4B]), r32[R_WIN_LINE], int(io[0x47]), int(io[0x48]), int(io[0x49]), selected,
        m.frame, m.obs, m.line_buf, m.bit_bytes, mode, tile_stores_unaligned())
    if warmup != 0:
        blank_scanline(env, ly, 0, m.frame, m.obs, r32[R_RENDER_NOW])
    if drew_window != 0:
        r32[R_WIN_LINE] = r32[R_WIN_LINE] + 1


@wp.func
def _next_line(io: IO, r32: R32, r64: R64, ly: int, ls: wp.int64) -> wp.int64:
    """Line ly (started at ls) ends: the next one starts (VBlank at 144, line 0 after 153).
    Returns the time of the PPU's next event."""
    ly = ly + 1
    ls = ls + wp.int64(LINE_CYCLES)
    r64[T_LINE_START] = ls
    if ly == 144:
        r32[R_PPU_MODE] = PH_VBLANK_START        # (the VBlank request follows at ls+2)
        r32[R_LCD_WARMUP] = 0
    elif ly >= 154:
        ly = 0
        r32[R_WIN_LINE] = 0
        r32[R_WY_TRIGGERED] = 0
        r32[R_PPU_MODE] = PH_LINE0_START
    elif ly < 144:
        r32[R_PPU_MODE] = PH_LINE_START
    else:
        r32[R_PPU_MODE] = PH_VBLANK_LINE
    r32[R_LY] = ly
    _wy_check_rows(io, r32)
    return ls + wp.int64(LINE_STEP_T)


@wp.func
def ppu_advance(ms: MachinePtr, env: int):
    """Process the PPU event at r64[T_PPU_EVENT]."""
    _advance(ms, env, io_row(ms, env), r32_row(ms, env), r64_row(ms, env), wp.int64(-1))


@wp.func_native("""
#if defined(__CUDA_ARCH__)
    return 0;
#else
    return 1;
#endif
""")
def lyc_lines_whole() -> int:
    """1 on the CPU: ppu_sync's one-step catch-up of a past line also with the LY=LYC STAT source
    enabled (LY != LYC, _lyc_elsewhere). The same events either way; on sm_90 the extra test grew
    machine_kernel_staged's spill stores by 24 B (and in a first form its stack frame by 16 B:
    ptxas allocates registers across the call tree, tools/kernel_report.py), so CUDA compiles it
    out (0 there: the sm_90 report is unchanged)."""
    ...


@wp.func_native("""
#if defined(__CUDA_ARCH__)
    return 0;
#else
    return 1;
#endif
""")
def lines_in_bulk() -> int:
    """1 on the CPU: ppu_sync catches up a run of past lines that draw nothing in one step
    (_lines_in_bulk). 0 on CUDA, where the code is compiled out (the sm_90 footprint is the one
    tools/kernel_report.py printed before it)."""
    ...


@wp.func
def _lines_in_bulk(io: IO, r32: R32, ly: int, ls: wp.int64, now: wp.int64) -> int:
    """How many of the lines from ly on (which starts at ls, caught up whole: no STAT source but
    LY=LYC's, on no line of the run) ppu_sync may process in one step, on the CPU: all that end by
    `now` while this frame draws nothing (R_RENDER_NOW), up to line 143, none of them LYC's (when
    its source is on) and WY met by none but the first and the one after the run (the frame's WY
    condition is then the same on every line of the run, and with it the window's visibility).
    Their events change nothing else: no STAT line, no IF bit, mode 3 at its shortest, no drawing."""
    n = int(1)
    if lines_in_bulk() != 0 and r32[R_RENDER_NOW] == RENDER_NONE:
        n = int((now - ls) // wp.int64(LINE_CYCLES))
        n = wp.min(n, 144 - ly)
        lyc = int(io[0x45])
        if (int(io[0x41]) & 0x78) != 0 and lyc > ly:
            n = wp.min(n, lyc - ly)
        wy = int(io[0x4A])
        if wy > ly:
            n = wp.min(n, wy - ly)
    return n


@wp.func
def _lyc_elsewhere(io: IO, r32: R32) -> int:
    """1 if the LY=LYC source is the only STAT source enabled and this line's LY is not LYC (on the
    CPU: lyc_lines_whole): then the STAT line stays low through the line's events too (the compare
    sees its LY; the next line's start compares nothing), and a game with an LYC split (most) has
    its other lines caught up in one step each."""
    r = 0
    if lyc_lines_whole() != 0:
        stat = int(io[0x41])
        if (stat & 0x38) == 0 and r32[R_LY] != int(io[0x45]):
            r = 1
    return r


@wp.func(inline=False)
def ppu_sync(ms: MachinePtr, env: int, now: wp.int64):
    """Process every PPU event due by `now`.

    Out of line: ten callers (events, I/O, VRAM/OAM access rules) each inlined a copy, and on
    CUDA every copy brought its own register spills into the one stack frame that the whole
    call tree shares (docs/gpu.md, Kernel footprint); a single copy spills nothing."""
    io = io_row(ms, env)
    r32 = r32_row(ms, env)
    r64 = r64_row(ms, env)
    while r64[T_PPU_EVENT] <= now:
        phase = r32[R_PPU_MODE]
        ls = r64[T_LINE_START]
        if ((phase == PH_LINE_START or phase == PH_LINE0_START) and ls + wp.int64(LINE_CYCLES) <= now
                and ((int(io[0x41]) & 0x78) == 0 or _lyc_elsewhere(io, r32) != 0) and r32[R_STAT_LINE] == 0):
            # A visible line caught up whole with no STAT source enabled (or only LY=LYC's, on a line
            # that is not LYC's: _lyc_elsewhere): its four events (mode 2, mode 3, mode 0, line end)
            # in one step, as _advance would make them (no STAT interrupt line to update; mode 3 at
            # its shortest, see _advance)
            ly = r32[R_LY]
            # (on the CPU, the run of such lines before this one in one step: ly and ls move to
            # its last line, and the window's line counter counts the others)
            skip = _lines_in_bulk(io, r32, ly, ls, now) - 1
            if skip > 0:
                r32[R_WIN_LINE] = r32[R_WIN_LINE] + skip * window_visible(int(io[0x40]), r32[R_WY_TRIGGERED], int(io[0x4B]))
                ly = ly + skip
                ls = ls + wp.int64(skip) * wp.int64(LINE_CYCLES)
            r32[R_MODE3_LEN] = MODE3_MIN_CYCLES
            _mode3_end(ms, env, io, r32, r64, ly, ls + wp.int64(MODE3_START_T + MODE3_MIN_CYCLES), 1)
            r64[T_PPU_EVENT] = _next_line(io, r32, r64, ly, ls)
        else:
            _advance(ms, env, io, r32, r64, now)


@wp.func
def _blank_screen(ms: MachinePtr, env: int, mode: int):
    """The blank (shade 0) screen of an LCD that is off, in the buffers `mode` writes."""
    m = machine(ms)
    if mode == RENDER_FULL:
        for y in range(144):
            for x in range(160):
                m.frame[env, y, x] = wp.uint8(0)
    if mode != RENDER_NONE:
        for y in range(72):
            for x in range(80):
                m.obs[env, y, x] = wp.uint8(0)


@wp.func(inline=False)
def set_render_mode(ms: MachinePtr, env: int, mode: int, t: wp.int64):
    """Switch the render mode in effect at time t (the kernel draws only the last frame of a
    launch: earlier ones are overwritten unseen). Lines before t are caught up under the old
    mode first. A frame that starts with the LCD off, or inside the blank first frame after
    the LCD was switched on, shows a blank screen; its lines before t were not drawn, so the
    buffers are blanked here. Otherwise the previous frame ended at VBlank and this frame
    draws all 144 lines itself."""
    m = machine(ms)
    if m.r32[env, R_RENDER_NOW] != mode:
        ppu_sync(ms, env, t)
        m.r32[env, R_RENDER_NOW] = mode
        if (int(m.io[env, 0x40]) & 0x80) == 0 or m.r32[env, R_LCD_WARMUP] != 0:
            _blank_screen(ms, env, mode)


@wp.func
def lcdc_write(ms: MachinePtr, env: int, value: int, t: wp.int64):
    m = machine(ms)
    ppu_sync(ms, env, t)
    old = int(m.io[env, 0x40])
    # The LY=LYC comparator stops with the LCD: STAT bit 2 keeps the value it had as the
    # LCD went off (DMG; gambatte agrees, and games such as Mr. Do! rely on it).
    coincidence = (stat_value(ms, env, t) >> 2) & 1
    if (old & value & 0x80) != 0:
        _mode3_write(ms, env, 0x40, value, t)
    m.io[env, 0x40] = wp.uint8(value)
    if (old & 0x80) != 0 and (value & 0x80) == 0:      # LCD off: blank screen
        if dots_compiled() != 0:
            ppu_log_row(ms, env)[LOG_COUNT] = 0        # (a line in mode 3 is not finished)
        m.r32[env, R_LCD_OFF_COINCIDENCE] = coincidence
        m.r32[env, R_LY] = 0
        m.r32[env, R_PPU_MODE] = 0
        m.r64[env, T_PPU_EVENT] = NEVER
        _blank_screen(ms, env, m.r32[env, R_RENDER_NOW])
    elif (old & 0x80) == 0 and (value & 0x80) != 0:    # LCD on: frame restarts at line 0
        m.r32[env, R_LY] = 0
        m.r32[env, R_WIN_LINE] = 0
        m.r32[env, R_WY_TRIGGERED] = 0
        m.r64[env, T_LINE_START] = t - wp.int64(LCD_ON_LINE0_LEAD)
        m.r32[env, R_LCD_WARMUP] = 1
        m.r32[env, R_PPU_MODE] = PH_LCD_ON_LINE0
        m.r64[env, T_PPU_EVENT] = t - wp.int64(LCD_ON_LINE0_LEAD) + wp.int64(MODE3_START_T + LCD_ON_PIPE_DELAY_T)
    _wy_check(ms, env)
    stat_update(ms, env, t)


@wp.func
def stat_read(ms: MachinePtr, env: int, t: wp.int64) -> int:
    """STAT as read by the CPU in the M-cycle at t (it sees the PPU at t + READ_PHASE)."""
    ppu_sync(ms, env, t + READ_PHASE)
    return stat_value(ms, env, t)


@wp.func
def stat_value(ms: MachinePtr, env: int, t: wp.int64) -> int:
    """STAT as read, from the PPU state as it stands (no sync)."""
    return stat_of(io_row(ms, env), r32_row(ms, env))


@wp.func
def stat_of(io: IO, r32: R32) -> int:
    """STAT as read from the stored PPU state (current while t < r64[T_PPU_EVENT])."""
    v = 0x80 | (int(io[0x41]) & 0x78)
    if (int(io[0x40]) & 0x80) != 0:
        v = v | stat_mode_bits(r32[R_PPU_MODE])
        if _ly_compared(r32) == int(io[0x45]):
            v = v | 4
    elif r32[R_LCD_OFF_COINCIDENCE] != 0:
        v = v | 4  # LCD off: the flag as it was when the LCD went off
    return v


@wp.func
def ly_at(io: IO, r32: R32, r64: R64, t: wp.int64):
    """LY as read at t, and the time it next changes, from the stored (possibly stale) line
    and its start: while the LCD is on a line starts every 456 T and a frame has 154 lines,
    so no catch-up is needed (the value is what ppu_sync then ly_visible would give). Line
    153 reads 0 after its first M-cycle."""
    ly = r32[R_LY]
    until = NEVER
    if (int(io[0x40]) & 0x80) != 0:
        start = r64[T_LINE_START]
        into = t - start
        if into >= wp.int64(LINE_CYCLES):
            lines = into // wp.int64(LINE_CYCLES)
            ly = int((wp.int64(ly) + lines) % wp.int64(154))
            start = start + lines * wp.int64(LINE_CYCLES)
            into = t - start
        until = start + wp.int64(LINE_CYCLES)
        if ly == 153:
            if into >= wp.int64(4):
                ly = 0
            else:
                until = start + wp.int64(4)
    return ly, until


@wp.func
def vram_free(io: IO, r32: R32, r64: R64, t: wp.int64) -> bool:
    """True if the stored PPU state is current for an access at t and does not hold VRAM
    (mode 3, or the end of mode 2 for reads): the CPU may access it directly. False means
    "ask vram_accessible", not "blocked"."""
    mode = r32[R_PPU_MODE]
    return t + READ_PHASE < r64[T_PPU_EVENT] and ((int(io[0x40]) & 0x80) == 0 or (
        mode != 3 and (mode != 2 or t < r64[T_LINE_START] + wp.int64(VRAM_READ_LOCK_T))))


@wp.func
def frame_end(io: IO, r32: R32, r64: R64, t: wp.int64, deadline: wp.int64) -> wp.int64:
    """When the frame that is running at t ends: at the VBlank request (LINE_STEP_T into
    line 144, where gambatte's frames end too), or at `deadline` (70224 T after the previous
    frame ended) if that comes first (LCD off, or switched on during this frame); see
    VecGameBoy.run_frames. The PPU is lazy (its state may lag t), but while the LCD is on
    lines follow each other every 456 T, so the next request after t follows from any
    earlier line start."""
    end = deadline
    if (int(io[0x40]) & 0x80) != 0:
        vblank = line_start_from(r64[T_LINE_START], r32[R_LY], 144) + wp.int64(LINE_STEP_T)
        if vblank <= t:
            frame = wp.int64(154 * LINE_CYCLES)
            vblank = vblank + ((t - vblank) // frame + wp.int64(1)) * frame
        end = wp.min(deadline, vblank)
    return end


@wp.func
def ly_read(ms: MachinePtr, env: int, t: wp.int64) -> int:
    m = machine(ms)
    ppu_sync(ms, env, t)
    return ly_visible(ms, env, t)


@wp.func
def _mode3_write(ms: MachinePtr, env: int, reg: int, value: int, t: wp.int64) -> int:
    """A write to LCDC, SCY, SCX, BGP, OBP0/1, WY or WX in the M-cycle at t (the PPU synced to t,
    the register not yet written): during mode 3 it is logged for the line's dot-by-dot drawing
    (ppu_dots.py), and if it moves the line's last pixel, mode 3's end (the mode-0 event) moves
    with it. Returns 1 if the event moved."""
    m = machine(ms)
    moved = 0
    if dots_compiled() != 0 and m.r32[env, R_PPU_MODE] == 3 and (int(m.io[env, 0x40]) & 0x80) != 0:
        last = log_mode3_write(ms, env, m.r32[env, R_LY], reg, value, t)
        if last >= 0:
            ls = m.r64[env, T_LINE_START]
            end = ls + wp.int64(PIPE_START_T + last)
            if end != m.r64[env, T_PPU_EVENT]:
                m.r64[env, T_PPU_EVENT] = end
                m.r32[env, R_MODE3_LEN] = int(end - ls) - MODE3_START_T
                moved = 1
    return moved


@wp.func
def ppu_reg_write(ms: MachinePtr, env: int, reg: int, value: int, t: wp.int64) -> int:
    """STAT (writable bits 3-6), LYC, scroll, palettes, window: sync first so the change
    lands between the right lines, then re-evaluate the STAT line. A write during mode 3 is
    logged (_mode3_write). Returns 1 if it moved mode 3's end."""
    m = machine(ms)
    ppu_sync(ms, env, t)
    moved = int(0)
    if reg != 0x41 and reg != 0x44 and reg != 0x45:
        moved = _mode3_write(ms, env, reg, value, t)
    if reg == 0x41:
        # DMG quirk: for one cycle STAT acts as if every source were enabled
        # (_stat_write_glitch), raising IF unless the line is already high.
        if m.r32[env, R_STAT_LINE] == 0 and _stat_write_glitch(io_row(ms, env), r32_row(ms, env)) == 1:
            raise_if(ms, env, 2)
            m.r32[env, R_STAT_LINE] = 1
        m.io[env, 0x41] = wp.uint8((int(m.io[env, 0x41]) & 0x07) | (value & 0x78))
    elif reg != 0x44:
        m.io[env, reg] = wp.uint8(value)
    if reg == 0x4A:
        _wy_check(ms, env)
    stat_update(ms, env, t)
    return moved


@wp.func
def vram_accessible(ms: MachinePtr, env: int, t: wp.int64, write: int) -> bool:
    """False while the PPU reads VRAM: in mode 3, and for reads from ls+80 of mode 2 (an
    M-cycle before STAT shows mode 3; DMG, mooneye lcdon_timing). The CPU then reads $FF
    and its writes are lost. `write`: 1 for a write."""
    m = machine(ms)
    ppu_sync(ms, env, t + READ_PHASE)
    mode = m.r32[env, R_PPU_MODE]
    free = True
    if (int(m.io[env, 0x40]) & 0x80) != 0:
        if mode == 3:
            free = False
        elif mode == 2 and write == 0 and t >= m.r64[env, T_LINE_START] + wp.int64(VRAM_READ_LOCK_T):
            free = False
    return free


@wp.func
def oam_accessible(ms: MachinePtr, env: int, t: wp.int64, write: int) -> bool:
    """False while the PPU holds OAM: modes 2 and 3, for reads from the line's start (while
    STAT still shows mode 0); writes pass in that first M-cycle and in the M-cycle before
    mode 3 (ls+80; DMG, mooneye lcdon_timing / lcdon_write_timing). `write`: 1 for a write."""
    m = machine(ms)
    ppu_sync(ms, env, t + READ_PHASE)
    mode = m.r32[env, R_PPU_MODE]
    free = True
    if (int(m.io[env, 0x40]) & 0x80) != 0:
        if mode == 3:
            free = False
        elif mode == 2:
            into = t - m.r64[env, T_LINE_START]
            free = write != 0 and into >= wp.int64(VRAM_READ_LOCK_T) and into < wp.int64(OAM_WRITE_GAP_END_T)
        elif mode == PH_LINE_START or mode == PH_LINE0_START:
            free = write != 0
    return free
