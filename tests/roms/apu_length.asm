; apu_length.asm - NR52's channel flags, length timers and the DIV-APU frame sequencer
; (Pan Docs: Audio, Audio Registers, Audio Details; the DMG-verified expected values of
; SameSuite's apu/div_write_trigger and div_write_trigger_10 for the DIV-write events
; and the power-on skip; gbdev wiki "Gameboy sound hardware", obscure behaviour, for the
; extra length clock).
;   A DIV write while DIV bit 4 is set is one DIV-APU event; the frame sequencer clocks
;   the length timers on its even steps, and after power-on its first event is step 0.
;   NRx1 = 64 - n (NR31: 256 - n) clocks; NRx4 bit 6 enables the length; at 0 the channel
;   turns off (NR52 bit clear).  Trigger: on if the DAC is on (NRx2 & $F8, NR30 bit 7).
;   Powering on while DIV bit 4 is set skips the first event; a trigger with the length
;   enabled when the next event does not clock lengths clocks it once more (length 1:
;   the trigger then reloads 64 - 1 = 63); enabling the length (0 -> 1) without a trigger
;   there clocks it once, and reaching 0 that way turns the channel off.
;   The DAC turned off turns its channel off; a trigger with the DAC off does nothing.
;   DMG: the length timers take NRx1 writes while the APU is off.
;   Natural events: every 8192 T-cycles, where DIV's bit 4 falls (DIV $1F -> $20).

    title "APU_LENGTH"
    include "testlib.asm"
    include "apu_lib.inc"

main:
    ld sp, STACK_TOP
    call lib_init
    di

    ; CH1 length 1: on after the trigger, off after one event (step 0)
    call apu_restart
    ld a, $F0
    ldh [rNR12], a
    ld a, $3F
    ldh [rNR11], a
    ld a, $C0
    ldh [rNR14], a
    expect_nr52 $F1, s_len1_on
    call div_event
    expect_nr52 $F0, s_len1_off

    ; CH1 length 2: steps 0 (clock), 1, 2 (clock): off after the third event only
    call apu_restart
    ld a, $F0
    ldh [rNR12], a
    ld a, $3E
    ldh [rNR11], a
    ld a, $C0
    ldh [rNR14], a
    ld b, 2
    call div_events
    expect_nr52 $F1, s_len2_two
    call div_event
    expect_nr52 $F0, s_len2_three

    ; power-on with DIV bit 4 set: the first event is skipped and the trigger's extra
    ; clock takes length 2 to 1: on after 1 event, off after 2
    xor a
    ldh [rDIV], a
.wait10:
    ldh a, [rDIV]
    cp $10
    jr nz, .wait10
    call apu_power_cycle_ch1
    ld a, $3E
    ldh [rNR11], a
    ld a, $C0
    ldh [rNR14], a
    call div_event              ; (DIV still reads $10: the skipped event)
    expect_nr52 $F1, s_skip_one
    call div_event
    expect_nr52 $F0, s_skip_two

    ; ... and with length 1 the extra clock empties it, so the trigger loads 63: still on
    ; after 7 events (4 of them clock lengths)
    xor a
    ldh [rDIV], a
