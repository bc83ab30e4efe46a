; irq_timing.asm - interrupt dispatch at the M-cycle: DI, HALT (DMG).
;
; 1. DI right after a request (mooneye-gb di_timing-GS, DMG): a VBlank is requested
;    exactly as a DI would be fetched - the request wins, DI does not run; one
;    M-cycle earlier DI runs and takes effect at once (no delay on the DMG), so the
;    request waits.
; 2. HALT with IME=1 (mooneye-gb halt_ime1_timing2-GS, DMG): a VBlank ends a HALT with
;    exactly the timing of a run of NOPs: DIV, reset 12 or 11 M-cycles after the
;    previous VBlank handler, reads $11 / $12 in the handler either way. With IME=0
;    (mooneye-gb halt_ime0_nointr_timing, DMG) the HALT ends as promptly: 6 NOPs (the
;    dispatch and "jp hl" of the IME=1 case) later DIV reads the same.
; 3. HALT with IME=1 entered just as a request comes: a timer request made by the end
;    of HALT's own M-cycle is serviced at once and the return address pushed is the
;    HALT's (the HALT runs again after RETI and sleeps to the next request: two
;    handler runs before the code after it); one made later wakes the HALT, which
;    returns past it (one run). (Hardware findings published with gambatte's test
;    suite: the pushed return address is decremented when pending interrupts cancel
;    HALT; gambatte and SameBoy do so.) Timer: TIMA=$FE written after a DIV reset,
;    TAC=$05: the request falls 13 M-cycles after the write of DIV, as the HALT's
;    M-cycle ends when 5 NOPs (after EI) precede it.
; Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "IRQ TIMING"
    include "testlib_defs.inc"

    org $0040
    jp hl                       ; VBlank: continue at HL
    org $0050
    inc c                       ; timer: count the handler's runs
    reti

    org $0100
    nop
    jp main

    org $0150
    include "testlib_body.inc"

wRes EQU SCRATCH                ; 4 DIV readings, 5 run counts, 2 DIV readings
wGot EQU SCRATCH + $F0

MACRO nops
    rept \1
    nop
    endr
ENDM

; delay_loop N: N passes of a 7-M-cycle loop, 7N + 5 M-cycles in all (clobbers A, BC)
MACRO delay_loop
    ld a, high(\1)
    ld b, a
    ld a, low(\1)
    ld c, a
.pass\@:
    dec bc
    ld a, b
    or c
    jr nz, .pass\@
ENDM

; halt_skip N: timer request 13 M-cycles after a DIV reset, N NOPs then HALT;
; handler runs before the code after the HALT to [DE+].
MACRO halt_skip
    xor a
    ldh [rTAC], a
    ldh [rTIMA], a
    ldh [rTMA], a
    ldh [rIF], a
    ld a, $04
    ldh [rIE], a
    ld a, $05
    ldh [rTAC], a
    ld c, 0
    xor a
    ldh [rDIV], a
    ld a, $FE
    ldh [rTIMA], a
    ei
    nops \1
    halt
    di
    ld a, c
    ld [de], a
    inc de
ENDM

main:
    ld sp, STACK_TOP
    call lib_init
    ld a, $01
    ldh [rIE], a

    ; 1. DI as the request comes
    ld hl, .di_round1
    call vblank_halt
.di_round1:
    ld hl, .di_ok1
    ei
    delay_loop 2505
    nops 6
    di                          ; (the VBlank handler comes instead)
    ld hl, s_di_late
    call fail_msg
    jr .di_round2
.di_ok1:
.di_round2:
    ld hl, .di_round2b
    call vblank_halt
.di_round2b:
    ld hl, .di_bad2
    ei
    delay_loop 2505
    nops 5
    di                          ; one M-cycle earlier: DI runs, nothing is dispatched
    nop
    jr .halt_rounds
.di_bad2:
    ld hl, s_di_early
    call fail_msg

.halt_rounds:
    ; 2. HALT ended by VBlank against a run of NOPs (DIV resets 12 / 11 M-cycles in)
    ld hl, .r1
    call vblank_halt
.r1:
    ld hl, .f1
    xor a
    ldh [rIF], a
    ei
    nops 12
    xor a
    ldh [rDIV], a
    delay_loop 2502
    nops 7
    di
    jp missed
.f1:
    ldh a, [rDIV]
    ld [wRes + 0], a
    ld hl, .r2
    call vblank_halt
.r2:
    ld hl, .f2
    xor a
    ldh [rIF], a
    ei
    nops 11
    xor a
    ldh [rDIV], a
    delay_loop 2502
    nops 8
    di
    jp missed
.f2:
    ldh a, [rDIV]
    ld [wRes + 1], a
    ld hl, .r3
    call vblank_halt
.r3:
    ld hl, .f3
    xor a
    ldh [rIF], a
    ei
    nops 12
    xor a
    ldh [rDIV], a
    halt
    nop
    jp missed
.f3:
    ldh a, [rDIV]
    ld [wRes + 2], a
    ld hl, .r4
    call vblank_halt
.r4:
    ld hl, .f4
    xor a
    ldh [rIF], a
    ei
    nops 11
    xor a
    ldh [rDIV], a
    halt
    nop
    jp missed
.f4:
    ldh a, [rDIV]
    ld [wRes + 3], a
    ld hl, .r5
    call vblank_halt
.r5:                            ; IME=0: the HALT ends, no handler
    ld hl, missed
    xor a
    ldh [rIF], a
    nops 13
    xor a
    ldh [rDIV], a
    halt
    nops 6
    ldh a, [rDIV]
    ld [wRes + 9], a
    ld hl, .r6
    call vblank_halt
.r6:
    ld hl, missed
    xor a
    ldh [rIF], a
    nops 12
    xor a
    ldh [rDIV], a
    halt
    nops 6
    ldh a, [rDIV]
    ld [wRes + 10], a

    ; 3. HALT as a timer request comes
    ld de, wRes + 4
    halt_skip 2
    halt_skip 3
    halt_skip 4
    halt_skip 5
    halt_skip 6
    xor a
    ldh [rTAC], a
    ldh [rIE], a

    ld de, 0
.check:
    ld hl, wRes
    add hl, de
    ld a, [hl]
    ld [wGot], a
    ld hl, expected
    add hl, de
    ld b, [hl]
    ld hl, s_halt_nop
    ld a, e
    cp 4
    jr c, .named
    ld hl, s_halt_ime0
    cp 9
    jr nc, .named
    ld hl, s_halt_skip
.named:
    ld a, [wGot]
    call expect
    inc e
    ld a, e
    cp 11
    jr nz, .check
    jp finish

; vblank_halt: IF = 0, EI, HALT; the VBlank handler jumps to HL.
vblank_halt:
    xor a
    ldh [rIF], a
    ei
    halt
    nop
missed:
    di
    ld hl, s_missed
    call fail_msg
    jp finish

expected:
    db $11, $12, $11, $12       ; DIV: NOP run 12 / 11, HALT 12 / 11
    db 1, 1, 1, 2, 2            ; handler runs: 2, 3, 4 NOPs: the request after the
                                ; HALT's M-cycle; 5: as it ends; 6: before the HALT
    db $11, $12                 ; DIV: HALT with IME=0, reset 13 / 12 M-cycles in

s_di_late:   db "di ran though vblank was requested", 0
s_di_early:  db "di one m-cycle earlier did not block", 0
s_missed:    db "no vblank handler", 0
s_halt_nop:  db "halt ime=1 vs nops: div", 0
s_halt_skip: db "halt as timer irq comes: runs", 0
s_halt_ime0: db "halt ime=0 vs nops: div", 0
