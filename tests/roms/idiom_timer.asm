; idiom_timer.asm - a timer-interrupt-driven loop (a benchmark idiom ROM).
;
; Games that run their music (or their whole logic) off the timer set TMA
; and TAC so that TIMA overflows at a fixed rate, and step a sound driver in
; the timer interrupt, writing the sound registers. Here TAC = $06 (65536 Hz)
; and TMA = $80: an interrupt every 128 counts, 8192 T-cycles, about 8.6 a
; frame. The main loop sleeps (HALT) and runs one game tick per timer tick;
; the VBlank handler draws.
;
; The game: the player sprite moves one pixel per game tick in the held
; directions; the driver plays a 32-note loop on channels 1 and 2, A
; transposes it; the background scrolls with the tick count.

    title "IDIOM TIMER"
    include "idiom_lib.inc"

wTicks      EQU $C100
wLastTick   EQU $C101
wNote       EQU $C102
wTranspose  EQU $C103

main:
    ld sp, STACK_TOP
    call init
    ld a, $80
    ldh [rNR52], a              ; sound on
    ld a, $77
    ldh [rNR50], a
    ld a, $FF
    ldh [rNR51], a
    ld a, $80
    ldh [rNR11], a
    ldh [rNR21], a
    ld a, $80
    ldh [rTMA], a
    ldh [rTIMA], a
    ld a, $06
    ldh [rTAC], a
    ld a, LCDC_ON
    ldh [rLCDC], a
    ld a, $05                   ; VBlank and timer
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
.loop:
    halt
    ld a, [wTicks]              ; a timer tick since the last game tick?
    ld b, a
    ld a, [wLastTick]
    cp b
    jr z, .loop                 ; (woken by VBlank)
    ld a, b
    ld [wLastTick], a
    call read_pad
    call move_player
    ld a, [wJoyNew]
    and PAD_A
    jr z, .loop
    ld a, [wTranspose]
    add 2
    and $0F
    ld [wTranspose], a
    jr .loop

; The sound driver: one note a tick on channel 1, every other tick on 2.
timer_isr:
    push af
    push bc
    push hl
    ld hl, wTicks
    inc [hl]
    ld a, [wNote]
    inc a
    and $1F
    ld [wNote], a
    ld b, a
    ld a, [wTranspose]
    add b
    and $1F
    add a                       ; 2 bytes a note
    ld c, a
    ld b, 0
    ld hl, notes
    add hl, bc
    ld a, $F3                   ; envelope: full volume, decaying
    ldh [rNR12], a
    ld a, [hl+]
    ldh [rNR13], a
    ld a, [hl]
    or $80                      ; trigger
    ldh [rNR14], a
    ld a, [wNote]
    bit 0, a
    jr nz, .done
    ld a, $A2
    ldh [rNR22], a
    dec hl
    ld a, [hl+]
    ldh [rNR23], a
    ld a, [hl]
    or $80
    ldh [rNR24], a
.done:
    pop hl
    pop bc
    pop af
    reti

vblank_isr:
    push af
    push hl
    ld hl, OAM
    ld a, [wPlayerY]
    ld [hl+], a
    ld a, [wPlayerX]
    ld [hl+], a
    ld a, 5
    ld [hl+], a
    ld a, [wTicks]
    ldh [rSCX], a
    pop hl
    pop af
    reti

stat_isr:
    reti

; 32 notes (11-bit frequency values, little endian).
notes:
    dw $0416, $0483, $04E5, $0511, $0563, $05AC, $05ED, $060A
    dw $0642, $0672, $06A0, $06C9, $06EE, $0706, $0721, $0739
    dw $0739, $0721, $0706, $06EE, $06C9, $06A0, $0672, $0642
    dw $060A, $05ED, $05AC, $0563, $0511, $04E5, $0483, $0416
