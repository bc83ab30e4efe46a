; ppu_bgp_or_objs: BGP written at six counted dots of every line (values 1, 3, 1, 3, 1, 0, 1), from
; a mode-2 STAT interrupt taken out of a field of NOPs, with one object per band of 8 lines at
; X = band + 1 (its fetch stops the pixels at a different phase of the writes in each band): the
; measurement of Mealybug Tearoom's m3_bgp_change_sprites, our code. Objects use OBP0 = 0.
; Checked against gambatte and the DMG's transition pixel (tests/test_ppu_mode3_writes.py).
    title "BGP OR OBJ"
    include "mealy_lib.inc"

Start:
    call MealyInit              ; all tiles and both maps zero but tile $19
    ld hl, RingTile
    ld de, $8190
    ld bc, 16
    call MemCopy
    ld hl, $9813                ; a column of tile $19 at x = 152..159
    ld de, 32
    ld b, 32
.col:
    ld [hl], $19
    add hl, de
    dec b
    jr nz, .col
    ld hl, $FE00                ; no objects but the ruler (the LCD is off: OAM is writable)
    ld bc, 160
    ld d, 0
    call MemFill
    ld hl, $FE00
    ld b, 1                     ; object k: Y = 8 + 8k (lines 8k - 8 .. 8k - 1), X = k
.obj:
    ld a, b
    add a, a
    add a, a
    add a, a
    add a, 8
    ld [hl+], a
    ld a, b
    ld [hl+], a
    ld a, $19
    ld [hl+], a
    xor a
    ld [hl+], a
    inc b
    ld a, b
    cp 19
    jr nz, .obj
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ldh [rOBP0], a
    ld a, $E4
    ldh [rBGP], a
    call ReportPass
    call MealyIrqSetup
    ld a, $93                   ; LCD on, tiles at $8000, objects on, BG on
    ldh [rLCDC], a
    ld c, low(rBGP)
    ei
    jp NopField

StatHandler:                    ; dot 32 after the request is taken
    ld a, 1
    ld b, a
    ldh [c], a                  ; dot 52: 1
    ldh a, [rLY]
    and a
    jr nz, .line                ; 4 T less on line 0: its request comes 4 T later (DMG)
.line:
    ld a, 3
    nop
    ldh [c], a                  ; dot 100: 3
    ld a, b
    ldh [c], a                  ; dot 112: 1
    rept 5
    nop
    endr
    ld a, b
    inc a
    inc a
    ldh [c], a                  ; dot 152: 3
    ld a, b
    ldh [c], a                  ; dot 164: 1
    rept 4
    nop
    endr
    ld a, b
    dec a
    ldh [c], a                  ; dot 196: 0
    ld a, b
    ldh [c], a                  ; dot 208: 1
    BACK_TO_NOPS de

RingTile:                       ; a ring, colours 1-3
    db $3C, $3C, $42, $7E, $81, $FF, $81, $C3, $81, $C3, $81, $FF, $42, $7E, $3C, $3C
