; mealy_obj_en: our replica of Mealybug Tearoom m3_lcdc_obj_en_change (DMG).
; No LINE0_FIX in the original. Every line: LCDC.1 cleared at dot 104 from the
; mode-2 interrupt on lines 0-63 and at dot 108 on lines 64-143 (the handler
; takes a jr one M-cycle longer when LY >= 64), set again at dot 204 / 208. The
; object ruler (object k at Y = $10 + 8k, X = k, k = 0..17), tile $19 solid
; colour 1 here (the original's (R) logo is colour 1 too), OBP0 = $FF: every
; black pixel is an object pixel drawn; BGP = $E4 over a blank BG (white).
    title "MEALY OBJ EN"
    include "mealy_lib.inc"

Start:
    call MealyInit
    call MealyTile19            ; tile $19: colour 1 everywhere
    ld a, $19
    call MealyRuler
    call ReportPass
    call MealyIrqSetup
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, $FF
    ldh [rOBP0], a
    ld a, $E4
    ldh [rBGP], a
    ld a, $83                   ; LCD on, $8800 data, map $9800, 8x8 objects on, BG on
    ldh [rLCDC], a
    ld c, low(rLCDC)
    ei
    jp NopField

StatHandler:
    ldh a, [rLY]
    cp 64
    jr nc, .delay               ; 4 T more when LY >= 64
.delay:
    ld a, $81
    rept 7
    nop
    endr
    ldh [c], a                  ; dot 104 (LY < 64) / 108: objects off
VARIANT EQU 0
    if VARIANT == 0
    rept 20
    nop
    endr
    ld a, $83
    ldh [c], a                  ; dot 204 / 208: objects on
    else
    ld a, $83
    ldh [c], a                  ; dot 120 / 124: objects on
    rept 28
    nop
    endr
    ld a, $FF
    ldh [rBGP], a               ; dot 252 / 256: BGP black
    xor a
    ldh [rBGP], a               ; dot 264 / 268: BGP white
    endc
    BACK_TO_NOPS hl
