; mbc2.asm - MBC2+BATTERY with 256 KiB ROM (16 banks) (Pan Docs: MBC2).
; Bank N holds the tag N at offset $3FF0; the header declares RAM size $00
; (Pan Docs, $0149: the MBC2's RAM is built in).
;   $0000-$3FFF holds both registers; address bit 8 picks one.  Bit 8 set:
;   ROM bank for $4000-$7FFF = low 4 bits of the value, 0 -> 1 (bank 1 at
;   power-on).  Bit 8 clear: RAM enable, on iff the low nibble is $A (off at
;   power-on).  $4000-$7FFF holds no register.
;   $A000-$A1FF: 512 x 4 bits inside the MBC2, only the low nibble is used
;   (the upper one is undefined, so it is masked off here: gambatte reads
;   open bus there, VecGameBoy and PyBoy 1s); only address bits 0-8 are
;   decoded, so $A200-$BFFF are 15 echoes.
;   Disabled RAM ignores writes; reads are open bus ($FF on most units, not
;   guaranteed: gambatte returns the last byte fetched), so the check is only
;   that the RAM is hidden.

    title "MBC2"
    cart_type $06               ; MBC2+BATTERY
    rom_size $03                ; 256 KiB
    ram_size $00
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    ; --- ROM bank register (address bit 8 set)
    ld a, [$7FF0]
    ld b, 1
    ld hl, s_default
    call expect
    ld de, $2100
    ld a, 5
    ld b, 5
    ld hl, s_2100
    call bank_expect
    ld de, $3FFF
    ld a, $0F
    ld b, $0F
    ld hl, s_3fff
    call bank_expect
    ld de, $2100
    ld a, $F3                   ; only the low 4 bits
    ld b, 3
    ld hl, s_f3
    call bank_expect
    ld de, $2100
    xor a
    ld b, 1
    ld hl, s_zero
    call bank_expect
    ld de, $2100
    ld a, $10                   ; low 4 bits 0: also bank 1
    ld b, 1
    ld hl, s_10
    call bank_expect
    ld de, $0100                ; bit 8 set in $0000-$1FFF: still the ROM bank
    ld a, 7
    ld b, 7
    ld hl, s_0100
    call bank_expect
    ld de, $1F00
    ld a, 9
    ld b, 9
    ld hl, s_1f00
    call bank_expect
    ld a, 6
    ld [$2100], a
    ld a, 9
    ld [$2000], a               ; bit 8 clear: the RAM enable register, not the bank
    ld [$20FF], a
    ld [$4100], a               ; no register at $4000-$7FFF
    ld [$6100], a
    ld [$7FFF], a
    ld a, [$7FF0]
    ld b, 6
    ld hl, s_nobank
    call expect
    ld a, [$3FF0]
    ld b, 0
    ld hl, s_low
    call expect

    ; --- RAM (address bit 8 clear enables)
    ld a, $0A
    ld [$0000], a
    ld a, $07
    ld [$A000], a
    ld a, $FC                   ; the upper nibble is not stored
    ld [$A1FF], a
    ld a, $03
    ld [$A123], a
    ld de, $A000
    ld b, 7
    ld hl, s_ram_a000
    call nib_expect
    ld de, $A1FF
    ld b, $0C
    ld hl, s_ram_a1ff
    call nib_expect
    ld de, $A123
    ld b, 3
    ld hl, s_ram_a123
    call nib_expect
    ld de, $A200                ; address bits 9-12 are not decoded
    ld b, 7
    ld hl, s_echo_a200
    call nib_expect
    ld de, $BE00
    ld b, 7
    ld hl, s_echo_be00
    call nib_expect
    ld de, $BFFF
    ld b, $0C
    ld hl, s_echo_bfff
    call nib_expect
    ld a, $09
    ld [$B323], a               ; a write through an echo lands in $A123
    ld de, $A123
    ld b, 9
    ld hl, s_echo_write
    call nib_expect
    ; --- enable/disable through the register
    xor a
    ld [$0000], a               ; disable
    ld de, $A000
    ld b, 7
    ld hl, s_ram_dis
    call nib_expect_not
    ld a, $01
    ld [$A000], a               ; ignored while disabled
    ld a, $5A                   ; low nibble $A enables, the upper one does not matter
    ld [$00FF], a
    ld de, $A000
    ld b, 7
    ld hl, s_ram_kept
    call nib_expect
    ld a, $0B
    ld [$0000], a
    ld de, $A000
    ld b, 7
    ld hl, s_ram_0b
    call nib_expect_not
    ld a, $0A
    ld [$0100], a               ; bit 8 set: the ROM bank register ($A), not the enable
    ld de, $A000
    ld b, 7
    ld hl, s_ram_0100
    call nib_expect_not
    ld a, $0A
    ld [$2000], a               ; bit 8 clear in $2000-$3FFF: enables
    ld de, $A000
    ld b, 7
    ld hl, s_ram_2000
    call nib_expect
    xor a
    ld [$3E00], a               ; and disables
    ld de, $A000
    ld b, 7
    ld hl, s_ram_3e00
    call nib_expect_not
    xor a
    ld [$0000], a
    jp finish

; bank_expect: write A to [DE], expect tag B at $7FF0; name HL.
bank_expect:
    ld [de], a
    ld a, [$7FF0]
    jp expect

; nib_expect: expect the low nibble of [DE] to be B; name HL.
nib_expect:
    ld a, [de]
    and $0F
    jp expect

; nib_expect_not: expect the low nibble of [DE] not to be B (the RAM is
; hidden, or did not take a write); name HL.  Reports 1 = "differs".
nib_expect_not:
    ld a, [de]
    and $0F
    cp b
    ld a, 1
    jr nz, .differs
    xor a
.differs:
    push bc
    ld b, 1
    call expect
    pop bc
    ret

s_default:  db "bank at power-on", 0
s_2100:     db "bank via 2100", 0
s_3fff:     db "bank via 3FFF", 0
s_f3:       db "bank F3 -> 3", 0
s_zero:     db "bank 0 -> 1", 0
s_10:       db "bank 10 -> 1", 0
s_0100:     db "bank via 0100", 0
s_1f00:     db "bank via 1F00", 0
s_nobank:   db "bank kept (2000 20FF 4100 6100 7FFF)", 0
s_low:      db "0000-3FFF bank 0", 0
s_ram_a000: db "RAM A000", 0
s_ram_a1ff: db "RAM A1FF", 0
s_ram_a123: db "RAM A123", 0
s_echo_a200: db "echo A200", 0
s_echo_be00: db "echo BE00", 0
s_echo_bfff: db "echo BFFF", 0
s_echo_write: db "write via echo B323", 0
s_ram_dis:  db "RAM hidden after 00", 0
s_ram_kept: db "RAM after write while off, 5A at 00FF", 0
s_ram_0b:   db "RAM hidden after 0B", 0
s_ram_0100: db "0A at 0100 does not enable", 0
s_ram_2000: db "RAM enable via 2000", 0
s_ram_3e00: db "RAM disable via 3E00", 0

    org $3FF0
    db 0
N = 1
    rept 15
    bank N
    org $7FF0
    db N
N = N + 1
    endr
