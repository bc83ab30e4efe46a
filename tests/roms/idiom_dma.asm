; idiom_dma.asm - an HRAM OAM-DMA routine every frame (a benchmark idiom ROM).
;
; Games build their sprites in a shadow OAM in WRAM and copy it with OAM DMA
; in the VBlank handler. During the transfer the CPU can only reach HRAM, so
; the routine that starts it and waits out its 160 M-cycles runs from HRAM.
;
; The game: 40 particles (sprites) bounce around the screen, their speeds
; nudged by the d-pad; A makes them all jump. The main loop updates the
; shadow OAM, then sleeps until VBlank (HALT).

    title "IDIOM DMA"
    include "idiom_lib.inc"

wVel        EQU $C100           ; 40 x (dy, dx), signed

main:
    ld sp, STACK_TOP
    call init
    call init_dma
    ld hl, wShadowOAM           ; 40 sprites on a grid, tiles 4-7
    ld de, wVel
    ld c, 0
.init:
    ld a, c
    and $38
    add a
    add 20
    ld [hl+], a                 ; y
    ld a, c
    and $07
    swap a
    add 12
    ld [hl+], a                 ; x
    ld a, c
    and $03
    add 4
    ld [hl+], a                 ; tile
    ld a, c
    and $04
    swap a
    ld [hl+], a                 ; palette 0/1
    ld a, c                     ; velocities: -1, 1 by index
    and $01
    add a
    dec a
    ld [de], a
    inc de
    ld a, c
    and $02
    dec a
    ld [de], a
    inc de
    inc c
    ld a, c
    cp 40
    jr nz, .init
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
    call move_particles
    ld hl, wFrame
    inc [hl]
    jr .frame

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

; move_particles: y += dy, x += dx; bounce at the edges; the d-pad adds to
; every dx/dy (clamped to -3..3); A sets every dy to -3.
move_particles:
    ld hl, wShadowOAM
    ld de, wVel
    ld b, 40
.p:
    ld a, [wJoyNew]             ; A: jump
    and PAD_A
    jr z, .no_jump
    ld a, -3
    ld [de], a
.no_jump:
    ld a, [wJoyNew]             ; up/down nudge dy
    and PAD_UP
    jr z, .no_up
    ld a, [de]
    cp -3
    jr z, .no_up
    dec a
    ld [de], a
.no_up:
    ld a, [wJoyNew]
    and PAD_DOWN
    jr z, .no_down
    ld a, [de]
    cp 3
    jr z, .no_down
    inc a
    ld [de], a
.no_down:
    ld a, [de]                  ; y
    add [hl]
    ld [hl], a
    cp 16
    jr c, .bounce_y
    cp 152
    jr c, .y_ok
.bounce_y:
    ld a, [de]
    cpl
    inc a
    ld [de], a
.y_ok:
    inc hl
    inc de
    ld a, [wJoy]                ; right/left nudge dx (held)
    and PAD_RIGHT
    jr z, .no_right
    ld a, [de]
    cp 3
    jr z, .no_right
    inc a
    ld [de], a
.no_right:
    ld a, [wJoy]
    and PAD_LEFT
    jr z, .no_left
    ld a, [de]
    cp -3
    jr z, .no_left
    dec a
    ld [de], a
.no_left:
    ld a, [de]                  ; x
    add [hl]
    ld [hl], a
    cp 8
    jr c, .bounce_x
    cp 160
    jr c, .x_ok
.bounce_x:
    ld a, [de]
    cpl
    inc a
    ld [de], a
.x_ok:
    inc hl
    inc hl
    inc hl
    inc de
    dec b
    jr nz, .p
    ret

vblank_isr:
    push af
    ld a, high(wShadowOAM)
    call hDMA
    ld a, 1
    ld [wVBlankDone], a
    pop af
    reti

stat_isr:
timer_isr:
    reti
