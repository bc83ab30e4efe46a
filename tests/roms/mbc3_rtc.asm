; mbc3_rtc.asm - MBC3 with 1 MiB ROM, 32 KiB RAM and the RTC (Pan Docs: MBC3).
; Bank N holds the tag N at offset $3FF0.
;   ROM: 7-bit bank; 0 reads as 1; banks $20/$40/$60 are reachable (unlike
;   MBC1).  RAM: enable with $0A, bank 0-3 via $4000.
;   RTC: $4000 = $08..$0C maps S, M, H, DL, DH at $A000; writing $00 then $01
;   to $6000 latches the counters, which read back unchanged until the next
;   latch while the clock runs on.  DH bit 6 halts it; bit 0 is day bit 8;
;   bit 7 is the day-counter carry, set when day 511 rolls over.  The clock
;   runs on emulated time (32768 Hz crystal: 1 s = 4194304 T-cycles).
;   Unused bits read 0 (writing $FF reads back S/M $3F, H $1F, DL $FF, DH
;   $C1).  Out-of-range values count on and wrap at the register's width with
;   no carry: 30:59:63 becomes 30:59:00 one second later.
;   Waits use HALT on timer overflows (1/16 s each) with the LCD off.
;   Writing S restarts the sub-second count on MBC3 hardware, but emulators
;   differ, so after a 1.5 s wait S is accepted as 1 or 2.

    title "MBC3_RTC"
    cart_type $10               ; MBC3+TIMER+RAM+BATTERY
    rom_size $05                ; 1 MiB
    ram_size $03                ; 32 KiB
    include "testlib.asm"

RTC_S  EQU $08
RTC_M  EQU $09
RTC_H  EQU $0A
RTC_DL EQU $0B
RTC_DH EQU $0C

main:
    ld sp, STACK_TOP
    call lib_init
    di
    call lcd_off
    ; --- ROM banks
    ld a, 0
    ld b, 1
    ld hl, s_b0
    call sel_expect
    ld a, $20
    ld b, $20
    ld hl, s_b20
    call sel_expect
    ld a, $3F
    ld b, $3F
    ld hl, s_b3f
    call sel_expect

    ; --- RAM banks
    ld a, $0A
    ld [$0000], a
    ld c, 0
.wr:
    ld a, c
    ld [$4000], a
    add $50
    ld [$A000], a
    inc c
    ld a, c
    cp 4
    jr nz, .wr
    ld c, 0
.rd:
    ld a, c
    ld [$4000], a
    add $50
    ld b, a
    ld a, [$A000]
    ld hl, s_ram
    call expect
    inc c
    ld a, c
    cp 4
    jr nz, .rd

    ; --- RTC: halt, set 00:00:00 day 0, run
    ld a, RTC_DH
    ld b, $40
    call rtc_write
    ld a, RTC_S
    ld b, 0
    call rtc_write
    ld a, RTC_M
    ld b, 0
    call rtc_write
    ld a, RTC_H
    ld b, 0
    call rtc_write
    ld a, RTC_DL
    ld b, 0
    call rtc_write
    ld a, RTC_DH
    ld b, $00
    call rtc_write              ; running from here
    ld a, 24                    ; 1.5 s
    call wait_sixteenths
    call latch
    ld a, RTC_S
    call rtc_read
    ld [SCRATCH], a
    dec a                       ; 1 or 2 -> 0 or 1
    cp 2
    sbc a
    ld b, $FF
    ld hl, s_s_run
    call expect
    jr z, .s_ok
    ld a, [SCRATCH]
    ld b, 1
    ld hl, s_s_val
    call expect
.s_ok:
    ld a, RTC_M
    call rtc_read
    ld b, 0
    ld hl, s_m_run
    call expect
    ld a, RTC_DH
    call rtc_read
    ld b, 0
    ld hl, s_dh_run
    call expect

    ; --- latched value holds while the clock runs on
    ld a, 16                    ; 1 s
    call wait_sixteenths
    ld a, RTC_S
    call rtc_read
    ld b, a
    ld a, [SCRATCH]
    ld hl, s_latched
    call expect
    call latch                  ; and moves after a new latch
    ld a, RTC_S
    call rtc_read
    ld b, a
    ld a, [SCRATCH]
    inc a
    ld hl, s_relatch
    call expect                 ; S advanced by exactly 1 over the 1 s wait

    ; --- halted clock does not advance
    ld a, RTC_DH
    ld b, $40
    call rtc_write
    call latch
    ld a, RTC_S
    call rtc_read
    ld [SCRATCH], a
    ld a, 24
    call wait_sixteenths
    call latch
    ld a, RTC_S
    call rtc_read
    ld b, a
    ld a, [SCRATCH]
    ld hl, s_halted
    call expect
    ld a, RTC_DH
    call rtc_read
    ld b, $40
    ld hl, s_dh_halt
    call expect

    ; --- roll-over: 23:59:59 on day 511 -> 00:00:00 day 0 with carry
    ld a, RTC_S
    ld b, 59
    call rtc_write
    ld a, RTC_M
    ld b, 59
    call rtc_write
    ld a, RTC_H
    ld b, 23
    call rtc_write
    ld a, RTC_DL
    ld b, $FF
    call rtc_write
    ld a, RTC_DH
    ld b, $41                   ; halted, day bit 8
    call rtc_write
    ld a, RTC_DH
    ld b, $01                   ; run
    call rtc_write
    ld a, 24                    ; 1.5 s
    call wait_sixteenths
    call latch
    ld a, RTC_S
    call rtc_read
    cp 2
    sbc a
    ld b, $FF
    ld hl, s_roll_s
    call expect
    ld a, RTC_M
    call rtc_read
    ld b, 0
    ld hl, s_roll_m
    call expect
    ld a, RTC_H
    call rtc_read
    ld b, 0
    ld hl, s_roll_h
    call expect
    ld a, RTC_DL
    call rtc_read
    ld b, 0
    ld hl, s_roll_dl
    call expect
    ld a, RTC_DH
    call rtc_read
    ld b, $80
    ld hl, s_roll_dh
    call expect

    ; --- unused bits read 0: write $FF everywhere (halted) and latch
    ld hl, rtc_ff
