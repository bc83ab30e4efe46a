; mealy_window_timing: our replica of Mealybug Tearoom m3_window_timing (DMG).
; Every line: WX = LY written as mode 3 begins, then BGP $00 (all white) and,
; 12 T later, BGP $FF (all black). The BG (map $9800, tile 0: colour 1) and
; the window (map $9C00, tile 1: colour 3, WY = 0) are both white before the
; second write and black after it, so the first black pixel of a line counts
; the dots spent before the write landed, including the window's start-up
; fetch when the window starts left of it.
    title "MEALY WIN TIMING"
    include "mealy_lib.inc"

Start:
    call MealyInit
    ld hl, $9C00                ; window map: tile 1
    ld bc, $0400
    ld d, 1
    call MemFill
    ld hl, $9000                ; tile 0 ($8800 data): colour 1
    ld c, 8
.tile0:
    ld a, $FF
    ld [hl+], a
    xor a
    ld [hl+], a
    dec c
    jr nz, .tile0
    ld hl, $9010                ; tile 1: colour 3
    ld bc, 16
    ld d, $FF
    call MemFill
    call ReportPass
    call MealyIrqSetup
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, $E1                   ; LCD on, window map $9C00, window on, $8800 data, BG on
    ldh [rLCDC], a
    ld a, 7
    ldh [rWX], a
    xor a
    ldh [rWY], a
    ld a, $E4
    ldh [rOBP0], a
    ld hl, rBGP
    ld b, $00
    ld c, $FF
    ld [hl], b
    ei
    jp NopField

StatHandler:
    LINE0_FIX
    ldh a, [rLY]
    ldh [rWX], a
    ld [hl], b
    nop
    ld [hl], c
    BACK_TO_NOPS de