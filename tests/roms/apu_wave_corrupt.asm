; apu_wave_corrupt.asm - the wave RAM corruption of a CH3 retrigger on DMG (Pan Docs, Audio
; Details, and the gbdev wiki's "Gameboy sound hardware", obscure behaviour; the DMG timings
; are those of docboy-test-suite's ch3_corrupt_wave_period7 tests).
;   Triggering CH3 (NR34 bit 7) while it plays, in the M-cycle that ends 2 T-cycles before one
;   of its wave RAM reads, overwrites the start of wave RAM with what that read fetches: the
;   byte k it reads (sample n is byte n / 2), copied over byte 0 if k < 4, else the 4-byte-
;   aligned block holding k copied over bytes 0-3. The rest of wave RAM keeps its bytes.
;   Timing (apu_wave.asm): the first read (sample 1) is 6 + 2 * (2048 - period) T-cycles after
;   the NR34 write, then one every 2 * (2048 - period). Here the period is $7F9 (a read every
;   14 T: at 20, 34, 48, 62, ... T after the trigger) and the retrigger comes N M-cycles of NOPs
;   after the trigger's write: 4 * (N + 3) T-cycles later.
;     N = 2:  20 T, at a read (not 2 T before one): no corruption
;     N = 4, 6: 28 T and 36 T, 6 T before / 2 T after a read: none
;     N = 5:  32 T, 2 T before sample 2 (byte 1): byte 0 = $11
;     N = 12: 60 T, before sample 4 (byte 2): byte 0 = $22
;     N = 19: 88 T, before sample 6 (byte 3): byte 0 = $33
;     N = 26: 116 T, before sample 8 (byte 4): bytes 0-3 = bytes 4-7
;     N = 54: 228 T, before sample 16 (byte 8): bytes 0-3 = bytes 8-11
;     N = 82: 340 T, before sample 24 (byte 12): bytes 0-3 = bytes 12-15
;   Each case turns CH3 off with its DAC (NR30 = 0) at once and reads all 16 bytes back.

    title "APU_WAVE_CORRUPT"
    include "testlib.asm"
    include "apu_lib.inc"

; retrigger N, EXPECTED, NAME: fresh wave RAM ($00, $11, ..., $FF), trigger CH3 with period
; $7F9, N NOPs, trigger again, DAC off; wave RAM must read EXPECTED (16 bytes).
MACRO retrigger
    call ch3_start
    ldh [rNR34], a
    rept \1
    nop
    endr
    ldh [rNR34], a
    xor a
    ldh [rNR30], a
    ld hl, \2
    ld de, \3
    call check_wave
ENDM

main:
    ld sp, STACK_TOP
    call lib_init
    di
    retrigger 2, w_none, s_n2
    retrigger 4, w_none, s_n4
    retrigger 5, w_byte1, s_n5
    retrigger 6, w_none, s_n6
    retrigger 12, w_byte2, s_n12
    retrigger 19, w_byte3, s_n19
    retrigger 26, w_block4, s_n26
    retrigger 54, w_block8, s_n54
    retrigger 82, w_block12, s_n82
    xor a
    ldh [rNR52], a
    jp finish

; ch3_start: sound restarted, wave RAM filled, CH3 set up (DAC on, muted, period $7F9);
; A = $87, the NR34 value for the trigger and the retrigger.
ch3_start:
    call apu_restart
    ld hl, rWAVE
    xor a
    ld c, 16
.fill:
    ld [hl+], a
    add $11
    dec c
    jr nz, .fill
    ld a, $80
    ldh [rNR30], a
    xor a
    ldh [rNR32], a
    ld a, $F9
    ldh [rNR33], a
    ld a, $87
    ret

; check_wave: wave RAM against the 16 bytes at HL; the first difference is reported (expect)
; with the name at DE.
check_wave:
    ld c, $30
.next:
    ld b, [hl]
    inc hl
    ldh a, [c]
    cp b
    jr nz, .bad
    inc c
    ld a, c
    cp $40
    jr nz, .next
    ret
.bad:
    ld h, d
    ld l, e
    jp expect

w_none:    db $00, $11, $22, $33, $44, $55, $66, $77, $88, $99, $AA, $BB, $CC, $DD, $EE, $FF
w_byte1:   db $11, $11, $22, $33, $44, $55, $66, $77, $88, $99, $AA, $BB, $CC, $DD, $EE, $FF
w_byte2:   db $22, $11, $22, $33, $44, $55, $66, $77, $88, $99, $AA, $BB, $CC, $DD, $EE, $FF
w_byte3:   db $33, $11, $22, $33, $44, $55, $66, $77, $88, $99, $AA, $BB, $CC, $DD, $EE, $FF
w_block4:  db $44, $55, $66, $77, $44, $55, $66, $77, $88, $99, $AA, $BB, $CC, $DD, $EE, $FF
w_block8:  db $88, $99, $AA, $BB, $44, $55, $66, $77, $88, $99, $AA, $BB, $CC, $DD, $EE, $FF
w_block12: db $CC, $DD, $EE, $FF, $44, $55, $66, $77, $88, $99, $AA, $BB, $CC, $DD, $EE, $FF

s_n2:  db "wave RAM retrigger 20 T after trigger", 0
s_n4:  db "wave RAM retrigger 28 T after trigger", 0
s_n5:  db "wave RAM retrigger 32 T after trigger", 0
s_n6:  db "wave RAM retrigger 36 T after trigger", 0
s_n12: db "wave RAM retrigger 60 T after trigger", 0
s_n19: db "wave RAM retrigger 88 T after trigger", 0
s_n26: db "wave RAM retrigger 116 T after trigger", 0
s_n54: db "wave RAM retrigger 228 T after trigger", 0
s_n82: db "wave RAM retrigger 340 T after trigger", 0
