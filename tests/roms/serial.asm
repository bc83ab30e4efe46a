; serial.asm - serial port, internal clock, no link partner (Pan Docs: Serial
; Data Transfer (Link Cable)).
;   Writing SC=$81 starts a transfer: SC reads $FF while it runs (bits 1-6
;   unused, read 1 on DMG).  Eight bits at 8192 Hz = 8 x 512 T = 1024 M; the
;   first bit waits for the next edge of the 8192 Hz clock, so the transfer
;   ends within one bit period (128 M) of 1024 M: with TIMA counting every
;   16 M (TAC=$06) from the start, TIMA reads 56..72 once SC bit 7 clears
;   (the polling loop adds under 16 M).
;   Afterwards: SC=$7F, IF bit 3 set, SB=$FF (with no partner the bits shifted
;   in are 1s); the serial interrupt (vector $58) is dispatched when enabled.
;   External clock (SC=$80) with no partner never completes: SC stays $FE, SB
;   and IF bit 3 unchanged.
; The transfers here send '<' and '>' (internal clock), so the serial output
; is "<>" followed by the verdict; the external-clock byte is never sent.

    title "SERIAL"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    xor a
    ldh [rIE], a
    ldh [rIF], a

    ; --- internal transfer, timed
    ld a, $06
    ldh [rTAC], a
    ld a, '<'
    ldh [rSB], a
    ld c, 0                     ; poll limit: 256 x 10 M
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    ld a, $81
    ldh [rSC], a                ; start
    ldh a, [rSC]
    ld [SCRATCH], a             ; SC while busy
.poll:
    ldh a, [rSC]
    bit 7, a
    jr z, .done
    dec c
    jr nz, .poll
.done:
    ldh a, [rTIMA]
    ld [SCRATCH + 1], a
    ldh a, [rSC]
    ld [SCRATCH + 2], a
    ldh a, [rSB]
    ld [SCRATCH + 3], a
    ldh a, [rIF]
    ld [SCRATCH + 4], a
    xor a
    ldh [rTAC], a

    ld a, [SCRATCH]
    ld b, $FF
    ld hl, s_busy
    call expect
    ld a, [SCRATCH + 1]         ; 56 <= TIMA <= 72
    sub 56
    cp 72 - 56 + 1
    sbc a
    ld b, $FF
    ld hl, s_time
    call expect
    jr z, .time_ok
    ld a, [SCRATCH + 1]
    ld b, 64
    ld hl, s_time_val
    call expect
.time_ok:
    ld a, [SCRATCH + 2]
    ld b, $7F
    ld hl, s_sc_after
    call expect
    ld a, [SCRATCH + 3]
    ld b, $FF
    ld hl, s_sb_after
    call expect
    ld a, [SCRATCH + 4]
    and $08
    ld b, $08
    ld hl, s_if_after
    call expect

    ; --- serial interrupt
    xor a
    ldh [rIF], a
    ld [IRQ_COUNT], a
    ld a, $08
    ldh [rIE], a
    ld a, '>'
    ldh [rSB], a
    ld a, $81
    ldh [rSC], a
    ei
    halt                        ; woken by the serial interrupt
    nop
    di
    ld a, [IRQ_COUNT]
    ld b, 1
    ld hl, s_irq_n
    call expect
    ld a, [IRQ_LOG]
    ld b, 3
    ld hl, s_irq_vec
    call expect
    xor a
    ldh [rIE], a

    ; --- external clock, no partner: nothing happens
    xor a
    ldh [rIF], a
    ld a, $42
    ldh [rSB], a
    ld a, $80
    ldh [rSC], a
    ld b, 0                     ; ~1000 M
.wait:
    dec b
    jr nz, .wait
    ld b, 0
.wait2:
    dec b
    jr nz, .wait2
    ldh a, [rSC]
    ld b, $FE
    ld hl, s_ext_sc
    call expect
    ldh a, [rSB]
    ld b, $42
    ld hl, s_ext_sb
    call expect
    ldh a, [rIF]
    and $08
    ld b, 0
    ld hl, s_ext_if
    call expect
    xor a
    ldh [rSC], a
    jp finish

s_busy:     db "SC during transfer", 0
s_time:     db "transfer time in 56..72 x16 M", 0
s_time_val: db "transfer TIMA", 0
s_sc_after: db "SC after transfer", 0
s_sb_after: db "SB after transfer", 0
s_if_after: db "IF bit 3 after transfer", 0
s_irq_n:    db "serial irq count", 0
s_irq_vec:  db "serial irq vector", 0
s_ext_sc:   db "SC external clock", 0
s_ext_sb:   db "SB external clock", 0
s_ext_if:   db "IF external clock", 0
