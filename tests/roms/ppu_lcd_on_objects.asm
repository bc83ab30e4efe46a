; ppu_lcd_on_objects.asm - objects on the first line after the LCD is switched on (DMG).
;
; Pan Docs (LCDC.7, STAT): the first line after the LCD is switched on has no OAM scan,
; so no object is selected on it and its mode 3 is as long as with no objects at all:
; read by "ldh a, [STAT]" N NOPs after the LCDC write, mode 3 until N = 59 and mode 0 from
; N = 60 ($87 / $84: LY = LYC = 0), as mooneye-gb's lcdon_timing-GS has it with objects off.
; SameBoy selects no object on that line (n_visible_objs = 0) and gambatte draws it so.
; Line 1 has its OAM scan: one object at X = 32 on it lengthens mode 3 to N = 175 ($83),
; mode 0 from N = 176 ($80) - docboy-test-suite's DMG pixel_transfer_timing_1_sprite_x32
; _scx0 rounds, made the same way.
; Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "PPU LCDON OBJS"
    include "testlib.asm"

; stat_after N, EXP, NAME: LCD off at VBlank, on with BG and objects, N NOPs, then STAT
; must read EXP.
MACRO stat_after
    call lcd_off
    ld a, $83
    ldh [rLCDC], a
    rept \1
    nop
    endr
    ldh a, [rSTAT]
    ld b, \2
    ld hl, \3
    call expect
ENDM

main:
    ld sp, STACK_TOP
    call lib_init
    di
    call lcd_off
    ld hl, $FE00                ; OAM: one object at Y = 16 (lines 0-7), X = 32
    ld a, $10
    ld [hl+], a
    ld a, $20
    ld [hl+], a
    xor a
    ld b, 158
.clear:
    ld [hl+], a
    dec b
    jr nz, .clear
    xor a
    ldh [rSCX], a
    ldh [rLYC], a

    stat_after 59, $87, s_l0_m3
    stat_after 60, $84, s_l0_m0
    stat_after 175, $83, s_l1_m3
    stat_after 176, $80, s_l1_m0

    ld hl, $FE04                ; nine more objects on lines 0-7: line 0 still has none
    ld b, 9
    ld c, 8
.more:
    ld a, $10
    ld [hl+], a
    ld a, c
    ld [hl+], a
    add 16
    ld c, a
    xor a
    ld [hl+], a
    ld [hl+], a
    dec b
    jr nz, .more
    stat_after 59, $87, s_l0_10_m3
    stat_after 60, $84, s_l0_10_m0

    call lcd_off
    jp finish

s_l0_m3:    db "LCD-on line, 1 object: STAT 59 NOPs after", 0
s_l0_m0:    db "LCD-on line, 1 object: STAT 60 NOPs after", 0
s_l1_m3:    db "line 1, object X=32: STAT 175 NOPs after", 0
s_l1_m0:    db "line 1, object X=32: STAT 176 NOPs after", 0
s_l0_10_m3: db "LCD-on line, 10 objects: STAT 59 NOPs after", 0
s_l0_10_m0: db "LCD-on line, 10 objects: STAT 60 NOPs after", 0
