; mealy_obj_size: our replica of Mealybug Tearoom m3_lcdc_obj_size_change (DMG).
; No LINE0_FIX in the original. Every line: 14 NOPs, then LCDC.2 cleared (8x8),
; 3 NOPs, set, cleared, set: the writes land at dots 100, 124, 136 and 148 from
; the mode-2 interrupt (32 + the counted cycles). The same OAM as the original:
; 16-line bands k = 0..8 with objects at X = k, $10 + k and $20 + k (the last
; Y-flipped), Y = $10 + 16k, all tile $4C. Selected as 8x16 (LCDC.2 is set in
; mode 2), each object's two bitplane reads use the height LCDC.2 gives them:
; tile $4C is lo $FF / hi $00, tile $4D lo $00 / hi $FF, so on the half of the
; object where the heights name different tiles (rows 8-15; flipped: rows 0-7)
; the colour is (low read 8x8) + 2 * (high read 8x16): 1 = (8, 8),
; 2 = (16, 16), 3 = (8, 16), 0 = (16, 8). BGP = 0 (the BG white), OBP0 = $E4.
    title "MEALY OBJ SIZE"
    include "mealy_lib.inc"

    include "mealy_obj_size.inc"

StatHandler:
    rept 14
    nop
    endr
    ld a, d
    ldh [c], a                  ; dot 100: 8x8
    nop
    nop
    nop
    ld a, b
    ldh [c], a                  ; dot 124: 8x16
    ld a, d
    ldh [c], a                  ; dot 136: 8x8
    ld a, b
    ldh [c], a                  ; dot 148: 8x16
    BACK_TO_NOPS hl

ObjTable:
    db $10, $00, $4C, 0
    db $20, $01, $4C, 0
    db $30, $02, $4C, 0
    db $40, $03, $4C, 0
    db $50, $04, $4C, 0
    db $60, $05, $4C, 0
    db $70, $06, $4C, 0
    db $80, $07, $4C, 0
    db $90, $08, $4C, 0
    db $10, $10, $4C, 0
    db $20, $11, $4C, 0
    db $30, $12, $4C, 0
    db $40, $13, $4C, 0
    db $50, $14, $4C, 0
    db $60, $15, $4C, 0
    db $70, $16, $4C, 0
    db $80, $17, $4C, 0
    db $90, $18, $4C, 0
    db $10, $20, $4C, $40
    db $20, $21, $4C, $40
    db $30, $22, $4C, $40
    db $40, $23, $4C, $40
    db $50, $24, $4C, $40
    db $60, $25, $4C, $40
    db $70, $26, $4C, $40
    db $80, $27, $4C, $40
    db $90, $28, $4C, $40
ObjTableEnd:
