; apu_sweep.asm - CH1's period sweep as NR52 shows it (Pan Docs: NR10, Audio Details
; "Pulse channel with sweep"; gbdev wiki "Gameboy sound hardware", obscure behaviour).
;   Trigger: shadow = period; with a non-zero step the overflow check runs at once
;   (period + period >> step > $7FF: CH1 off), even with pace 0.
;   An iteration (sweep clock on frame sequencer steps 2 and 6, every `pace` clocks):
;   new = shadow +- shadow >> step; above $7FF: off; else written back and checked
;   again (off if the next one would overflow).  Subtraction never turns CH1 off, but
;   clearing NR10's direction bit after a subtraction was computed turns it off.
; Events are DIV writes (apu_lib.inc); after power-on they run steps 0, 1, 2, ...

    title "APU_SWEEP"
    include "testlib.asm"
    include "apu_lib.inc"

; sweep_trigger NR10, PERIOD: restart the APU, CH1 DAC on, NR10, then trigger CH1 with
; PERIOD (length off).
MACRO sweep_trigger
    call apu_restart
    ld a, $F0
    ldh [rNR12], a
    ld a, \1
    ldh [rNR10], a
    ld a, low(\2)
    ldh [rNR13], a
    ld a, $80 | high(\2)
    ldh [rNR14], a
ENDM

main:
    ld sp, STACK_TOP
    call lib_init
    di

    ; trigger-time check: $7FF + $3FF overflows at once (pace 0)
    sweep_trigger $01, $7FF
    expect_nr52 $F0, s_trig_over
    ; $400 + $200 = $600 does not; pace 0: no iterations, on for good
    sweep_trigger $01, $400
    expect_nr52 $F1, s_trig_ok
    ld b, 8
    call div_events
    expect_nr52 $F1, s_pace0

    ; pace 1: the first iteration (step 2, the 3rd event) writes $600 and its
    ; second check ($600 + $300) turns CH1 off
    sweep_trigger $11, $400
    ld b, 2
    call div_events
    expect_nr52 $F1, s_it_before
    call div_event
    expect_nr52 $F0, s_it_after

    ; pace 2, step 2: the sweep clocks on steps 2 and 6, every second one iterates:
    ; $400 -> $500 (check $640) at event 7, $500 -> $640 (check $7D0) at event 15,
    ; then $640 -> $7D0 whose check ($7D0 + $1F4) overflows at event 23
    sweep_trigger $22, $400
    ld b, 7
    call div_events
    expect_nr52 $F1, s_p2_one
    ld b, 8
    call div_events
    expect_nr52 $F1, s_p2_two
    ld b, 7
    call div_events
    expect_nr52 $F1, s_p2_three
    call div_event
    expect_nr52 $F0, s_p2_four

    ; subtraction: never off
    sweep_trigger $19, $7FF
    ld b, 16
    call div_events
    expect_nr52 $F1, s_sub
    ; ... but clearing the direction bit after it computed one turns CH1 off
    ld a, $11
    ldh [rNR10], a
    expect_nr52 $F0, s_sub_clear
    ; (not before any subtraction: step 0 computes none at the trigger)
    sweep_trigger $18, $400
    ld a, $10
    ldh [rNR10], a
    expect_nr52 $F1, s_sub_none

    ; CH1 turned off by an overflow: its sweep goes on iterating and writing the period
    ; back (only the sweep's own enabled flag, set at the trigger, gates it: gbdev wiki;
    ; SameBoy, gambatte). $700 step 1 overflows at the trigger; with NR10 then pace 1 step 7
    ; and NR13 = $FF, a trigger would overflow ($7FF + $F) unless step 2's iteration has
    ; written $700 + $E = $70E back ($70E + $E fits): on again.
    sweep_trigger $11, $700
    expect_nr52 $F0, s_off_over
    call step7_retrigger
    expect_nr52 $F1, s_off_iter
    ; ... but powering the APU off resets the sweep: the same with a power cycle before
    ; NR10 is written, and nothing is written back: $7FF + $F overflows, off at once
    sweep_trigger $11, $700
    call apu_power_cycle_ch1
    call step7_retrigger
    expect_nr52 $F0, s_power_sweep

    xor a
    ldh [rNR52], a
    jp finish

s_trig_over: db "NR52 sweep $7FF step 1 at trigger", 0
s_trig_ok:   db "NR52 sweep $400 step 1 at trigger", 0
s_pace0:     db "NR52 sweep pace 0 after 8 events", 0
s_it_before: db "NR52 sweep pace 1 after 2 events", 0
s_it_after:  db "NR52 sweep pace 1 after 3 events", 0
s_p2_one:    db "NR52 sweep pace 2 after 7 events", 0
s_p2_two:    db "NR52 sweep pace 2 after 15 events", 0
s_p2_three:  db "NR52 sweep pace 2 after 22 events", 0
s_p2_four:   db "NR52 sweep pace 2 after 23 events", 0
s_sub:       db "NR52 sweep subtracting", 0
s_sub_clear: db "NR52 sweep direction cleared", 0
; step7_retrigger: NR10 = pace 1 step 7, NR13 = $FF, three DIV-APU events (steps 0-2: one
; sweep clock), then trigger CH1 with NR14 = $87.  Clobbers A, B.
step7_retrigger:
    ld a, $17
    ldh [rNR10], a
    ld a, $FF
    ldh [rNR13], a
    ld b, 3
    call div_events
    ld a, $87
    ldh [rNR14], a
    ret

s_sub_none:  db "NR52 sweep direction cleared unused", 0
s_off_over:  db "NR52 sweep $700 step 1 at trigger", 0
s_off_iter:  db "NR52 retrigger after the sweep of CH1 off wrote $70E", 0
s_power_sweep: db "NR52 retrigger after a power cycle ($7FF step 7)", 0
