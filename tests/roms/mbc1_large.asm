; mbc1_large.asm - MBC1 with 1 MiB ROM (64 banks), no RAM (Pan Docs: MBC1,
; "1 MiB and larger" wiring).  Bank N holds the tag N at offset $3FF0.
;   $4000-$5FFF supplies ROM bank bits 5-6: bank = reg2 << 5 | reg1.
;   The 0->1 translation looks only at the 5-bit register: reg2=1, reg1=0
;   selects $21, not $20.
;   Mode 1 ($6000=1) applies reg2 to $0000-$3FFF too: bank $20 appears there
;   (checked from HRAM, since the code in bank 0 is mapped out meanwhile).

    title "MBC1_LARGE"
    cart_type $01               ; MBC1
    rom_size $05                ; 1 MiB
    include "testlib.asm"

HRAM_CODE EQU $FF80

main:
    ld sp, STACK_TOP
    call lib_init
    di
    ld a, 1
    ld [$4000], a
    ld a, 2
    ld b, $22
    ld hl, s_22
    call sel_expect
    ld a, 0
    ld b, $21
    ld hl, s_21
    call sel_expect
    ld a, 2
    ld [$4000], a
    ld a, $1F
    ld b, $5F & $3F             ; 64 banks: bank $5F wraps to $1F
    ld hl, s_5f
    call sel_expect
    ld a, 1
    ld [$4000], a
    ld a, $05
    ld b, $25
    ld hl, s_25
    call sel_expect
    ld a, [$3FF0]
    ld b, 0
    ld hl, s_low0
    call expect
    ; mode 1 from HRAM
    ld de, low_probe
    ld hl, HRAM_CODE
    ld c, low_probe_end - low_probe
    call copy
    call HRAM_CODE
    ld b, $20
    ld hl, s_low1
    call expect
    ld a, [$3FF0]               ; back in mode 0
    ld b, 0
    ld hl, s_low0b
    call expect
    jp finish

; low_probe (runs in HRAM): mode 1, read $3FF0, mode 0; returns the byte.
low_probe:
    ld a, 1
    ld [$6000], a
    ld a, [$3FF0]
    ld b, a
    xor a
    ld [$6000], a
    ld a, b
    ret
low_probe_end:

; sel_expect: write A to the ROM bank register, expect tag B at $7FF0; name HL.
sel_expect:
    ld [$2000], a
    ld a, [$7FF0]
    jp expect

s_22:    db "reg2=1 reg1=2 -> 22", 0
s_21:    db "reg2=1 reg1=0 -> 21", 0
s_5f:    db "reg2=2 reg1=1F -> 5F (wraps to 1F)", 0
s_25:    db "reg2=1 reg1=5 -> 25", 0
s_low0:  db "0000-3FFF mode 0", 0
s_low1:  db "0000-3FFF mode 1 reg2=1 -> bank 20", 0
s_low0b: db "0000-3FFF back in mode 0", 0

    org $3FF0
    db 0
N = 1
    rept 63
    bank N
    org $7FF0
    db N
N = N + 1
    endr
