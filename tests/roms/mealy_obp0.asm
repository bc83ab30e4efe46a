; mealy_obp0: our replica of Mealybug Tearoom m3_obp0_change (DMG).
; No LINE0_FIX in the original. Every line: OBP0 = $04 at dot 52 (mode 2), then
; OBP0 = $0C at dot 108 from the mode-2 interrupt. Objects: k = 0..18 at
; Y = $08 + 8k, X = k (object 0 off screen), so the 8-line band b has one object
; at X = b + 1. Tile $19 solid colour 1 here (the original's (R) logo is colour
; 1 too): shade 1 under $04, 3 under $0C (and under $04 | $0C). BGP = $E4 over a
; blank BG (white).
    title "MEALY OBP0"
    include "mealy_lib.inc"

Start:
    call MealyInit
    call MealyTile19            ; tile $19: colour 1 everywhere
    ld hl, wShadowOam           ; object k: Y = 8 + 8k, X = k, tile $19
    ld b, 8
    ld c, 0
.obj:
    ld a, b
    ld [hl+], a
    ld a, c
    ld [hl+], a
    ld a, $19
    ld [hl+], a
    xor a
    ld [hl+], a
    ld a, b
    add a, 8
    ld b, a
    inc c
    ld a, c
    cp 19
    jr nz, .obj
    call RunDma
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
    ld c, low(rOBP0)
    ei
    jp NopField

StatHandler:
    ld a, $04
    ld b, a
    ldh [c], a                  ; dot 52 (mode 2): OBP0 = $04
    ld a, $0C
    rept 10
    nop
    endr
    ldh [c], a                  ; dot 108: OBP0 = $0C
    BACK_TO_NOPS hl
