; serial_boot_align.asm - the internal serial clock against the system counter after
; the boot ROM (DMG).
;
; Pan Docs (Serial Data Transfer; Timer and Divider Registers): with the internal
; clock, bits shift at 8192 Hz, a clock divided from the same 16-bit system counter
; as DIV, so a transfer's 8 bits end at the 8th falling edge of counter bit 8 after
; SC is written - aligned to the counter (set by the reset), not to the write. The
; counter's phase at PC=$0100 is the DMG boot ROM's: mooneye-gb boot_sclk_align
; (verified on DMG ABC and MGB) starts a transfer 25 M-cycles after $0100 and counts
; "inc a/b/c/d/e/h/l" until the serial interrupt: after 144 full rounds and
; "inc a", "inc b" - A = $12 (from $81), B = $91, C-L = $90. The code from $0100 to
; the SC write below is timed the same.
; Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "SERIAL SCLK BOOT"
    include "testlib_defs.inc"

    org $0058
    jp serial_irq

    org $0100
    nop
    jp main                     ; (4 M-cycles wherever main is)

    org $0150
    include "testlib_body.inc"

wRegs EQU SCRATCH               ; A B C D E H L at the interrupt

main:
    ld a, $08                   ; IE = serial
    ldh [rIE], a
    xor a
    ldh [rIF], a
    xor a
    ld b, a
    ld c, a
    ld d, a
    ld e, a
    ld h, a
    ld l, a
    ld a, $81                   ; internal clock, start: written 25 M-cycles after $0100
    ldh [rSC], a
    ei
    rept 2000
    inc a
    inc b
    inc c
    inc d
    inc e
    inc h
    inc l
    endr
    di
    ld sp, STACK_TOP
    call lib_init
    ld hl, s_none
    call fail_msg
    jp finish

serial_irq:
    di
    ld sp, STACK_TOP
    push hl
    ld hl, wRegs
    ld [hl+], a
    ld a, b
    ld [hl+], a
    ld a, c
    ld [hl+], a
    ld a, d
    ld [hl+], a
    ld a, e
    ld [hl+], a
    pop de                      ; H L
    ld a, d
    ld [hl+], a
    ld a, e
    ld [hl+], a
    call lib_init               ; (clears the log; the registers are saved)
    ld hl, wRegs
    ld de, expected
    ld bc, names
    call expect_table
    jp finish

expected: db $12, $91, $90, $90, $90, $90, $90
names:    dw s_a, s_b, s_c, s_d, s_e, s_h, s_l, 0

s_none: db "no serial interrupt", 0
s_a: db "serial irq after incs: a", 0
s_b: db "serial irq after incs: b", 0
s_c: db "serial irq after incs: c", 0
s_d: db "serial irq after incs: d", 0
s_e: db "serial irq after incs: e", 0
s_h: db "serial irq after incs: h", 0
s_l: db "serial irq after incs: l", 0
