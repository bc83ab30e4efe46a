; idle_loops.asm - polling loops for the idle-loop skip's exactness test
; (tests/test_idle.py), not a benchmark. Every frame it runs loops that an
; idle-loop skip must and must not shorten, and keeps what they counted in
; WRAM, so that a wrong skip changes memory:
;   - LY polled while a WRAM counter counts the iterations (writes: no skip);
;   - LY polled with a push and pop of it (the stack holds the same bytes
;     within a line: skipped to the line's end);
;   - LY polled while writing the same byte each time (writes: no skip);
;   - DIV polled until it steps (pure: skipped to the step), eight times;
;   - STAT polled until mode 0 (pure), then VRAM read back;
;   - P1 polled GBDK-style (select writes; pure while the buttons stay);
;   - a pure LY wait for the next VBlank.
; The buttons decide which lines the counting loops wait for.

    title "IDLE LOOPS"
    include "idiom_lib.inc"

wCount      EQU $C100           ; 2 bytes: iterations of the counting loop
wDivLog     EQU $C102           ; 8 bytes: DIV after each step
wSame       EQU $C10C
wVram       EQU $C10D
wPad        EQU $C10E
wLog        EQU $C200           ; per frame: count lo/hi, pushes lo, DIV, VRAM (ring of 64)
wLogPtr     EQU $C110

main:
    ld sp, STACK_TOP
    call init
    ld a, LCDC_ON
    ldh [rLCDC], a
    xor a
    ldh [rIE], a
.frame:
    call read_pad
    ld a, [wJoy]                ; target line 20..83 from the buttons
    and $3F
    add 20
    ld b, a
    ld hl, wCount               ; 1: count while waiting for line B
.count:
    inc [hl]
    jr nz, .no_carry
    inc hl
    inc [hl]
    dec hl
.no_carry:
    ldh a, [rLY]
    cp b
    jr nz, .count
    ld a, b                     ; 2: wait 6 lines more, pushing LY each time
    add 6
    ld b, a
.push:
    ldh a, [rLY]
    push af
    pop de
    ld a, d
    cp b
    jr nz, .push
    ld a, b                     ; 3: 3 lines more, writing the same byte
    add 3
    ld b, a
.same:
    ld a, $5A
    ld [wSame], a
    ldh a, [rLY]
    cp b
    jr nz, .same
    ld hl, wDivLog              ; 4: eight DIV steps, pure polls
    ld c, 8
.div:
    ldh a, [rDIV]
    ld b, a
.div_wait:
    ldh a, [rDIV]
    cp b
    jr z, .div_wait
    ld [hl+], a
    dec c
    jr nz, .div
.stat:                          ; 5: until mode 0, then read VRAM there
    ldh a, [rSTAT]
    and $03
    jr nz, .stat
    ld a, [BG_MAP + 33]
    ld [wVram], a
    ld c, 4                     ; 6: P1, GBDK style, four times round
.pad:
    ld a, $20
    ldh [rP1], a
    ldh a, [rP1]
    ldh a, [rP1]
    ld a, $30
    ldh [rP1], a
    dec c
    jr nz, .pad
    ld [wPad], a
.vblank:                        ; 7: the next VBlank, pure
    ldh a, [rLY]
    cp 144
    jr nz, .vblank
    ld a, [wLogPtr]             ; log this frame's results
    ld l, a
    ld h, high(wLog)
    ld a, [wCount]
    ld [hl+], a
    ld a, [wCount + 1]
    ld [hl+], a
    ldh a, [rDIV]
    ld [hl+], a
    ld a, [wVram]
    ld [hl+], a
    ld a, l
    ld [wLogPtr], a
    ld hl, wFrame
    inc [hl]
    jp .frame

vblank_isr:
stat_isr:
timer_isr:
    reti
