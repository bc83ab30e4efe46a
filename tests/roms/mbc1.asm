; mbc1.asm - MBC1 with 256 KiB ROM (16 banks) and 32 KiB RAM (4 banks)
; (Pan Docs: MBC1).  Bank N holds the tag N at offset $3FF0.
;   $2000-$3FFF: 5-bit ROM bank for $4000-$7FFF; 0 reads as 1; upper bits
;   discarded ($E3 -> 3); the number is masked to the 4 bits a 16-bank ROM
;   needs, but the 0->1 translation looks at all 5 bits, so $10 maps bank 0.
;   Disabled RAM reads open bus (often $FF, not guaranteed: gambatte returns
;   the last byte fetched), so the check is only that the RAM byte is hidden.
;   $0000-$3FFF: always bank 0 on a cart this small, in both modes.
;   $0000-$1FFF: RAM enable ($xA enables, anything else disables); disabled
;   RAM reads $FF and ignores writes.
;   $4000-$5FFF: RAM bank in mode 1 ($6000=1); mode 0 locks A000-BFFF to bank 0.

    title "MBC1"
    cart_type $03               ; MBC1+RAM+BATTERY
    rom_size $03                ; 256 KiB
    ram_size $03                ; 32 KiB
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    ld a, [$7FF0]
    ld b, 1
    ld hl, s_default
    call expect
    ld a, 5
    ld b, 5
    ld hl, s_b5
    call sel_expect
    ld a, 0
    ld b, 1
    ld hl, s_b0
    call sel_expect
    ld a, $0F
    ld b, $0F
    ld hl, s_b0f
    call sel_expect
    ld a, $E3
    ld b, 3
    ld hl, s_be3
    call sel_expect
    ld a, $10
    ld b, 0
    ld hl, s_b10
    call sel_expect
    ld a, $11
    ld b, 1
    ld hl, s_b11
    call sel_expect
    ld a, [$3FF0]
    ld b, 0
    ld hl, s_low0
    call expect
    ld a, 1
    ld [$6000], a               ; mode 1
    ld a, 3
    ld [$4000], a
    ld a, [$3FF0]
    ld b, 0
    ld hl, s_low1
    call expect
    ld a, 2
    ld b, 2
    ld hl, s_mode1_b2
    call sel_expect

    ; --- RAM
    ld a, $0A
    ld [$0000], a               ; enable
    ld c, 0                     ; banks 0..3 (mode 1): A000 = $10+k, BFFF = $20+k
.wr:
    ld a, c
    ld [$4000], a
    add $10
    ld [$A000], a
    add $10
    ld [$BFFF], a
    inc c
    ld a, c
    cp 4
    jr nz, .wr
    ld c, 0
.rd:
    ld a, c
    ld [$4000], a
    add $10
    ld b, a
    ld a, [$A000]
    ld hl, s_ram_a000
    call expect
    ld a, c
    add $20
    ld b, a
    ld a, [$BFFF]
    ld hl, s_ram_bfff
    call expect
    inc c
    ld a, c
    cp 4
    jr nz, .rd
    xor a
    ld [$6000], a               ; mode 0: bank 0 whatever $4000 says
    ld a, 3
    ld [$4000], a
    ld a, [$A000]
    ld b, $10
    ld hl, s_ram_mode0
    call expect
    xor a
    ld [$0000], a               ; disable
    ld a, [$A000]               ; open bus ($FF on most units; gambatte
    cp $10                      ; returns the last byte fetched): just not the RAM
    ld a, 1
    jr nz, .hidden
    xor a
.hidden:
    ld b, 1
    ld hl, s_ram_dis
    call expect
    ld a, $77
    ld [$A000], a               ; ignored
    ld a, $1A                   ; low nibble A enables
    ld [$0000], a
    ld a, [$A000]
    ld b, $10
    ld hl, s_ram_kept
    call expect
    xor a
    ld [$0000], a
    jp finish

; sel_expect: write A to the ROM bank register, expect tag B at $7FF0; name HL.
sel_expect:
    ld [$2000], a
    ld a, [$7FF0]
    jp expect

s_default:  db "bank at power-on", 0
s_b5:       db "bank 5", 0
s_b0:       db "bank 0 -> 1", 0
s_b0f:      db "bank 0F", 0
s_be3:      db "bank E3 -> 3", 0
s_b10:      db "bank 10 -> 0 (4-bit mask)", 0
s_b11:      db "bank 11 -> 1", 0
s_low0:     db "0000-3FFF mode 0", 0
s_low1:     db "0000-3FFF mode 1", 0
s_mode1_b2: db "bank 2 in mode 1", 0
s_ram_a000: db "RAM bank tag A000", 0
s_ram_bfff: db "RAM bank tag BFFF", 0
s_ram_mode0: db "RAM bank in mode 0", 0
s_ram_dis:  db "RAM hidden after disable", 0
s_ram_kept: db "RAM after write while disabled", 0

    org $3FF0
    db 0
N = 1
    rept 15
    bank N
    org $7FF0
    db N
N = N + 1
    endr
