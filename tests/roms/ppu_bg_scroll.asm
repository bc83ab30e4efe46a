; ppu_bg_scroll: BG scrolling scene.
; Every VBlank: SCX += 1, SCY += 2 (both wrap at 256); every 64 frames the BG
; map flips between $9800 and $9C00 (LCDC.3), every 128 frames the tile data
; between $8000 and $8800-signed (LCDC.4; the $9000 block holds the same tiles
; with colours inverted).  Holding A rotates BGP; Right adds 2 more to SCX.
; Self-check (Pan Docs, LCDC.7): with the LCD off LY reads 0 and STAT mode 0.
    title "PPU BG SCROLL"
    include "ppu_lib.inc"

Start:
    call Init
    ; $9800 map: tile (row*7 + col) & 31; $9C00 map: 16 + ((row ^ col) & 15)
    ld hl, $9800
    ld b, 0             ; row
.rows:
    ld c, 0             ; col
.cols:
    ld a, b
    add a, a
    add a, a
    add a, a
    sub b               ; row * 7
    add a, c
    and 31
    ld [hl], a
    push hl
    ld de, $0400
    add hl, de
    ld a, b
    xor c
    and 15
    add a, 16
    ld [hl], a
    pop hl
    inc hl
    inc c
    ld a, c
    cp 32
    jr nz, .cols
    inc b
    ld a, b
    cp 32
    jr nz, .rows
    ; $9000 block: the same tiles with every byte inverted
    ld hl, FontTiles
    ld de, $9000
    ld bc, PatternTilesEnd - FontTiles
.inv:
    ld a, [hl+]
    cpl
    ld [de], a
    inc de
    dec bc
    ld a, b
    or c
    jr nz, .inv
    ; self-check while the LCD is off
    ldh a, [rLY]
    ld b, a
    ld hl, LyText
    or a
    jp nz, Fail
    ldh a, [rSTAT]
    and 3
    ld b, a
    ld hl, StatText
    jp nz, Fail
    ld a, $E4
    ldh [rBGP], a
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, $91           ; LCD on, $8000 data, $9800 map, BG on
    ldh [rLCDC], a
    ld a, IE_VBLANK
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
    call ReportPass
Idle:
    halt
    jr Idle

Fail:
    call ReportFail
    jr Idle

VBlankHandler:
    push af
    push bc
    call ReadJoypad
    ldh a, [hFrame]
    inc a
    ldh [hFrame], a
    ld c, a
    ldh a, [rSCX]
    inc a
    ld b, a
    ldh a, [hButtons]
    bit 0, a            ; Right
    jr z, .noright
    inc b
    inc b
.noright:
    ld a, b
    ldh [rSCX], a
    ldh a, [rSCY]
    add a, 2
    ldh [rSCY], a
    ldh a, [hButtons]
    bit 4, a            ; A
    jr z, .noa
    ldh a, [rBGP]
    rlca
    rlca
    ldh [rBGP], a
.noa:
    ld a, c
    and 63
    jr nz, .done
    ldh a, [rLCDC]
    xor $08             ; BG map
    ld b, a
    ld a, c
    and 127
    ld a, b
    jr nz, .nodata
    xor $10             ; tile data
.nodata:
    ldh [rLCDC], a
.done:
    pop bc
    pop af
    reti

StatHandler:
    reti

LyText:
    db "LY while LCD off", 0
StatText:
    db "STAT mode while LCD off", 0
