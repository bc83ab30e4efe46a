; apu_lazy.asm - NR52 after the frame sequencer's own (natural) DIV-APU events, with the
; writes a sound driver makes most between them (Pan Docs: Audio Registers, Audio Details;
; the rules apu_length.asm checks with DIV-write events).
;   Events here come from DIV itself: one where DIV's bit 4 falls (DIV $1F -> $20, every
;   8192 T-cycles); the ROM only reads DIV to wait for them. Between the events it writes
;   NRx2 (DAC on), NRx3, NRx1 (a length load while that length is disabled) and NRx4
;   triggers that leave the length disabled: those writes change nothing the frame
;   sequencer does to the other channels, nor (length disabled) to their own channel.
;   (For the emulator: the writes it takes without catching the sound unit up first,
;   emu/apu.py quick_write; the reads after them must see every event.)
;   - CH1 length 2 enabled: steps 0 (clock), 1, 2 (clock) -> off after the third event,
;     read once after 2 events and once after 3 with no read in between; CH2 (length
;     disabled) retriggered between the events stays on.
;   - CH2 length 1 loaded and triggered with the length disabled: events clock nothing;
;     enabling the length (no trigger) before an even step leaves 1 (off at that step),
;     before an odd step clocks it once more: 0, off at once.
;   - CH1 triggered with the sweep off (NR10 = 0) between events, while CH2's length-1
;     timer runs out at step 0.

    title "APU_LAZY"
    include "testlib.asm"
    include "apu_lib.inc"

main:
    ld sp, STACK_TOP
    call lib_init
    di

    ; CH1 length 2 enabled; CH2 retriggered between events (length disabled)
    call apu_restart
    ld a, $F0
    ldh [rNR12], a
    ldh [rNR22], a
    ld a, $3E
    ldh [rNR11], a
    ld a, $C0
    ldh [rNR14], a
    ld a, $80
    ldh [rNR24], a
    ld b, $20
    call wait_div               ; event 1 (step 0): CH1 length 1
    ld a, $80
    ldh [rNR24], a
    ld b, $40
    call wait_div               ; event 2 (step 1)
    ld a, $F0
    ldh [rNR22], a
    expect_nr52 $F3, s_len2_two
    call apu_restart            ; again, without the read after 2 events
    ld a, $F0
    ldh [rNR12], a
    ldh [rNR22], a
    ld a, $3E
    ldh [rNR11], a
    ld a, $C0
    ldh [rNR14], a
    ld a, $80
    ldh [rNR24], a
    ld b, $20
    call wait_div
    ld a, $80
    ldh [rNR24], a
    ld b, $40
    call wait_div
    ld a, $F0
    ldh [rNR22], a
    ld a, $12
    ldh [rNR23], a
    ld b, $60
    call wait_div               ; event 3 (step 2): CH1 length 0
    ld a, $80
    ldh [rNR24], a
    expect_nr52 $F2, s_len2_three

    ; CH2 length 1 loaded and triggered, length disabled; enabled before step 2
    call apu_restart
    ld a, $F0
    ldh [rNR22], a
    ld a, $3F
    ldh [rNR21], a
    ld a, $80
    ldh [rNR24], a
    ld b, $20
    call wait_div               ; step 0 (nothing: disabled)
    ld a, $3F
    ldh [rNR21], a              ; (loaded again while disabled)
    ld b, $40
    call wait_div               ; step 1
    ld a, $40
    ldh [rNR24], a              ; enabled, next step 2 clocks: no extra clock
    expect_nr52 $F2, s_en_even
    ld b, $60
    call wait_div               ; step 2: 0
    expect_nr52 $F0, s_en_even_off

    ; the same enabled before step 1: the extra clock takes it to 0
    call apu_restart
    ld a, $F0
    ldh [rNR22], a
    ld a, $3F
    ldh [rNR21], a
    ld a, $80
    ldh [rNR24], a
    ld b, $20
    call wait_div               ; step 0
    ld a, $40
    ldh [rNR24], a
    expect_nr52 $F0, s_en_odd

    ; CH1 triggered with the sweep off between events; CH2 length 1 runs out at step 0
    call apu_restart
    xor a
    ldh [rNR10], a
    ld a, $F0
    ldh [rNR12], a
    ldh [rNR22], a
    xor a
    ldh [rNR13], a
    ld a, $87
    ldh [rNR14], a
    ld a, $3F
    ldh [rNR21], a
    ld a, $C0
    ldh [rNR24], a
    ld b, $20
    call wait_div               ; step 0: CH2 off
    ld a, $55
    ldh [rNR13], a
    ld a, $87
    ldh [rNR14], a
    expect_nr52 $F1, s_ch1_sweep_off

    xor a
    ldh [rNR52], a
    jp finish

; wait_div: until DIV reads B. Clobbers A.
wait_div:
    ldh a, [rDIV]
    cp b
    jr nz, wait_div
    ret

s_len2_two:      db "NR52 CH1 length 2, CH2 retriggered, 2 events", 0
s_len2_three:    db "NR52 CH1 length 2, CH2 retriggered, 3 events", 0
s_en_even:       db "NR52 CH2 length 1 enabled before step 2", 0
s_en_even_off:   db "NR52 CH2 length 1 after step 2", 0
s_en_odd:        db "NR52 CH2 length 1 enabled before step 1", 0
s_ch1_sweep_off: db "NR52 CH1 retriggered, CH2 out at step 0", 0
