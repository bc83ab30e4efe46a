; ppu_stat_log: logs every STAT interrupt of one frame as (LY, STAT) pairs.
; Assembled with STAT_SOURCES and LYC_VALUE defined in front (EQU lines), e.g.
; by tests/test_ppu_stat_timing.py.  From the 4th VBlank to the 5th, each STAT
; handler appends LY and STAT (read as the handler starts) at $D000; the end
; pointer is kept at hLogEnd.  Which lines interrupt, and in which mode the
; handler finds the PPU, show how the enabled sources block each other
; (the STAT line is the OR of the sources; IF is set on its rising edge).
    title "PPU STAT LOG"
    include "ppu_lib.inc"

hRecord  EQU $FFA0
hLogEnd  EQU $FFA1      ; 2 bytes, little endian
wLog     EQU $D000

Start:
    call Init
    ld a, low(wLog)
    ldh [hLogEnd], a
    ld a, high(wLog)
    ldh [hLogEnd+1], a
    ld a, $91
    ldh [rLCDC], a
    ld a, STAT_SOURCES
    ldh [rSTAT], a
    ld a, LYC_VALUE
    ldh [rLYC], a
    ld a, IE_VBLANK | IE_STAT
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
Idle:
    halt
    jr Idle

VBlankHandler:
    push af
    ldh a, [hFrame]
    inc a
    ldh [hFrame], a
    cp 4
    ld a, 1
    jr z, .set
    xor a
.set:
    ldh [hRecord], a
    pop af
    reti

StatHandler:
    push af
    push hl
    ldh a, [hRecord]
    or a
    jr z, .done
    ldh a, [hLogEnd]
    ld l, a
    ldh a, [hLogEnd+1]
    ld h, a
    ldh a, [rLY]
    ld [hl+], a
    ldh a, [rSTAT]
    ld [hl+], a
    ld a, l
    ldh [hLogEnd], a
    ld a, h
    ldh [hLogEnd+1], a
.done:
    pop hl
    pop af
    reti
