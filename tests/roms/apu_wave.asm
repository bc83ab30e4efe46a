; apu_wave.asm - wave RAM while CH3 plays, DMG (Pan Docs: FF30-FF3F, NR30, NR33/NR34;
; the read timings are those of docboy-test-suite's DMG ch3_read_wave tests).
;   While CH3 is on, the CPU reaches wave RAM only in the M-cycle in which CH3 reads it,
;   and then gets the byte CH3 is reading whatever the address; otherwise reads give
;   $FF and writes are lost.  After a trigger CH3 reads sample 1 (byte 0) first, then
;   one sample every 2 * (2048 - period) T-cycles.  With period $7FF (a read every 2 T)
;   a read 16 T after the NR34 write meets CH3 reading sample 5: byte 2.  With period
;   $7FE (every 4 T) the CPU's M-cycles never meet CH3's reads: $FF.
;   With the DAC on but the channel off (not triggered, or stopped), access is normal,
;   writes included (SameSuite channel_3_wave_ram_dac_on_rw).
;   A write while CH3 plays with period $7FF lands on the byte CH3 is reading, whatever
;   its address: NR34 written ($87) by "ld [hl], n", N NOPs, then "ldh [c], a" writes
;   4 * (N + 2) T later, when CH3 reads byte N (sample 2N + 1): N = 0..8 put the value in
;   byte N and nowhere else (SameSuite channel_3_wave_ram_locked_write, DMG and CGB).

    title "APU_WAVE"
    include "testlib.asm"
    include "apu_lib.inc"

; locked_write N: CH3 stopped, wave RAM refilled, DAC on; trigger at period $7FF with
; "ld [hl], $87", N NOPs, then "ldh [c], a" writes $2A to rWAVE + 6; stop CH3 and check
; that byte N alone changed (check_locked, B = N).
MACRO locked_write
    xor a
    ldh [rNR30], a
    call fill_wave
    ld a, $80
    ldh [rNR30], a
    ld a, $FF
    ldh [rNR33], a
    ld hl, rNR34
    ld c, low(rWAVE + 6)
    ld a, $2A
    ld [hl], $87
    rept \1
    nop
    endr
    ldh [c], a
    xor a
    ldh [rNR30], a
    ld b, \1
    call check_locked
ENDM

main:
    ld sp, STACK_TOP
    call lib_init
    di
    call apu_restart
    call fill_wave
    xor a
    ldh [rNR32], a              ; (mute)

    ; DAC on, channel not triggered: wave RAM as usual
    ld a, $80
    ldh [rNR30], a
    ldh a, [rWAVE + 5]
    ld b, $55
    ld hl, s_dac_on_read
    call expect

    ; DAC on, channel not triggered: writes land where addressed
    ld a, 42
    ldh [rWAVE + 5], a
    ld a, 69
    ldh [rWAVE + 2], a
    ld a, 4
    ldh [rWAVE + 14], a
    xor a
    ldh [rNR30], a
    ld hl, rWAVE + 5
    ld b, 42
    call expect_wave_byte
    ld hl, rWAVE + 2
    ld b, 69
    call expect_wave_byte
    ld hl, rWAVE + 14
    ld b, 4
    call expect_wave_byte
    call fill_wave
    ld a, $80
    ldh [rNR30], a

    ; period $7FF: the read 16 T after the trigger gets byte 2
    ld a, $FF
    ldh [rNR33], a
    ld a, $87
    ldh [rNR34], a
    nop
    ldh a, [rWAVE + 9]          ; (any address: CH3's byte)
    ld b, $22
    ld hl, s_fast_read
    call expect
    expect_nr52 $F4, s_playing

    ; period $7FE: never in step with the CPU: $FF, and writes are lost.  (Stopped
    ; first: a DMG retrigger while CH3 reads corrupts wave RAM.)
    xor a
    ldh [rNR30], a
    ld a, $80
    ldh [rNR30], a
    ld a, $FE
    ldh [rNR33], a
    ld a, $87
    ldh [rNR34], a
    nop
    ldh a, [rWAVE + 9]
    ld b, $FF
    ld hl, s_slow_read
    call expect
    ld a, $A5
    ldh [rWAVE + 3], a
    ld b, 16
.more:
    ldh a, [rWAVE]
    cp $FF
    jr nz, .not_ff
    dec b
    jr nz, .more
.not_ff:
    ld a, b
    ld b, 0
    ld hl, s_slow_reads
    call expect

    ; stopped by its DAC: normal again, the lost write did not land
    xor a
    ldh [rNR30], a
    expect_nr52 $F0, s_stopped
    ldh a, [rWAVE + 3]
    ld b, $33
    ld hl, s_lost_write
    call expect
    ld a, $5A
    ldh [rWAVE + 3], a
    ldh a, [rWAVE + 3]
    ld b, $5A
    ld hl, s_write_off
    call expect

    ; period $7FF: a write N + 2 M-cycles after the trigger lands in byte N (N = 0..8)
    locked_write 0
    locked_write 1
    locked_write 2
    locked_write 3
    locked_write 4
    locked_write 5
    locked_write 6
    locked_write 7
    locked_write 8

    xor a
    ldh [rNR52], a
    jp finish

; expect_wave_byte: [HL] (wave RAM, CH3 stopped) must read B.  Clobbers A, HL.
expect_wave_byte:
    ld a, [hl]
    ld hl, s_dac_on_write
    jp expect

; check_locked: wave RAM (CH3 stopped) must be $00, $11, ... $FF but for byte B, which
; holds $2A: checks where $2A is ($FF: nowhere) against B, then that one byte changed.
; Clobbers all.
check_locked:
    xor a
    ld [SCRATCH], a             ; bytes changed
    ld hl, rWAVE
    ld c, 0                     ; byte index
    ld d, 0                     ; its pattern value
    ld e, $FF                   ; where $2A is
.next:
    ld a, [hl+]
    cp d
    jr z, .same
    push af
    ld a, [SCRATCH]
    inc a
    ld [SCRATCH], a
    pop af
.same:
    cp $2A
    jr nz, .other
    ld e, c
.other:
    ld a, d
    add $11
    ld d, a
    inc c
    ld a, c
    cp 16
    jr nz, .next
    ld a, e
    ld hl, s_locked
    call expect
    ld a, [SCRATCH]
    ld b, 1
    ld hl, s_locked_one
    jp expect

; fill_wave: wave RAM = $00, $11, ..., $FF (clobbers A, C, HL)
fill_wave:
    ld hl, rWAVE
    xor a
    ld c, 16
.loop:
    ld [hl+], a
    add $11
    dec c
    jr nz, .loop
    ret

s_dac_on_read: db "wave RAM DAC on, CH3 off", 0
s_fast_read:   db "wave RAM period 7FF, 16 T after trigger", 0
s_playing:     db "NR52 CH3 playing", 0
s_slow_read:   db "wave RAM period 7FE", 0
s_slow_reads:  db "wave RAM period 7FE reads not FF", 0
s_stopped:     db "NR52 CH3 DAC off", 0
s_lost_write:  db "wave RAM write while playing", 0
s_write_off:   db "wave RAM write CH3 off", 0
s_dac_on_write: db "wave RAM write DAC on, CH3 off", 0
s_locked:      db "wave RAM write while playing, period 7FF: the byte written (N NOPs = exp)", 0
s_locked_one:  db "wave RAM write while playing, period 7FF: bytes changed", 0
