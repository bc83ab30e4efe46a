; idiom_halt.asm - HALT-based frame wait (a benchmark idiom ROM: the good case).
;
; Most commercial games sleep until the VBlank interrupt: HALT, check the
; flag the handler sets, HALT again if another interrupt woke the CPU. The
; CPU then runs only the frame's own work.
;
; The game: the player sprite follows the d-pad and eight chasers (sprites
; 1-8) step towards it, each at its own pace; the VBlank handler writes OAM
; directly, scrolls the background and redraws a four-tile "score" from a BCD
; counter that counts frames while A is held.

    title "IDIOM HALT"
    include "idiom_lib.inc"

wScore      EQU $C100           ; 2 bytes, BCD
wChasers    EQU $C110           ; 8 x (y, x, pace)

main:
    ld sp, STACK_TOP
    call init
    ld hl, wChasers             ; chasers along the top, paces 1..8
    ld b, 8
    ld c, 16
.chaser:
    ld a, 24
    ld [hl+], a                 ; y
    ld a, c
    ld [hl+], a                 ; x
    add 18
    ld c, a
    ld a, b
    ld [hl+], a                 ; pace: moves on frames where (frame & 7) < pace
    dec b
    jr nz, .chaser
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
    call move_chasers
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

; move_chasers: each chaser whose pace allows it this frame steps one pixel
; towards the player on each axis.
move_chasers:
    ld hl, wChasers
    ld b, 8
.chaser:
    ld a, [wFrame]
    and $07
    ld c, a
    inc hl
    inc hl
    ld a, [hl-]                 ; pace
    dec hl
    cp c
    jr c, .rest
    jr z, .rest
    ld a, [wPlayerY]
    ld c, a
    ld a, [hl]
    cp c
    jr z, .y_done
    jr c, .y_down
    dec [hl]
    jr .y_done
.y_down:
    inc [hl]
.y_done:
    inc hl
    ld a, [wPlayerX]
    ld c, a
    ld a, [hl]
    cp c
    jr z, .x_done
    jr c, .x_right
    dec [hl]
    jr .x_done
.x_right:
    inc [hl]
.x_done:
    dec hl
.rest:
    inc hl
    inc hl
    inc hl
    dec b
    jr nz, .chaser
    ret

vblank_isr:
    push af
    push bc
    push de
    push hl
    ld hl, OAM
    ld a, [wPlayerY]
    ld [hl+], a
    ld a, [wPlayerX]
    ld [hl+], a
    ld a, 5
    ld [hl+], a
    inc hl
    ld de, wChasers             ; sprites 1-8: the chasers
    ld b, 8
.chaser:
    ld a, [de]
    inc de
    ld [hl+], a
    ld a, [de]
    inc de
    inc de
    ld [hl+], a
    ld a, 6
    ld [hl+], a
    ld a, $10
    ld [hl+], a
    dec b
    jr nz, .chaser
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
    pop de
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
