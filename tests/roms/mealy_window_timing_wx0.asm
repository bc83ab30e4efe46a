; mealy_window_timing_wx0: our replica of Mealybug Tearoom
; m3_window_timing_wx_0 (DMG). WX = 0 and WY = 0 throughout; every line writes
; SCX = LY as mode 3 begins (early enough for the fine scroll, SCX mod 8, to
; apply to that line), then BGP $00 and, 20 T later, BGP $FF. Window (tile 1,
; colour 3) and BG (tile 0, colour 1) are white before the last write and black
; after it: the first black pixel counts the dots spent before it landed.
    title "MEALY WIN WX0"
    include "mealy_lib.inc"

Start:
    call MealyInit
    ld hl, $9C00
    ld bc, $0400
    ld d, 1
    call MemFill
    ld hl, $9000
    ld c, 8
.tile0:
    ld a, $FF
    ld [hl+], a
    xor a
    ld [hl+], a
    dec c
    jr nz, .tile0
    ld hl, $9010
    ld bc, 16
    ld d, $FF
    call MemFill
    call ReportPass
    call MealyIrqSetup
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, $E1
    ldh [rLCDC], a
    xor a
    ldh [rWX], a
    ldh [rWY], a
    ld hl, rBGP
    ld b, $00
    ld c, $FF
    ld [hl], b
    ei
    jp NopField

StatHandler:
    LINE0_FIX
    ldh a, [rLY]
    ldh [rSCX], a
    ld [hl], b
    nop
    nop
    nop
    ld [hl], c
    BACK_TO_NOPS de