; mbc5.asm - MBC5 with 1 MiB ROM (64 banks) and 32 KiB RAM (4 banks)
; (Pan Docs: MBC5).  Bank N holds the tag N at offset $3FF0.
;   $2000-$2FFF: low 8 bits of the ROM bank, $3000-$3FFF: bit 8; bank 0 is
;   selectable in $4000-$7FFF (no 0->1 translation); a bank beyond the ROM
;   wraps (the unused address lines are not connected): $105 -> 5.
;   $0000-$3FFF: always bank 0.
;   $0000-$1FFF: RAM enable ($0A); $4000-$5FFF: RAM bank (4 bits).

    title "MBC5"
    cart_type $1B               ; MBC5+RAM+BATTERY
    rom_size $05                ; 1 MiB
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
    ld a, 0
    ld b, 0
    ld hl, s_b0
    call sel_expect
    ld a, $25
    ld b, $25
    ld hl, s_b25
    call sel_expect
    ld a, $3F
    ld b, $3F
    ld hl, s_b3f
    call sel_expect
    ld a, 1
    ld [$3000], a
    ld a, $05
    ld b, $05
    ld hl, s_b105
    call sel_expect
    xor a
    ld [$3000], a
    ld a, $20
    ld b, $20
    ld hl, s_b20
    call sel_expect
    ld a, [$3FF0]
    ld b, 0
    ld hl, s_low
    call expect

    ; --- RAM banks
    ld a, $0A
    ld [$0000], a
    ld c, 0
.wr:
    ld a, c
    ld [$4000], a
    add $30
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
    add $30
    ld b, a
    ld a, [$A000]
    ld hl, s_ram_a000
    call expect
    ld a, c
    add $40
    ld b, a
    ld a, [$BFFF]
    ld hl, s_ram_bfff
    call expect
    inc c
    ld a, c
    cp 4
    jr nz, .rd
    xor a
    ld [$4000], a
    ld [$0000], a               ; disable
    ld a, [$A000]
    cp $30
    ld a, 1
    jr nz, .hidden
    xor a
.hidden:
    ld b, 1
    ld hl, s_ram_dis
    call expect
    ld a, $0A
    ld [$0000], a
    ld a, [$A000]
    ld b, $30
    ld hl, s_ram_back
    call expect
    xor a
    ld [$0000], a
    jp finish

; sel_expect: write A to the low ROM bank register, expect tag B; name HL.
sel_expect:
    ld [$2000], a
    ld a, [$7FF0]
    jp expect

s_default:  db "bank at power-on", 0
s_b0:       db "bank 0 (no translation)", 0
s_b25:      db "bank 25", 0
s_b3f:      db "bank 3F", 0
s_b105:     db "bank 105 wraps to 5", 0
s_b20:      db "bank 20", 0
s_low:      db "0000-3FFF", 0
s_ram_a000: db "RAM bank tag A000", 0
s_ram_bfff: db "RAM bank tag BFFF", 0
s_ram_dis:  db "RAM hidden after disable", 0
s_ram_back: db "RAM after re-enable", 0

    org $3FF0
    db 0
N = 1
    rept 63
    bank N
    org $7FF0
    db N
N = N + 1
    endr
