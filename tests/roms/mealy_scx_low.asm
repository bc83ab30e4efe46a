; mealy_scx_low: our replica of Mealybug Tearoom m3_scx_low_3_bits (DMG): how late an SCX write
; can land and still set the line's fine scroll. The original enters its handler through a 4 T
; `jp hl` vector and writes SCX = 2 at dot 88 after the mode-2 interrupt on lines 72-143 and at
; dot 92 on lines 0-71 (a jr taken one M-cycle longer there; no line-0 fix), counted from the
; handler's start at 24 (20 T of dispatch + the 4 T jp). Our vector is a 16 T `jp nn` (12 T
; more), so this handler spends 12 T less before that write: it lands on the same dots.
; SCX = 0 is written again in HBlank. Scene: the BG map's column 19 (x = 152..159 unscrolled) holds a solid
; tile (black with BGP $FC), the rest blank (white). Checked in tests/test_ppu_mealybug_replicas.py.
    title "MEALY SCX LOW"
    include "mealy_lib.inc"

Start:
    call MealyInit
    call MealyTile19            ; tile $19: colour 1 everywhere
    ld hl, $9800 + 19           ; map column 19: tile $19 (the rest tile 0, blank)
    ld de, 32
    ld b, 32
.col:
    ld a, $19
    ld [hl], a
    add hl, de
    dec b
    jr nz, .col
    call ReportPass
    call MealyIrqSetup
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, $FC
    ldh [rBGP], a
    ld a, $91                   ; LCD on, $8000 data, map $9800, BG on
    ldh [rLCDC], a
    ld c, low(rSCX)
    ei
    jp NopField

StatHandler:                    ; 12 T later than the original's (its `jp hl` takes 4 T)
    ldh a, [rLY]
    cp $48
    jr c, .late                 ; 4 T more on lines 0-71
.late:
    nop
    nop
    ld a, 2
    ldh [c], a                  ; dot 88 (LY >= 72) / 92 (LY < 72): SCX = 2
    rept 50
    nop
    endr
    xor a
    ldh [c], a                  ; SCX = 0 again, in HBlank (the original writes it in mode 2,
    BACK_TO_NOPS de             ; which our longer vector leaves no time for)
