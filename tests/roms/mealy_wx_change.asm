; mealy_wx_change: WX rewritten from a mode-2 STAT interrupt, with the cycle counts of
; Mealybug Tearoom's m3_wx_4_change, m3_wx_5_change, m3_wx_6_change and
; m3_wx_4_change_sprites (our own code and scene; the timing is theirs).
; The CPU idles in a field of NOPs, so the mode-2 interrupt is taken without jitter; the
; vector jumps to StatHandler, which counts from the interrupt: WX = MW_WX0 (in mode 2),
; LY is read, WX = LY (about as the line's first pixels go out), then WX = 80 (mid-line),
; and the handler returns to the top of the NOP field. WY = 4, SCX = 0, LCDC $F3.
; Scene (MW_SPRITES = 0): BG map $9800 all font digit B (tile 11); window map $9C00
; MW_WTILE (-1: font digit col mod 16 in every row, as the _4 ROM's "ABC..." rows;
; else that tile everywhere). BGP $E4, OBP0 $FF, no objects.
; MW_SPRITES = 1 (the _sprites ROM): every tile at $8000-$8FFF solid colour 3, BGP $1B
; (so BG and window are white and a colour-0 pixel black), OBP0 $55, ten objects on
; lines 16-23 at X = 8..80 step 8 and ten with the BG-over-OBJ bit on lines 32-39.
; Checked in tests/test_ppu_mealybug_window.py.
    title "MEALY WX"
    include "mealy_lib.inc"

MW_WX0     EQU 4        ; the value written in mode 2
MW_LDB     EQU 1        ; 1: a 4-T `ld b, a` after loading it (the _4 ROMs), 0: none (_5, _6)
MW_NOPS    EQU 5        ; NOPs between the LY read and WX = LY (5 for _4, 6 for _5/_6)
MW_SPRITES EQU 0
MW_C       EQU low(rWX)  ; the register written (low(rBGP): a probe of where the writes land)

Start:
    call Init
    ld hl, $9800
    ld bc, $0400
    ld d, 11
    call MemFill
    ld hl, $9C00                ; window map: rows of tile 35 and 36 in turn (tiles at $8230)
    call MealyWindowTiles
    if MW_SPRITES
    ld hl, $8000
    ld bc, $1000
    ld d, $FF
    call MemFill
    ld hl, ObjTable
    ld de, wShadowOam
    ld bc, ObjTableEnd - ObjTable
    call MemCopy
    call RunDma
    ld a, $55
    ldh [rOBP0], a
    ld a, $1B
    ldh [rBGP], a
    else
    ld a, $FF
    ldh [rOBP0], a
    ld a, $E4
    ldh [rBGP], a
    endc
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, 4
    ldh [rWY], a
    ld a, 80
    ldh [rWX], a
    call ReportPass
    call MealyIrqSetup
    ld a, $F3
    ldh [rLCDC], a
    ld c, MW_C
    ei
    jp NopField

StatHandler:                    ; 32 T after the interrupt (dispatch 20, jp 12 as counted)
    ld a, MW_WX0
    if MW_LDB
    ld b, a
    endc
    ldh [c], a                  ; WX = MW_WX0 at 52 (48 without ld b, a)
    ldh a, [rLY]
    rept MW_NOPS
    nop
    endr
    ldh [c], a                  ; WX = LY at 92
    rept 20
    nop
    endr
    ld a, 80
    ldh [c], a                  ; WX = 80 at 188
    BACK_TO_NOPS de

ObjTable:
    db $20, $08, 0, $00
    db $20, $10, 0, $00
    db $20, $18, 0, $00
    db $20, $20, 0, $00
    db $20, $28, 0, $00
    db $20, $30, 0, $00
    db $20, $38, 0, $00
    db $20, $40, 0, $00
    db $20, $48, 0, $00
    db $20, $50, 0, $00
    db $30, $08, 0, $80
    db $30, $10, 0, $80
    db $30, $18, 0, $80
    db $30, $20, 0, $80
    db $30, $28, 0, $80
    db $30, $30, 0, $80
    db $30, $38, 0, $80
    db $30, $40, 0, $80
    db $30, $48, 0, $80
    db $30, $50, 0, $80
ObjTableEnd:

    include "mealy_win.inc"
