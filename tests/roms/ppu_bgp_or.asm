; ppu_bgp_or: BGP written at seven counted dots of every line, from a mode-2 STAT interrupt
; taken out of a field of NOPs (the measurement of Mealybug Tearoom's m3_bgp_change, our code).
; VRAM is all zeroes, so every pixel is colour 0 and the frame is BGP bits 1:0 sampled once per
; pixel. From the interrupt (20 T dispatch + the 12 T jump's end... see the dot column), the
; writes land at dots 80, 96, 108, 168, 180, 240 and 252 of each line, with B = swap(LY):
; B, B + 1, B, B + 2, B, B - 1, B. On the DMG each edge shows at x = dot - 95, its first pixel
; drawn with old | new (tests/test_ppu_mode3_writes.py).
    title "BGP OR"
    include "mealy_lib.inc"

Start:
    call MealyInit              ; all tiles and both maps zero: colour 0 everywhere
    ld hl, $FE00                ; no objects (the LCD is off: OAM is writable)
    ld bc, 160
    ld d, $FF
    call MemFill
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    call ReportPass
    call MealyIrqSetup
    ld a, $83                   ; LCD on, BG on, objects on
    ldh [rLCDC], a
    ld c, low(rBGP)
    ei
    jp NopField

StatHandler:                    ; dot 32 after the request is taken
    ldh a, [rLY]
    and a
    jr nz, .line                ; 4 T less on line 0: its request comes 4 T later (DMG)
.line:
    swap a                      ; B
    ld b, a
    ldh [c], a                  ; dot 80: B
    inc a
    nop
    ldh [c], a                  ; dot 96: B + 1
    ld a, b
    ldh [c], a                  ; dot 108: B
    rept 10
    nop
    endr
    ld a, b
    inc a
    inc a
    ldh [c], a                  ; dot 168: B + 2
    ld a, b
    ldh [c], a                  ; dot 180: B
    rept 11
    nop
    endr
    ld a, b
    dec a
    ldh [c], a                  ; dot 240: B - 1
    ld a, b
    ldh [c], a                  ; dot 252: B
    BACK_TO_NOPS de