.ff:
    ld a, [hl+]
    or a
    jr z, .ff_done
    push hl
    ld b, $FF
    call rtc_write
    pop hl
    jr .ff
.ff_done:
    call latch
    ld hl, rtc_ff
.ffr:
    ld a, [hl+]
    or a
    jr z, .ffr_done
    push hl
    call rtc_read
    pop hl
    ld b, [hl]
    inc hl
    push hl
    call expect_named_rtc
    pop hl
    jr .ffr
.ffr_done:

    ; --- invalid values count on without a carry: 30:59:63 -> 30:59:00
    ld a, RTC_S
    ld b, 63
    call rtc_write
    ld a, RTC_M
    ld b, 59
    call rtc_write
    ld a, RTC_H
    ld b, 30
    call rtc_write
    ld a, RTC_DH
    ld b, $00
    call rtc_write
    ld a, 24                    ; 1.5 s: one or two ticks
    call wait_sixteenths
    call latch
    ld a, RTC_S
    call rtc_read
    cp 2
    sbc a
    ld b, $FF
    ld hl, s_inv_s
    call expect
    ld a, RTC_M
    call rtc_read
    ld b, 59
    ld hl, s_inv_m
    call expect
    ld a, RTC_H
    call rtc_read
    ld b, 30
    ld hl, s_inv_h
    call expect

    xor a
    ld [$0000], a
    jp finish

; expect_named_rtc: expect A == B for the RTC register named "RTC bits <reg>".
expect_named_rtc:
    ld hl, s_bits
    jp expect

; register, value read after writing $FF (halted): S/M 6 bits, H 5 bits, DL 8,
; DH bits 7, 6, 0
rtc_ff:
    db RTC_S, $3F
    db RTC_M, $3F
    db RTC_H, $1F
    db RTC_DL, $FF
    db RTC_DH, $C1
    db 0

; rtc_write: RTC register A := B.   rtc_read: A := RTC register A.
rtc_write:
    ld [$4000], a
    nop
    nop
    nop
    nop
    ld a, b
    ld [$A000], a
    ret
rtc_read:
    ld [$4000], a
    nop
    nop
    nop
    nop
    ld a, [$A000]
    ret
latch:
    xor a
    ld [$6000], a
    nop
    nop
    nop
    nop
    inc a
    ld [$6000], a
    ret

; sel_expect: write A to the ROM bank register, expect tag B at $7FF0; name HL.
sel_expect:
    ld [$2000], a
    ld a, [$7FF0]
    jp expect

s_b0:      db "bank 0 -> 1", 0
s_b20:     db "bank 20", 0
s_b3f:     db "bank 3F", 0
s_ram:     db "RAM bank tag", 0
s_s_run:   db "RTC S after 1.5 s in 1..2", 0
s_s_val:   db "RTC S after 1.5 s", 0
s_m_run:   db "RTC M after 1.5 s", 0
s_dh_run:  db "RTC DH running", 0
s_latched: db "RTC S changed without a latch", 0
s_relatch: db "RTC S after 1 s more and a latch", 0
s_halted:  db "RTC S advanced while halted", 0
s_dh_halt: db "RTC DH halted", 0
s_roll_s:  db "RTC S after roll-over in 0..1", 0
s_roll_m:  db "RTC M after roll-over", 0
s_roll_h:  db "RTC H after roll-over", 0
s_roll_dl: db "RTC DL after roll-over", 0
s_roll_dh: db "RTC DH after roll-over (carry)", 0
s_bits:    db "RTC register read after writing FF", 0
s_inv_s:   db "RTC S 63 -> 0..1 after 1.5 s", 0
s_inv_m:   db "RTC M after S overflowed from 63", 0
s_inv_h:   db "RTC H 30 kept", 0

    org $3FF0
    db 0
N = 1
    rept 63
    bank N
    org $7FF0
    db N
N = N + 1
    endr
