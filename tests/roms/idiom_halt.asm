; idiom_halt.asm - HALT-based frame wait (a benchmark idiom ROM: the good case).
;
; Most commercial games sleep until the VBlank interrupt: HALT, check the
; flag the handler sets, HALT again if another interrupt woke the CPU. The
; CPU then runs only the frame's own work.
;
; The game: the player sprite follows the d-pad; the VBlank handler writes
; OAM directly, scrolls the background and redraws a four-tile "score" from
; a BCD counter that counts frames while A is held.

    title "IDIOM HALT"
    include "idiom_lib.inc"

wScore      EQU $C100           ; 2 bytes, BCD

main:
    ld sp, STACK_TOP
    call init
    ld a, LCDC_ON
    ldh [rLCDC], a
    ld a, $01
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
.frame:
    call delay_frame
    call read_pad
    call move_player
    ld a, [wJoy]
    and PAD_A
    jr z, .no_score
    ld a, [wScore]              ; score += 1, BCD
    add 1
    daa
    ld [wScore], a
    ld a, [wScore + 1]
    adc 0
    daa
    ld [wScore + 1], a
.no_score:
    ld hl, wFrame
    inc [hl]
    jr .frame

; delay_frame: sleep until the VBlank handler has run.
delay_frame:
    xor a
    ld [wVBlankDone], a
.halt:
    halt
    nop
    ld a, [wVBlankDone]
    or a
    jr z, .halt
    ret

vblank_isr:
    push af
    push bc
    push hl
    ld hl, OAM
    ld a, [wPlayerY]
    ld [hl+], a
    ld a, [wPlayerX]
    ld [hl+], a
    ld a, 5
    ld [hl+], a
    ld a, [wFrame]
    ldh [rSCX], a
    ld hl, BG_MAP + 1           ; score digits as tiles 0-7 (digit & 7), row 0
    ld a, [wScore + 1]
    call draw_bcd
    ld a, [wScore]
    call draw_bcd
    ld a, 1
    ld [wVBlankDone], a
    pop hl
    pop bc
    pop af
    reti

draw_bcd:
    ld b, a
    swap a
    and $07
    ld [hl+], a
    ld a, b
    and $07
    ld [hl+], a
    ret

stat_isr:
timer_isr:
    reti
