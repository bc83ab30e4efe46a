; ppu_mode_timing.asm - STAT mode-2/0/1 interrupt timing against the line (DMG).
;
; Each measurement halts for a STAT request; the handler ($48: add sp,2; ret) drops
; the return address into the halted routine and returns to its caller, which then
; counts loop iterations or reads a register after a run of NOPs. Expected values:
; the results of the same measurements on DMG hardware, from the mooneye-gb
; acceptance tests (intr_2_0_timing, intr_2_mode0_timing, intr_2_mode3_timing,
; intr_2_oam_ok_timing, intr_1_2_timing-GS, hblank_ly_scx_timing-GS; their sources
; state the verified results). The code paths that are timed are built to the same
; M-cycle counts; the facts behind them:
;   - mode 2 is requested as a line starts and shows in STAT one M-cycle later; mode 3
;     shows 84 T after the line start and OAM is free again when mode 0 shows, 172 T
;     of mode 3 later (no objects, SCX=0): 1 and 2 loop passes after 46/45 NOPs
;     (mode 0, OAM) and 3/2 NOPs (mode 3);
;   - the mode-0 request comes 63.5 M-cycles after the mode-2 request: an "inc b;
;     jr" loop started after 4/3 NOPs counts 7/8;
;   - from the mode-1 request (line 144) to the mode-2 request of line 0: 10 lines;
;     the loop after 5/4 NOPs counts $14/$15 (mod 256);
;   - mode 3 lasts SCX mod 8 T longer: LY changes 51, 50 and 49 M-cycles after the
;     mode-0 request for SCX mod 8 = 0, 1-4 and 5-7 (the request falls 2 T after an
;     M-cycle boundary, and a HALT woken 2 T or more after a request has no extra
;     M-cycle): the LY read after 2/3 NOPs (SCX 0, 8), 1/2 (1-4), 0/1 (5-7) sees
;     the old line, then the new one, on lines $42 and $43.
; Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "PPU MODE TIMING"
    include "testlib_defs.inc"

    org $0048
    add sp, 2                   ; STAT: drop the return address into the halted
    ret                         ; routine, back to its caller

    org $0100
    nop
    jp main

    org $0150
    include "testlib_body.inc"

wRes     EQU SCRATCH            ; measurements, checked at the end: 10, then the
wScxRes  EQU SCRATCH + 10       ; 36 LY readings: SCX 0..8 x lines $42/$43 x 2 delays

MACRO nops
    rept \1
    nop
    endr
ENDM

; count_until: B = passes of "inc b; ld a,[hl]; <test>" until the test holds
; (\1: 0 = mode 0 shows, 3 = mode 3 shows, $FF = OAM reads 0)
MACRO count_until
    ld b, 0
.pass\@:
    inc b
    ld a, [hl]
    if \1 == 0
    and 3
    jr nz, .pass\@
    elif \1 == 3
    and 3
    cp 3
    jr nz, .pass\@
    else
    and $FF
    jr nz, .pass\@
    endc
ENDM

; scx_case SCX, N: with SCX set, LY read N and N+1 NOPs after the mode-0 request
; of line $41 (the delay of the halted routine, a call of 23 NOPs, then the NOPs),
; then of line $42: four readings to [HL+].
MACRO scx_case
    ld a, \1
    ldh [rSCX], a
    ly_after_mode0 $41, \2
    ly_after_mode0 $41, \2 + 1
    ly_after_mode0 $42, \2
    ly_after_mode0 $42, \2 + 1
ENDM

MACRO ly_after_mode0
    push hl
    ld d, \1
    ld hl, rLY
    call halt_for_mode0
    call nops23
    nops \2
    ld a, [hl]
    pop hl
    ld [hl+], a
ENDM

main:
    ld sp, STACK_TOP
    call lib_init
    call vblank_start
    ld a, IE_STAT
    ldh [rIE], a

    ; mode 2 -> mode 0 request
    call halt_for_mode2
    nops 4
    call count_to_mode0_irq
    ld a, b
    ld [wRes + 0], a
    call halt_for_mode2
    nops 3
    call count_to_mode0_irq
    ld a, b
    ld [wRes + 1], a

    ; mode 2 request -> mode 0 shows
    ld hl, rSTAT
    call halt_for_mode2
    nops 46
    count_until 0
    ld a, b
    ld [wRes + 2], a
    call halt_for_mode2
    nops 45
    count_until 0
    ld a, b
    ld [wRes + 3], a

    ; mode 2 request -> mode 3 shows
    call halt_for_mode2
    nops 3
    count_until 3
    ld a, b
    ld [wRes + 4], a
    call halt_for_mode2
    nops 2
    count_until 3
    ld a, b
    ld [wRes + 5], a

    ; mode 2 request -> OAM readable (OAM cleared in VBlank first)
    call vblank_start
    ld hl, $FE00
    ld c, 160
    xor a
