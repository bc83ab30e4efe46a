; ppu_lyc_onoff.asm - STAT's LY=LYC flag and interrupt as the LCD goes off and on,
; when LYC is written, and the STAT line blocking its own requests (DMG).
;
; Pan Docs (STAT, LCDC.7): the STAT interrupt is requested on the rising edge of
; the OR of the enabled sources; LY=LYC is compared while the PPU runs. Exact
; behaviour from mooneye-gb's stat_lyc_onoff and stat_irq_blocking (verified on DMG):
;   1. LCD switched off while LY=LYC: the flag stays set (STAT $C4 with the LYC
;      source on), and stays so when LYC is written with the LCD off; switched on
;      with LYC=1 (LY=0) it clears, and no interrupt comes.
;   2. The same, LYC=0 written while off: switched on, LY=0=LYC - the flag was set
;      all along, so the line does not rise: no interrupt.
;   3. Off while the flag is clear (LYC=0 at LY=144): it stays clear, also after
;      LYC=1 is written; switched on with LYC=1: no interrupt.
;   4. Off with the flag clear, LYC=0: switched on, LY=0=LYC sets it - a rising edge,
;      the interrupt comes (before the instruction after the LCDC write ends).
;   5. LYC written to equal LY, the LCD on (line 144, mode 1 source off): the flag
;      sets at once and the STAT interrupt is requested; written away, it clears.
;   6. All four sources enabled, LYC set line by line to the current LY before mode 3
;      ends: the STAT line never falls (mode 3 is no source but LY=LYC holds it), so
;      no request comes from line 0 to line 143.
; Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "PPU LYC ONOFF"
    include "testlib_defs.inc"

    org $0048
    jp hl                       ; STAT: continue at HL

    org $0100
    nop
    jp main

    org $0150
    include "testlib_body.inc"

wGot EQU SCRATCH
wR   EQU SCRATCH + 1        ; 10 STAT readings of rounds 1-4

main:
    ld sp, STACK_TOP
    call lib_init
    ld a, $40                   ; LY=LYC source only
    ldh [rSTAT], a
    ld a, $02
    ldh [rIE], a

    ; 1. off with the flag set, LYC changed, on with LY != LYC
    ld hl, irq_round1
    call vblank_start
    ld a, 144
    ldh [rLYC], a
    xor a
    ldh [rLCDC], a
    ldh [rIF], a
    ei
    nop
    ldh a, [rSTAT]
    ld [wR + 0], a
    ld a, 1
    ldh [rLYC], a
    ldh a, [rSTAT]
    ld [wR + 1], a
    ld a, $91
    ldh [rLCDC], a
    ldh a, [rSTAT]
    ld [wR + 2], a
    di

    ; 2. off with the flag set, LYC=0 written, on: LY=0=LYC, no edge
    ld hl, irq_round2
    call vblank_start
    ld a, 144
    ldh [rLYC], a
    xor a
    ldh [rLCDC], a
    ldh [rIF], a
    ei
    nop
    ldh a, [rSTAT]
    ld [wR + 3], a
    xor a
    ldh [rLYC], a
    ldh a, [rSTAT]
    ld [wR + 4], a
    ld a, $91
    ldh [rLCDC], a
    ldh a, [rSTAT]
    ld [wR + 5], a
    di

    ; 3. off with the flag clear, LYC=1 written, on: no edge
    ld hl, irq_round3
    call vblank_start
    xor a
    ldh [rLYC], a
    ldh [rIF], a
    ldh [rLCDC], a
    ei
    nop
    ldh a, [rSTAT]
    ld [wR + 6], a
    ld a, 1
    ldh [rLYC], a
    ldh a, [rSTAT]
    ld [wR + 7], a
    ld a, $91
    ldh [rLCDC], a
    ldh a, [rSTAT]
    ld [wR + 8], a
    di

    ; 4. off with the flag clear, LYC=0: switched on, the edge requests STAT at once
    call vblank_start
    xor a
    ldh [rLYC], a
    ldh [rIF], a
    ldh [rLCDC], a
    ei
    nop
    ldh a, [rSTAT]
    ld [wR + 9], a
    ld hl, round4_ok
    ld a, $91
    ldh [rLCDC], a
    di
    ld hl, s_r4
    call fail_msg
    jr round4_checks
round4_ok:
    di
round4_checks:
    ld de, 0
