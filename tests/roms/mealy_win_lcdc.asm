; mealy_win_lcdc: one LCDC bit set for 8 T during mode 3 while the window covers the line,
; with the cycle counts of Mealybug Tearoom's m3_lcdc_win_map_change (MW_BIT = $40, the
; window map) and m3_lcdc_tile_sel_win_change (MW_BIT = $10, the tile data) (our own code and
; scene; the timing and the object ruler are theirs). The CPU idles in a field of NOPs; the
; mode-2 STAT interrupt's handler starts 32 T after it, spends 28 T reading LY (24 on line 0:
; the DMG's line-0 interrupt comes 4 T later), 9 NOPs, sets the bit at 104 T and clears it
; at 112 (MW_LATE NOPs later: a control).
; Scene: LCDC $A3 (window map $9800, window on, tiles $8800, BG map $9800, objects 8x8 on),
; WY = 0, WX = 7: the window from x = 0 on every line. Map $9800 all tile 0, white (colour 0,
; at $9000); MW_BIT = $40: map $9C00 all tile 1, black (at $9010); MW_BIT = $10: map $9C00
; all tile 0 and tile 0 at $8000 black. Objects: 18, the k-th at Y = 16 + 8k, X = k (lines
; 8k..8k+7, screen x = k - 8), tile 28 (solid border square), OBP0 $FF. BGP $E4.
; Checked in tests/test_ppu_mealybug_window.py (the window map: per band, the documented table;
; the tile data: line 0 only, no documented fact pins the rest).
    title "MEALY WIN LCDC"
    include "mealy_lib.inc"

MW_BIT EQU $40
MW_LATE EQU 0               ; NOPs more before the pulse (4 T each)

Start:
    call Init
    ld hl, $9800
    ld bc, $0400
    ld d, 0
    call MemFill
    ld hl, $9C00
    ld bc, $0400
    if MW_BIT == $40
    ld d, 1
    else
    ld d, 0
    endc
    call MemFill
    ld hl, $9000                ; tile 0 white, tile 1 black (LCDC.4 = 0)
    ld bc, 16
    ld d, 0
    call MemFill
    ld hl, $9010
    ld bc, 16
    ld d, $FF
    call MemFill
    if MW_BIT == $10
    ld hl, $8000                ; tile 0 black with LCDC.4 = 1
    ld bc, 16
    ld d, $FF
    call MemFill
    endc
    ld hl, wShadowOam           ; the ruler: Y = 16 + 8k, X = k
    ld b, 0
.obj:
    ld a, b
    add a, a
    add a, a
    add a, a
    add a, 16
    ld [hl+], a
    ld a, b
    ld [hl+], a
    ld a, 28
    ld [hl+], a
    xor a
    ld [hl+], a
    inc b
    ld a, b
    cp 18
    jr nz, .obj
    call RunDma
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ldh [rWY], a
    ld a, 7
    ldh [rWX], a
    ld a, $FF
    ldh [rOBP0], a
    ld a, $E4
    ldh [rBGP], a
    call ReportPass
    call MealyIrqSetup
    ld b, $A3
    ld c, $A3 | MW_BIT
    ld hl, rLCDC
    ld [hl], b
    ei
    jp NopField

StatHandler:                    ; 32 T after the interrupt (dispatch 20, jp 12 as counted)
    ldh a, [rLY]                ; 28 T, 24 on line 0
    and a
    jr nz, .same
.same:
    rept 9 + MW_LATE
    nop
    endr
    ld [hl], c                  ; the bit set at 104
    ld [hl], b                  ; cleared at 112
    BACK_TO_NOPS de