; idiom_stat.asm - STAT-mode polling before VRAM writes (a benchmark idiom ROM).
;
; Writing VRAM while the PPU draws (mode 3) is lost, so code that updates the
; map during the frame (GBDK's set_bkg_tiles, text printers, status bars)
; reads STAT before every byte and waits while bit 1 is set (modes 2 and 3).
; The frame itself is waited for with HALT (VBlank interrupt), as GBDK's
; wait_vbl_done does.
;
; The game: a text box scrolls six rows of the map (120 tiles rewritten
; every frame, each behind its own STAT wait); the d-pad picks the rows'
; pattern; the player sprite (OAM written in the VBlank handler) follows it.

    title "IDIOM STAT"
    include "idiom_lib.inc"

wPhase      EQU $C100
wPattern    EQU $C101

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
    call wait_vbl_done
    call read_pad
    call move_player
    ld a, [wJoy]                ; pattern step from the d-pad: 1..4
    swap a
    and $03
    inc a
    ld [wPattern], a
    call write_rows
    ld hl, wFrame
    inc [hl]
    jr .frame

; wait_vbl_done: HALT until the VBlank handler has run.
wait_vbl_done:
    xor a
    ld [wVBlankDone], a
.halt:
    halt
    ld a, [wVBlankDone]
    or a
    jr z, .halt
    ret

; write_rows: map rows 12-17 (120 tiles) = (phase + column * pattern) & 7,
; every byte after a STAT wait.
write_rows:
    ld a, [wPhase]
    inc a
    ld [wPhase], a
    ld d, a                     ; running tile value
    ld a, [wPattern]
    ld e, a
    ld hl, BG_MAP + 12 * 32
    ld c, 6
.row:
    ld b, 20
.tile:
.wait_stat:
    ldh a, [rSTAT]
    and $02
    jr nz, .wait_stat
    ld a, d
    and $07
    ld [hl+], a
    ld a, d
    add e
    ld d, a
    dec b
    jr nz, .tile
    ld a, l                     ; next row: skip the 12 off-screen columns
    add 12
    ld l, a
    jr nc, .no_carry
    inc h
.no_carry:
    dec c
    jr nz, .row
    ret

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
    ld a, 1
    ld [wVBlankDone], a
    pop hl
    pop af
    reti

stat_isr:
timer_isr:
    reti
