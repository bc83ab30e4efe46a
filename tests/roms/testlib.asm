; testlib.asm - shared code for the project's subsystem test ROMs.
;
; Include it once, after the header directives.  It places the interrupt
; vectors ($40-$60, each jumping through a patchable hook in WRAM), `ret` at
; RST $38, the entry point at $0100 (`nop; jp main`), and the library at $0150;
; the including file continues after the library and must define `main`.
;
; Verdict convention (CONTRACTS.md): each failed check prints a line
; "FAIL <what> got XX exp YY\n" over serial (internal clock); `finish` prints
; "PASS\n" when nothing failed, writes $A5 (pass) / $5A (fail) to $C000 and
; stops with `ld b, b` then halt with IE=0.  Every byte sent is also appended
; to a WRAM log at $C010 (NUL-terminated) for oracles that cannot see serial.
;
; Timing harness (`timed_build` / `timed_run` / `measure`): the code under test
; is copied to WRAM behind a sled of NOPs; each run resets the system counter
; (DIV write), zeroes TIMA, enters the sled p NOPs early and reads a register
; (TIMA by default) right after the code.  With TAC=$05 TIMA counts every
; 4 M-cycles, so reading(p) = floor((X + p) / 4) for the unknown exact count X;
; the sum of readings for p = 0..3 is X itself (Hermite's identity), which
; gives exact M-cycle counts from a 4-M-cycle timer.

; ROMs that need their own code at the interrupt vectors (timing tests, where the
; handler's length counts) include "testlib_defs.inc", place the vectors and the
; entry themselves, then include "testlib_body.inc" at $0150.

    include "testlib_defs.inc"

    org $0038
    ret                         ; rst $38 returns at once (instr_timing measures rst+ret)

    org $0040
    jp HOOK_VBLANK
    org $0048
    jp HOOK_STAT
    org $0050
    jp HOOK_TIMER
    org $0058
    jp HOOK_SERIAL
    org $0060
    jp HOOK_JOYPAD

    org $0100
    nop
    jp main

    org $0150
    include "testlib_body.inc"
