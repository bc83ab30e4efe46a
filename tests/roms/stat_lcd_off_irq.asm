; stat_lcd_off_irq.asm - STAT interrupt requests around switching the LCD off, DMG (the
; expected values of SameSuite's ppu/stat_lcd_off, which it lists for the DMG; Pan Docs,
; STAT and LCDC bit 7).
;   In VBlank with the LCD on, writing STAT on the DMG acts as if $FF were written for one
;   cycle: the mode 1 source is high, so the write requests a STAT interrupt (IF = $E2).
;   Switching the LCD off requests nothing (STAT then reports mode 0, but no mode 0
;   interrupt). With the LCD off LY reads 0, and nothing requests a STAT interrupt: a STAT
;   write enabling LYC (no match), LYC written to match LY, STAT enabling mode 1, STAT = $FF.

    title "STAT_LCD_OFF_IRQ"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    xor a
    ldh [rIE], a
.vblank:
    ldh a, [rLY]
    cp 144
    jr nz, .vblank
    xor a
    ldh [rIF], a
    ld a, $08                   ; mode 0 source only
    ldh [rSTAT], a
    ldh a, [rIF]
    ld b, $E2
    ld hl, s_write_bug
    call expect

    xor a
    ldh [rIF], a
    ldh [rLCDC], a              ; LCD off (in VBlank)
    ldh a, [rIF]
    ld b, $E0
    ld hl, s_lcd_off
    call expect
    ldh a, [rLY]
    ld b, 0
    ld hl, s_ly
    call expect

    ld a, 1
    ldh [rLYC], a               ; (no match)
    xor a
    ldh [rIF], a
    ld a, $40
    ldh [rSTAT], a
    ldh a, [rIF]
    ld b, $E0
    ld hl, s_stat_lyc
    call expect

    xor a
    ldh [rIF], a
    ldh [rLYC], a               ; LYC = LY = 0
    ldh a, [rIF]
    ld b, $E0
    ld hl, s_lyc_match
    call expect

    xor a
    ldh [rIF], a
    ld a, $10
    ldh [rSTAT], a
    ldh a, [rIF]
    ld b, $E0
    ld hl, s_stat_mode1
    call expect

    xor a
    ldh [rIF], a
    ld a, $FF
    ldh [rSTAT], a
    ldh a, [rIF]
    ld b, $E0
    ld hl, s_stat_ff
    call expect
    jp finish

s_write_bug:  db "IF after STAT write in VBlank", 0
s_lcd_off:    db "IF after LCD off", 0
s_ly:         db "LY with LCD off", 0
s_stat_lyc:   db "IF after STAT=40, LCD off", 0
s_lyc_match:  db "IF after LYC=LY, LCD off", 0
s_stat_mode1: db "IF after STAT=10, LCD off", 0
s_stat_ff:    db "IF after STAT=FF, LCD off", 0
