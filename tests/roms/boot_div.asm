; boot_div.asm - DIV's value and phase after the boot ROM (DMG).
;
; DIV is the upper byte of the 16-bit system counter the boot ROM leaves running
; (Pan Docs, Timer and Divider Registers; Power Up Sequence). mooneye-gb's
; boot_div-dmgABCmgb (verified on DMG ABC and MGB) reads DIV 13 M-cycles after $0100,
; just after it has stepped to $AC, then five more times 64, 63, 64, 64 and 65 M-cycles
; apart (a DIV step is 64 M-cycles): $AC, $AD, $AD, $AE, $AF, $B1 - the 63 moves the
; read from just after a step to just before one, the 65 back. The code from $0100 to
; the last read below is timed the same; the values are pushed, checked afterwards.
; Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "BOOT DIV"
    include "testlib_defs.inc"

    org $0100
    nop
    jp main                     ; (4 M-cycles wherever main is)

    org $0150
    include "testlib_body.inc"

main:
    rept 6
    nop
    endr
    ldh a, [rDIV]               ; 13 M-cycles after $0100
    push af
    rept 57
    nop
    endr
    ldh a, [rDIV]               ; + 64
    push af
    rept 56
    nop
    endr
    ldh a, [rDIV]               ; + 63
    push af
    rept 57
    nop
    endr
    ldh a, [rDIV]               ; + 64
    push af
    rept 57
    nop
    endr
    ldh a, [rDIV]               ; + 64
    push af
    rept 58
    nop
    endr
    ldh a, [rDIV]               ; + 65
    push af
    ld hl, SCRATCH + 5          ; the six readings, last first
    ld b, 6
.save:
    pop af
    ld [hl-], a
    dec b
    jr nz, .save
    ld sp, STACK_TOP
    call lib_init
    ld de, 0
.check:
    ld hl, SCRATCH
    add hl, de
    ld a, [hl]
    ld hl, expected
    add hl, de
    ld b, [hl]
    ld hl, names
    add hl, de
    add hl, de
    push af
    ld a, [hl+]
    ld h, [hl]
    ld l, a
    pop af
    call expect
    inc e
    ld a, e
    cp 6
    jr nz, .check
    jp finish

expected: db $AC, $AD, $AD, $AE, $AF, $B1
names:    dw s_1, s_2, s_3, s_4, s_5, s_6

s_1: db "DIV 13 M after $0100", 0
s_2: db "DIV +64 M", 0
s_3: db "DIV +63 M", 0
s_4: db "DIV +64 M again", 0
s_5: db "DIV +64 M, third", 0
s_6: db "DIV +65 M", 0
