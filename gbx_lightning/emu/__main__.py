"""python -m gbx_lightning.emu run ROM [--frames N] [--print-serial] [--screenshot PNG] [--buttons TRACE] [--bench]

Runs a ROM on VecGameBoy (post-boot DMG state) and reports what it did: the serial output
(how test ROMs report), a PNG of the last frame, or frames/s. ROM is a file, or the name of
a ROM built into the package (e.g. ``orchard``, the project's homebrew game).

``--buttons`` is either buttons held for the whole run (``right+a``) or a TRACE file: one
``FRAME BUTTONS`` pair per line, meaning "from FRAME on, hold BUTTONS" (``-`` = none;
``#`` starts a comment), e.g.::

    0   -
    40  right
    48  right+a
"""
from __future__ import annotations

import argparse
import sys
import time


def _parse_trace(spec: str | None, frames: int) -> list[tuple[int, int]]:
    """(frames, mask) segments covering `frames` frames, from a button spec or a TRACE file."""
    from pathlib import Path

    from gbx_lightning.emu.buttons import buttons_mask, parse_trace, trace_segments

    try:
        if spec is None or not Path(spec).is_file():
            return [(frames, buttons_mask(spec or ""))]
        return trace_segments(parse_trace(Path(spec).read_text(), f"--buttons {spec}"), frames)
    except ValueError as err:
        raise SystemExit(f"--buttons: {err}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gbx_lightning.emu",
                                 description="Run a Game Boy ROM on the Warp emulator.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run a ROM for some frames")
    run.add_argument("rom", help="ROM file (.gb), or a built-in ROM name (e.g. orchard)")
    run.add_argument("--frames", type=int, default=600,
                     help="frames to run (each ends at VBlank; 70224 T-cycles with the LCD off)")
    run.add_argument("--envs", type=int, default=1, help="parallel Game Boys (same ROM)")
    run.add_argument("--device", default="cpu", help='Warp device, e.g. "cpu" or "cuda:0"')
    run.add_argument("--buttons", default=None, metavar="TRACE",
                     help="buttons held all run (e.g. right+a), or a trace file of 'FRAME BUTTONS' lines")
    run.add_argument("--boot-rom", default=None, help="optional 256-byte DMG boot ROM")
    run.add_argument("--print-serial", action="store_true", help="print env 0's serial output")
    run.add_argument("--screenshot", default=None, metavar="PNG", help="write env 0's last frame")
    run.add_argument("--scale", type=int, default=2, help="screenshot scale factor")
    run.add_argument("--bench", action="store_true", help="print compile/load time and frames/s")
    args = ap.parse_args(argv)
    if args.frames < 0:
        ap.error(f"--frames: expected >= 0, got {args.frames}")
    if args.envs < 1:
        ap.error(f"--envs: expected >= 1, got {args.envs}")
    if args.scale < 1:
        ap.error(f"--scale: expected >= 1, got {args.scale}")

    import numpy as np
    import warp as wp

    wp.config.quiet = True
    from gbx_lightning.emu import VecGameBoy

    from gbx_lightning.emu.cartridge import RomError
    from gbx_lightning.roms import resolve_rom

    t0 = time.perf_counter()
    try:
        gb = VecGameBoy(resolve_rom(args.rom)[0], args.envs, device=args.device, boot_rom=args.boot_rom)
    except (RomError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    render = "full" if args.screenshot or not args.bench else "none"
    segments = _parse_trace(args.buttons, args.frames)
    buttons = np.full(args.envs, segments[0][1], np.uint8)
    if not args.bench:
        for count, mask in segments:
            gb.run_frames(count, buttons=np.full(args.envs, mask, np.uint8), render=render)
    else:
        gb.run_frames(1, buttons=buttons, render=render)      # compile / load the kernels
        wp.synchronize_device(gb.device)
        t_ready = time.perf_counter() - t0
        t1 = time.perf_counter()
        gb.run_frames(max(args.frames - 1, 0), buttons=buttons, render=render)
        wp.synchronize_device(gb.device)
        dt = time.perf_counter() - t1
        n = max(args.frames - 1, 0) * args.envs
        print(f"ready (load + first frame) {t_ready:.2f} s; {n} env-frames in {dt:.3f} s = "
              f"{n / dt if dt > 0 else float('nan'):.0f} frames/s (render={render}, "
              f"envs={args.envs}, device={gb.device})")
    if args.print_serial:
        sys.stdout.write(gb.serial_output(0).decode("latin-1"))
        sys.stdout.flush()
    if args.screenshot:
        from gbx_lightning.media import save_png

        save_png(args.screenshot, gb.frame()[0], scale=args.scale)
        print(f"wrote {args.screenshot}", file=sys.stderr)
    regs = gb.registers(0)
    if regs["locked"]:
        print(f"note: CPU locked by an illegal opcode at PC=${regs['pc']:04X}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
