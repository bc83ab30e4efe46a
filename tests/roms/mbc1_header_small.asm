; mbc1_header_small.asm - a 256 KiB (16 bank) MBC1 file whose header, once the
; test patches it, declares less: $0148 = $00 (32 KiB, 2 banks) and $0149 = $04
; (128 KiB of RAM, more than an MBC1's 2 RAM bank bits reach).  Carts like this
; exist (gbmicrotest's mbc1_rom_banks: 32 KiB declared, a 2 MiB file); the
; MBC's bank lines, not the header, decide what $4000-$7FFF shows, so every
; bank of the file is reachable and bank numbers wrap at the file's 16 banks
; (as built, with the header telling the truth, the ROM passes the same way).
; Bank N holds the tag N at offset $3FF0.  RAM: mode 1 selects RAM banks 0-3,
; each keeping its own byte.

    title "MBC1_HDR_SMALL"
    cart_type $03               ; MBC1+RAM+BATTERY
    rom_size $03                ; 256 KiB as built; the test patches $0148/$0149
    ram_size $03
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    ld a, 9                     ; beyond the 2 banks the patched header declares
    ld b, 9
    ld hl, s_b9
    call sel_expect
    ld a, 15                    ; the file's last bank
    ld b, 15
    ld hl, s_b15
    call sel_expect
    ld a, 18                    ; wraps at the file's 16 banks, not the header's 2
    ld b, 2
    ld hl, s_b18
    call sel_expect
    ; RAM banks 0-3 in mode 1: write the bank's number + $40 to $A000 of each,
    ; then read them back.
    ld a, $0A
    ld [$0000], a
    ld a, 1
    ld [$6000], a
    ld c, 0
.wr:
    ld a, c
    ld [$4000], a
    add a, $40
    ld [$A000], a
    inc c
    ld a, c
    cp 4
    jr nz, .wr
    ld a, 2
    ld [$4000], a
    ld a, [$A000]
    ld b, $42
    ld hl, s_ram2
    call expect
    xor a
    ld [$4000], a
    ld a, [$A000]
    ld b, $40
    ld hl, s_ram0
    call expect
    xor a
    ld [$6000], a
    ld [$0000], a
    jp finish

; sel_expect: write A to the ROM bank register, expect tag B at $7FF0; name HL.
sel_expect:
    ld [$2000], a
    ld a, [$7FF0]
    jp expect

s_b9:   db "rom bank 9", 0
s_b15:  db "rom bank 15", 0
s_b18:  db "rom bank 18 -> 2", 0
s_ram2: db "ram bank 2", 0
s_ram0: db "ram bank 0", 0

    org $3FF0
    db 0
N = 1
    rept 15
    bank N
    org $7FF0
    db N
N = N + 1
    endr