.clear:
    ld [hl+], a
    dec c
    jr nz, .clear
    ld hl, $FE00
    call halt_for_mode2
    nops 46
    count_until $FF
    ld a, b
    ld [wRes + 6], a
    call halt_for_mode2
    nops 45
    count_until $FF
    ld a, b
    ld [wRes + 7], a

    ; mode 1 request -> mode 2 request of line 0
    call halt_for_mode1
    nops 5
    call count_to_mode2_irq
    ld a, b
    ld [wRes + 8], a
    call halt_for_mode1
    nops 4
    call count_to_mode2_irq
    ld a, b
    ld [wRes + 9], a

    ; mode 0 request -> LY change, SCX 0..8
    ld a, $08
    ldh [rSTAT], a
    ld hl, wScxRes
    scx_case 0, 2
    scx_case 1, 1
    scx_case 2, 1
    scx_case 3, 1
    scx_case 4, 1
    scx_case 5, 0
    scx_case 6, 0
    scx_case 7, 0
    scx_case 8, 2
    xor a
    ldh [rSCX], a
    ldh [rSTAT], a
    di
    jp check

IE_STAT EQU $02

nops23:
    nops 23
    ret

; halt_for_mode2: on line $42, after mode 3 started, enable the mode-2 source, clear
; IF, EI, HALT; the STAT handler returns to our caller at the next line's request.
halt_for_mode2:
    ldh a, [rLY]
    cp $42
    jr nz, halt_for_mode2
.m0:
    ldh a, [rSTAT]
    and 3
    jr nz, .m0
.m3:
    ldh a, [rSTAT]
    and 3
    cp 3
    jr nz, .m3
    ld a, $20
    ldh [rSTAT], a
    xor a
    ldh [rIF], a
    ei
    halt
    nop
    jp halt_fail

; count_to_mode0_irq: enable the mode-0 source, EI, count 4-M loop passes in B
; until the STAT handler returns to our caller.
count_to_mode0_irq:
    ld a, $08
    ldh [rSTAT], a
    xor a
    ldh [rIF], a
    ei
    xor a
    ld b, a
.loop:
    inc b
    jr .loop

; halt_for_mode1: on line $42, enable the mode-1 source, clear IF, EI, HALT.
halt_for_mode1:
    ldh a, [rLY]
    cp $42
    jr nz, halt_for_mode1
    ld a, $10
    ldh [rSTAT], a
    xor a
    ldh [rIF], a
    ei
    halt
    nop
    jp halt_fail

; count_to_mode2_irq: as count_to_mode0_irq, for the mode-2 source.
count_to_mode2_irq:
    ld a, $20
    ldh [rSTAT], a
    xor a
    ldh [rIF], a
    ei
    xor a
    ld b, a
.loop:
    inc b
    jr .loop

; halt_for_mode0: wait for a fresh frame, then for line D; clear IF, EI, HALT until
; the mode-0 request of that line.
halt_for_mode0:
    call vblank_start
.ly:
    ldh a, [rLY]
    cp d
    jr nz, .ly
    xor a
    ldh [rIF], a
    ei
    halt
    nop
    jp halt_fail

; vblank_start: wait for line 143, then 144 (a fresh VBlank).
vblank_start:
    ldh a, [rLY]
    cp 143
    jr nz, vblank_start
.l144:
    ldh a, [rLY]
    cp 144
    jr nz, .l144
    ret

halt_fail:
    di
    ld hl, s_halt
    call fail_msg
    jp finish

check:
    ld hl, wRes                 ; wRes[k] against expected[k], named names[k]
    ld de, expected
    ld bc, names
    call expect_table
    jp finish


expected:
    db $07, $08                 ; mode 2 -> mode 0 request, 4 / 3 NOPs first
    db $01, $02                 ; mode 2 request -> mode 0 shows, 46 / 45 NOPs
    db $01, $02                 ; -> mode 3 shows, 3 / 2 NOPs
    db $01, $02                 ; -> OAM readable, 46 / 45 NOPs
    db $14, $15                 ; mode 1 request -> mode 2 request (line 0), 5 / 4 NOPs
    rept 9                      ; SCX 0..8: LY before/after the change, lines $42, $43
    db $41, $42, $42, $43
    endr

names:
    dw s_m0irq, s_m0irq, s_m0, s_m0, s_m3, s_m3, s_oam, s_oam, s_m1m2, s_m1m2
    dw s_scx0, s_scx0, s_scx0, s_scx0, s_scx1, s_scx1, s_scx1, s_scx1
    dw s_scx2, s_scx2, s_scx2, s_scx2, s_scx3, s_scx3, s_scx3, s_scx3
    dw s_scx4, s_scx4, s_scx4, s_scx4, s_scx5, s_scx5, s_scx5, s_scx5
    dw s_scx6, s_scx6, s_scx6, s_scx6, s_scx7, s_scx7, s_scx7, s_scx7
    dw s_scx8, s_scx8, s_scx8, s_scx8, 0

s_halt:  db "halt woke no handler", 0
s_m0irq: db "mode2 irq to mode0 irq", 0
s_m0:    db "mode2 irq to mode0", 0
s_m3:    db "mode2 irq to mode3", 0
s_oam:   db "mode2 irq to oam free", 0
s_m1m2:  db "mode1 irq to mode2 irq", 0
s_scx0:  db "mode0 irq to ly scx0", 0
s_scx1:  db "mode0 irq to ly scx1", 0
s_scx2:  db "mode0 irq to ly scx2", 0
s_scx3:  db "mode0 irq to ly scx3", 0
s_scx4:  db "mode0 irq to ly scx4", 0
s_scx5:  db "mode0 irq to ly scx5", 0
s_scx6:  db "mode0 irq to ly scx6", 0
s_scx7:  db "mode0 irq to ly scx7", 0
s_scx8:  db "mode0 irq to ly scx8", 0
