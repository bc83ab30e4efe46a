; serial_div.asm - a DIV write during an internal-clock transfer (DMG).
;
; Pan Docs (Serial Data Transfer; Timer and Divider Registers): the 8192 Hz serial
; clock is divided from the 16-bit system counter whose upper byte is DIV; bits shift
; on the falling edges of its bit 8 (every 512 T). Writing DIV resets the counter, so
; the bits still to come shift on the new counter's edges; and as for the timer, a
; reset while the bit is 1 is itself a falling edge (one bit shifts at the write).
; A transfer starts right after a DIV reset (its bits would end 4096 T later); DIV is
; written again X T after that reset:
;   X in [512, 768): bit 8 is 0 - one bit shifted, 7 to come, 3584 T after the write;
;   X in [768, 1024): bit 8 is 1 - the write shifts the 2nd, 6 to come, 3072 T after.
; The serial handler reads DIV: 14 and 12 (the handler adds less than 256 T); with
; the end fixed at the start it would read 13 and 12, without the edge at the write
; 14 and 14.
; gambatte ties its serial clock to its own cycle counter, not to DIV: it does not
; model this (tests/test_hw_roms.py lists the ROM as such).
; Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "SERIAL DIV"
    include "testlib_defs.inc"

    org $0058
    ldh a, [rDIV]
    jp hl

    org $0100
    nop
    jp main

    org $0150
    include "testlib_body.inc"

wRes EQU SCRATCH

; transfer_div_at N: DIV reset, start a transfer, N passes of a 4-M loop, DIV reset;
; the serial handler's DIV reading to [DE+]
MACRO transfer_div_at
    xor a
    ldh [rIF], a
    ld hl, .done\@
    ld b, \1
    ldh [rDIV], a               ; counter 0 (this write's M-cycle)
    ld a, $81
    ldh [rSC], a                ; 12 T later: the first bit at counter 512
    ei
.wait\@:
    dec b
    jr nz, .wait\@
    ldh [rDIV], a
.halt\@:
    halt
    jr .halt\@
.done\@:
    di
    ld [de], a
    inc de
ENDM

main:
    ld sp, STACK_TOP
    call lib_init
    ld a, $08
    ldh [rIE], a
    ld de, wRes
    ; DIV written (12 + 4 + 4 + 16 N + 8 T) after the reset: N = 38: 640 T; N = 54: 896 T
    transfer_div_at 38
    transfer_div_at 54
    xor a
    ldh [rIE], a
    ld a, [wRes]
    ld b, 14
    ld hl, s_bit0
    call expect
    ld a, [wRes + 1]
    ld b, 12
    ld hl, s_bit1
    call expect
    jp finish

s_bit0: db "div written, bit 8 low: div at the end", 0
s_bit1: db "div written, bit 8 high: div at the end", 0