.next:
    ld hl, wR
    add hl, de
    ld a, [hl]
    ld [wGot], a
    ld hl, onoff_expected
    add hl, de
    ld b, [hl]
    ld hl, onoff_names
    add hl, de
    add hl, de
    ld a, [hl+]
    ld h, [hl]
    ld l, a
    ld a, [wGot]
    call expect
    inc e
    ld a, e
    cp 10
    jr nz, .next

round5:
    ; 5. LYC written to equal LY during line 144 (IME off: IF shows the request)
    xor a
    ldh [rIE], a
    call vblank_start
    ld a, 100
    ldh [rLYC], a
    xor a
    ldh [rIF], a
    ld a, 144
    ldh [rLYC], a
    ldh a, [rSTAT]
    ld b, $C5
    ld hl, s_r5_flag
    call expect
    ldh a, [rIF]
    and $02
    ld b, $02
    ld hl, s_r5_irq
    call expect
    ld a, 100
    ldh [rLYC], a
    ldh a, [rSTAT]
    ld b, $C1
    ld hl, s_r5_away
    call expect

    ; 6. all sources on, the line held high by LY=LYC across mode 3 every line
    call vblank_start
    ld a, $02
    ldh [rIE], a
    ld hl, round6_start
    xor a
    ldh [rIF], a
    ld a, $10                   ; mode-1 source: requested at once (in VBlank)
    ldh [rSTAT], a
    ei
    nop
    di
    ld hl, s_r6_m1
    call fail_msg
    jr done
round6_start:
    ld hl, irq_round6
    ei
    ld a, $78                   ; all sources
    ldh [rSTAT], a
    ld b, 0
.line:
    ld a, b
    cp 144
    jr nc, .end
    ldh [rLYC], a
.until_eq:                      ; (in mode 1 or 2 as LY reaches B)
    ldh a, [rSTAT]
    and $04
    jr z, .until_eq
.until_m0:                      ; past mode 3
    ldh a, [rSTAT]
    and $03
    jr nz, .until_m0
    inc b
    jr .line
.end:
    di
done:
    xor a
    ldh [rSTAT], a
    ldh [rIE], a
    ldh [rLYC], a
    jp finish

irq_round1:
    ld hl, s_r1_irq
    jr irq_fail
irq_round2:
    ld hl, s_r2_irq
    jr irq_fail
irq_round3:
    ld hl, s_r3_irq
    jr irq_fail
irq_round6:
    ld a, b
    ld [wGot], a
    ld hl, s_r6_irq
irq_fail:
    call fail_msg
    jr done

; vblank_start: wait for line 143, then 144 (a fresh VBlank); the LCD must be on.
vblank_start:
    ldh a, [rLY]
    cp 143
    jr nz, vblank_start
.l144:
    ldh a, [rLY]
    cp 144
    jr nz, .l144
    ret

onoff_expected:
    db $C4, $C4, $C0            ; 1: off with LY=LYC, LYC=1 written while off, on
    db $C4, $C4, $C4            ; 2: off with LY=LYC, LYC=0 written while off, on
    db $C0, $C0, $C0            ; 3: off with LY!=LYC, LYC=1 written while off, on
    db $C0                      ; 4: off with LY!=LYC
onoff_names:
    dw s_r1_off, s_r1_lyc, s_r1_on, s_r1_off, s_r2_lyc, s_r2_on, s_r3_off, s_r3_lyc, s_r3_on
    dw s_r3_off

s_r1_off:  db "off with lyc=ly: stat", 0
s_r1_lyc:  db "lyc written while off: stat", 0
s_r1_on:   db "on with lyc=1: stat", 0
s_r1_irq:  db "round 1: stat irq", 0
s_r2_lyc:  db "flag kept, lyc=0 while off: stat", 0
s_r2_on:   db "on, lyc=ly=0 kept: stat", 0
s_r2_irq:  db "round 2: stat irq", 0
s_r3_off:  db "off with lyc!=ly: stat", 0
s_r3_lyc:  db "lyc=1 while off, flag clear: stat", 0
s_r3_on:   db "on with lyc=1, flag clear: stat", 0
s_r3_irq:  db "round 3: stat irq", 0
s_r4:      db "on with lyc=0, flag clear: no stat irq", 0
s_r5_flag: db "lyc written = ly: stat", 0
s_r5_irq:  db "lyc written = ly: if", 0
s_r5_away: db "lyc written != ly: stat", 0
s_r6_m1:   db "mode 1 source in vblank: no stat irq", 0
s_r6_irq:  db "stat line held by lyc: stat irq", 0
