; mealy_bgp: our replica of Mealybug Tearoom m3_bgp_change (DMG).
; VRAM is all zero and no object is on screen, so every pixel is colour 0 and
; the frame is BGP bits 1-0 as each pixel was drawn. Every line (b = LY with its
; nibbles swapped, so colour 0's shade steps every 16 lines) writes BGP seven
; times, completing 80, 96, 108, 168, 180, 240 and 252 T after the mode-2
; interrupt: b, b + 1, b, b + 2, b, b - 1, b.
    title "MEALY BGP"
    include "mealy_lib.inc"

Start:
    call MealyInit
    call ReportPass
    call MealyIrqSetup
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, $83                   ; LCD on, $8800 data, map $9800, objects on, BG on
    ldh [rLCDC], a
    ld c, low(rBGP)
    ei
    jp NopField

StatHandler:
    LINE0_FIX                   ; 32 + 28 = 60 T (a = LY)
    swap a                      ; 68
    ld b, a                     ; 72
    ldh [c], a                  ; 80: b
    inc a                       ; 84
    nop                         ; 88
    ldh [c], a                  ; 96: b + 1
    ld a, b                     ; 100
    ldh [c], a                  ; 108: b
    rept 10
    nop
    endr                        ; 148
    ld a, b
    inc a
    inc a                       ; 160
    ldh [c], a                  ; 168: b + 2
    ld a, b
    ldh [c], a                  ; 180: b
    rept 11
    nop
    endr                        ; 224
    ld a, b
    dec a                       ; 232
    ldh [c], a                  ; 240: b - 1
    ld a, b
    ldh [c], a                  ; 252: b
    BACK_TO_NOPS
