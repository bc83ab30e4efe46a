; idiom_joypad.asm - GBDK-style joypad busy-waits (a benchmark idiom ROM).
;
; Much homebrew is C compiled by GBDK, whose runtime reads the joypad in
; joypad(): select the d-pad (write $20 to P1), read P1 twice, select the
; buttons (write $10), read P1 six times, deselect both (write $30).
; waitpad(mask) calls joypad() until a button in mask is down, waitpadup()
; until none is: no HALT, the CPU spins on P1 (about 11 P1 accesses every
; 26 instructions, some 2,000 a frame) for as long as the player waits.
;
; The game (a tile painter, written as GBDK's C would compile it: globals in
; WRAM, one call per library routine): each press moves a cursor (sprite 0)
; one tile, A paints the tile under it (written the way set_bkg_tiles does:
; wait until STAT says VRAM is free, then write), B picks the next paint.
; The VBlank handler is GBDK's default one: count sys_time, copy the shadow
; OAM by DMA.

    title "IDIOM JOYPAD"
    include "idiom_lib.inc"

_sys_time   EQU $C100           ; 2 bytes
_cursor_x   EQU $C102           ; in tiles, 0..19
_cursor_y   EQU $C103           ; 0..17
_paint      EQU $C104           ; tile painted by A, 0..7
_key        EQU $C105

main:
    ld sp, STACK_TOP
    call init
    call init_dma
    ld a, 10
    ld [_cursor_x], a
    ld a, 9
    ld [_cursor_y], a
    ld a, 3
    ld [_paint], a
    ld a, 5
    ld [wShadowOAM + 2], a      ; sprite 0: the cursor (a ring)
    call _move_cursor_sprite
    ld a, LCDC_ON
    ldh [rLCDC], a
    ld a, $01                   ; VBlank only
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
.loop:                          ; while (1) { key = waitpad(J_ANY); ...; waitpadup(); }
    ld a, $FF
    call _waitpad
    ld [_key], a
    call _handle_key
    call _waitpadup
    jr .loop

; UINT8 joypad(void): 1 = pressed; 7-4 Down Up Left Right, 3-0 Start Select B A.
_joypad:
    ld a, $20
    ldh [rP1], a                ; select the d-pad
    ldh a, [rP1]
    ldh a, [rP1]                ; (the second read lets the lines settle)
    and $0F
    swap a
    ld b, a
    ld a, $10
    ldh [rP1], a                ; select the buttons
    ldh a, [rP1]
    ldh a, [rP1]
    ldh a, [rP1]
    ldh a, [rP1]
    ldh a, [rP1]
    ldh a, [rP1]
    and $0F
    or b
    cpl
    ld e, a
    ld a, $30
    ldh [rP1], a                ; deselect both
    ld a, e
    ret

; UINT8 waitpad(UINT8 mask): spin until a button in mask is down.
_waitpad:
    ld d, a
.spin:
    call _joypad
    and d
    jr z, .spin
    ret

; void waitpadup(void): spin until no button is down.
_waitpadup:
.spin:
    call _joypad
    or a
    jr nz, .spin
    ret

_handle_key:
    ld a, [_key]
    bit 4, a
    jr z, .not_right
    ld hl, _cursor_x
    ld a, [hl]
    cp 19
    jr nc, .not_right
    inc [hl]
.not_right:
    ld a, [_key]
    bit 5, a
    jr z, .not_left
    ld hl, _cursor_x
    ld a, [hl]
    or a
    jr z, .not_left
    dec [hl]
.not_left:
    ld a, [_key]
    bit 6, a
    jr z, .not_up
    ld hl, _cursor_y
    ld a, [hl]
    or a
    jr z, .not_up
    dec [hl]
.not_up:
    ld a, [_key]
    bit 7, a
    jr z, .not_down
    ld hl, _cursor_y
    ld a, [hl]
    cp 17
    jr nc, .not_down
    inc [hl]
.not_down:
    ld a, [_key]
    bit 1, a
    jr z, .not_b
    ld a, [_paint]
    inc a
    and $07
    ld [_paint], a
.not_b:
    ld a, [_key]
    bit 0, a
    call nz, _paint_tile
    jp _move_cursor_sprite

; set_bkg_tiles(cursor_x, cursor_y, 1, 1, &paint): VRAM is written only while
; STAT reports mode 0 or 1 (GBDK's WAIT_STAT before each byte).
_paint_tile:
    ld a, [_cursor_y]
    ld l, a
    ld h, 0
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    ld a, [_cursor_x]
    ld c, a
    ld b, high(BG_MAP)
    add hl, bc
    ld a, [_paint]
    ld b, a
.wait_stat:
    ldh a, [rSTAT]
    and $02
    jr nz, .wait_stat
    ld [hl], b
    ret

; move_sprite(0, x * 8 + 8, y * 8 + 16): into the shadow OAM.
_move_cursor_sprite:
    ld a, [_cursor_y]
    add a
    add a
    add a
    add 16
    ld [wShadowOAM], a
    ld a, [_cursor_x]
    add a
    add a
    add a
    add 8
    ld [wShadowOAM + 1], a
    ret

vblank_isr:                     ; GBDK's default VBlank handler
    push af
    push hl
    ld hl, _sys_time
    inc [hl]
    jr nz, .no_carry
    inc hl
    inc [hl]
.no_carry:
    ld a, high(wShadowOAM)
    call hDMA
    pop hl
    pop af
    reti

stat_isr:
timer_isr:
    reti
