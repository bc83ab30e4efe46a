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

; div_read_after N: N NOPs, then DIV read and pushed (N + 7 M-cycles in all)
MACRO div_read_after
    rept \1
    nop
    endr
    ldh a, [rDIV]
    push af
ENDM

main:
    div_read_after 6            ; 13 M-cycles after $0100
    div_read_after 57           ; + 64
    div_read_after 56           ; + 63
    div_read_after 57           ; + 64
    div_read_after 57           ; + 64
    div_read_after 58           ; + 65
    ld hl, SCRATCH + 5          ; the six readings, last first
    ld b, 6
.save:
    pop af
    ld [hl-], a
    dec b
    jr nz, .save
    ld sp, STACK_TOP
    call lib_init
    ld hl, SCRATCH
    ld de, expected
    ld bc, names
    call expect_table
    jp finish

expected: db $AC, $AD, $AD, $AE, $AF, $B1
names:    dw s_1, s_2, s_3, s_4, s_5, s_6, 0

s_1: db "DIV 13 M after $0100", 0
s_2: db "DIV +64 M", 0
s_3: db "DIV +63 M", 0
s_4: db "DIV +64 M again", 0
s_5: db "DIV +64 M, third", 0
s_6: db "DIV +65 M", 0