.wait10b:
    ldh a, [rDIV]
    cp $10
    jr nz, .wait10b
    xor a
    ldh [rNR52], a
    ld a, $80
    ldh [rNR52], a
    ld a, $F0
    ldh [rNR12], a
    ld a, $3F
    ldh [rNR11], a
    ld a, $C0
    ldh [rNR14], a
    ld b, 7
    call div_events
    expect_nr52 $F1, s_skip_63

    ; enabling the length without a trigger before an odd step clocks it once
    call apu_restart
    ld a, $F0
    ldh [rNR12], a
    ld a, $3E                   ; length 2
    ldh [rNR11], a
    ld a, $80                   ; trigger, length off
    ldh [rNR14], a
    call div_event              ; step 0 (length off: not clocked); the next is step 1
    ld a, $40
    ldh [rNR14], a              ; enabled: 2 -> 1, still on
    expect_nr52 $F1, s_extra_one
    xor a
    ldh [rNR14], a
    ld a, $40
    ldh [rNR14], a              ; enabled again: 1 -> 0, off
    expect_nr52 $F0, s_extra_zero

    ; CH2, CH3 (256 - n), CH4 length 1
    call apu_restart
    ld a, $F0
    ldh [rNR22], a
    ldh [rNR42], a
    ld a, $80
    ldh [rNR30], a
    ld a, $3F
    ldh [rNR21], a
    ldh [rNR41], a
    ld a, $FF
    ldh [rNR31], a
    ld a, $C0
    ldh [rNR24], a
    ldh [rNR34], a
    ldh [rNR44], a
    expect_nr52 $FE, s_ch234_on
    call div_event
    expect_nr52 $F0, s_ch234_off

    ; CH3 length 256 - $FE = 2 survives one event
    call apu_restart
    ld a, $80
    ldh [rNR30], a
    ld a, $FE
    ldh [rNR31], a
    ld a, $C0
    ldh [rNR34], a
    call div_event
    expect_nr52 $F4, s_ch3_len2

    ; DACs: off turns the channel off; a trigger with the DAC off leaves it off
    call apu_restart
    ld a, $F0
    ldh [rNR22], a
    ld a, $80
    ldh [rNR24], a
    expect_nr52 $F2, s_dac_on
    ld a, $08                   ; volume 0, increasing: the DAC stays on
    ldh [rNR22], a
    expect_nr52 $F2, s_dac_08
    xor a
    ldh [rNR22], a
    expect_nr52 $F0, s_dac_off
    ld a, $80
    ldh [rNR24], a
    expect_nr52 $F0, s_dac_trigger
    ld a, $80
    ldh [rNR30], a
    ldh [rNR34], a
    expect_nr52 $F4, s_ch3_on
    xor a
    ldh [rNR30], a
    expect_nr52 $F0, s_ch3_dac_off

    ; DMG: the length timer takes NRx1 while the APU is off
    call apu_restart
    xor a
    ldh [rNR11], a              ; length 64
    ldh [rNR52], a              ; off
    ld a, $3F
    ldh [rNR11], a              ; length 1, written while off
    xor a
    ldh [rDIV], a
    ld a, $80
    ldh [rNR52], a
    ld a, $F0
    ldh [rNR12], a
    ld a, $C0
    ldh [rNR14], a              ; (not 0: no reload)
    call div_event
    expect_nr52 $F0, s_off_len

    ; natural events: length 1 ends where DIV's bit 4 first falls ($1F -> $20)
    call apu_restart
    ld a, $F0
    ldh [rNR12], a
    ld a, $3F
    ldh [rNR11], a
    ld a, $C0
    ldh [rNR14], a
.wait1f:
    ldh a, [rDIV]
    cp $1F
    jr nz, .wait1f
    expect_nr52 $F1, s_nat_before
.wait20:
    ldh a, [rDIV]
    cp $20
    jr nz, .wait20
    expect_nr52 $F0, s_nat_after

    xor a
    ldh [rNR52], a
    jp finish

s_len1_on:     db "NR52 CH1 length 1 triggered", 0
s_len1_off:    db "NR52 CH1 length 1 after 1 event", 0
s_len2_two:    db "NR52 CH1 length 2 after 2 events", 0
s_len2_three:  db "NR52 CH1 length 2 after 3 events", 0
s_skip_one:    db "NR52 power-on skip, length 2, 1 event", 0
s_skip_two:    db "NR52 power-on skip, length 2, 2 events", 0
s_skip_63:     db "NR52 power-on skip, length 1 reloaded 63", 0
s_extra_one:   db "NR52 length enabled before odd step", 0
s_extra_zero:  db "NR52 length enabled again to 0", 0
s_ch234_on:    db "NR52 CH2-4 triggered", 0
s_ch234_off:   db "NR52 CH2-4 length 1 after 1 event", 0
s_ch3_len2:    db "NR52 CH3 length 2 after 1 event", 0
s_dac_on:      db "NR52 CH2 on", 0
s_dac_08:      db "NR52 CH2 NR22=08 DAC on", 0
s_dac_off:     db "NR52 CH2 DAC off", 0
s_dac_trigger: db "NR52 CH2 trigger with DAC off", 0
s_ch3_on:      db "NR52 CH3 on", 0
s_ch3_dac_off: db "NR52 CH3 NR30=00", 0
s_off_len:     db "NR52 length written while off", 0
s_nat_before:  db "NR52 DIV=1F length 1", 0
s_nat_after:   db "NR52 DIV=20 length 1", 0
