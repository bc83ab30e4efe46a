; mealy_scy: our replica of Mealybug Tearoom m3_scy_change (DMG).
; Every line: LINE0_FIX, 2 NOPs, then SCY written 24 times back to back
; (ld [hl], r: one write every 8 T), values 0 1 2 3 4 3 2 1 0 1 ... 1: the writes
; land at dots 80, 88, ..., 264 from the mode-2 interrupt. Map row r, column c
; holds tile 65 + r + c (as the original's); tile t's row j is lo = hi =
; (t & 31) << 3 | j ($8000 data), so each tile of the frame reads out the tile
; number (its map row) and the row inside the tile that each bitplane read used:
; which SCY the tile-number read (B) and the two bitplane reads saw. The ruler's
; objects use tile 0, blank (as the original's).
    title "MEALY SCY"
    include "mealy_lib.inc"

Start:
    call MealyInit
    ld hl, $8000 + 16 * 65      ; tiles 65..127
    ld b, 65
.tile:
    ld c, 0
.row:
    ld a, b
    and 31
    add a, a
    add a, a
    add a, a
    or c
    ld [hl+], a
    ld [hl+], a
    inc c
    ld a, c
    cp 8
    jr nz, .row
    inc b
    bit 7, b
    jr z, .tile
    ld hl, $9800                ; map: row r, column c -> 65 + r + c
    ld b, 65
.mrow:
    ld c, 32
    ld a, b
.mcol:
    ld [hl+], a
    inc a
    dec c
    jr nz, .mcol
    inc b
    bit 2, h                    ; $9C00: done
    jr z, .mrow
    xor a
    call MealyRuler
    call ReportPass
    call MealyIrqSetup
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, $E4
    ldh [rBGP], a
    ldh [rOBP0], a
    ld a, $93                   ; LCD on, $8000 data, map $9800, 8x8 objects on, BG on
    ldh [rLCDC], a
    ld hl, rSCY
    ld bc, $0102
    ld de, $0304
    ei
    jp NopField

StatHandler:
    LINE0_FIX
    nop
    nop
    xor a
    ld [hl], a                  ; dot 80: 0
    ld [hl], b
    ld [hl], c
    ld [hl], d
    ld [hl], e
    ld [hl], d
    ld [hl], c
    ld [hl], b
    ld [hl], a                  ; dot 144: 0
    ld [hl], b
    ld [hl], c
    ld [hl], d
    ld [hl], e
    ld [hl], d
    ld [hl], c
    ld [hl], b
    ld [hl], a                  ; dot 208: 0
    ld [hl], b
    ld [hl], c
    ld [hl], d
    ld [hl], e
    ld [hl], d
    ld [hl], c
    ld [hl], b                  ; dot 264: 1
    pop de
    ld de, NopField
    push de
    ld de, $0304
    reti
