; mealy_obj_size_scx: our replica of Mealybug Tearoom m3_lcdc_obj_size_change_scx
; (DMG). No LINE0_FIX in the original. Every line: SCX = (LY >> 4) & 7 (written
; at dot 72, in mode 2), 6 NOPs, then LCDC.2 cleared (8x8), 1 NOP, set, cleared,
; set: the writes land at dots 108, 124, 136 and 148 from the mode-2 interrupt
; (32 + the counted cycles). The same OAM as the original: 16-line bands
; k = 0..8, each with an object at X = $0C and a Y-flipped one at X = $20,
; Y = $10 + 16k, all tile $4C. Selected as 8x16 (LCDC.2 is set in
; mode 2), each object's two bitplane reads use the height LCDC.2 gives them:
; tile $4C is lo $FF / hi $00, tile $4D lo $00 / hi $FF, so on the half of the
; object where the heights name different tiles (rows 8-15; flipped: rows 0-7)
; the colour is (low read 8x8) + 2 * (high read 8x16): 1 = (8, 8),
; 2 = (16, 16), 3 = (8, 16), 0 = (16, 8). BGP = 0 (the BG white), OBP0 = $E4.
    title "MEALY OBJ SCX"
    include "mealy_lib.inc"

    include "mealy_obj_size.inc"

StatHandler:
    ldh a, [rLY]
    swap a
    and 7
    ldh [rSCX], a               ; dot 72: SCX = (LY >> 4) & 7
    rept 6
    nop
    endr
    ld a, d
    ldh [c], a                  ; dot 108: 8x8
    nop
    ld a, b
    ldh [c], a                  ; dot 124: 8x16
    ld a, d
    ldh [c], a                  ; dot 136: 8x8
    ld a, b
    ldh [c], a                  ; dot 148: 8x16
    BACK_TO_NOPS hl

ObjTable:
    db $10, $0C, $4C, 0
    db $20, $0C, $4C, 0
    db $30, $0C, $4C, 0
    db $40, $0C, $4C, 0
    db $50, $0C, $4C, 0
    db $60, $0C, $4C, 0
    db $70, $0C, $4C, 0
    db $80, $0C, $4C, 0
    db $90, $0C, $4C, 0
    db $10, $20, $4C, $40
    db $20, $20, $4C, $40
    db $30, $20, $4C, $40
    db $40, $20, $4C, $40
    db $50, $20, $4C, $40
    db $60, $20, $4C, $40
    db $70, $20, $4C, $40
    db $80, $20, $4C, $40
    db $90, $20, $4C, $40
ObjTableEnd:
