; lcd_off_stat.asm - STAT while the LCD is off (LCDC bit 7 = 0).
;   The mode bits read 0 (Pan Docs, STAT: "Reports 0 instead when the PPU is
;   disabled"); LY reads 0.  The LY=LYC comparator stops with the PPU, so the
;   LYC=LY flag (bit 2) keeps the value it had when the LCD went off instead of
;   comparing LY=0 with LYC (DMG behaviour that gambatte models; Mr. Do! waits
;   on that latched flag with the LCD off).
;   Off at LY=144 with LYC=0: flag 0 (STAT & 7 = 0) although LY(0) = LYC.
;   Off at LY=144 with LYC=144: flag 1 (STAT & 7 = 4) although LY(0) != LYC.

    title "LCD_OFF_STAT"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    xor a
    ldh [rLYC], a
    call lcd_off                ; at LY = 144
    ldh a, [rLY]
    ld b, 0
    ld hl, s_ly
    call expect
    ldh a, [rSTAT]
    and $07
    ld b, $00
    ld hl, s_lyc0
    call expect

    ld a, 144
    ldh [rLYC], a
    ld a, $91
    ldh [rLCDC], a              ; on again
    call lcd_off                ; at LY = 144 = LYC: flag set when it stops
    ldh a, [rSTAT]
    and $07
    ld b, $04
    ld hl, s_lyc144
    call expect
    xor a
    ldh [rLYC], a
    ld a, $91
    ldh [rLCDC], a
    jp finish

s_ly:     db "LY with the LCD off", 0
s_lyc0:   db "STAT&7 LCD off at LY 144, LYC 0", 0
s_lyc144: db "STAT&7 LCD off at LY 144, LYC 144", 0
