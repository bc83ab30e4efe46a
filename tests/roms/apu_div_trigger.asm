; apu_div_trigger.asm - SameSuite's apu/div_write_trigger and div_write_trigger_10, the two
; SameSuite APU tests a DMG passes (its apu/README: tested on DMG-B), as one ROM with the
; same cases: CH1's length timer against DIV-APU events made by DIV writes.
;   Each case: DIV reset, the APU powered off and on, NR11 = NR12 = $BF - n (length n + 1,
;   DAC on), NR14 = $C1 (trigger, length enabled), then k events (k = 0..15), each a DIV
;   write while DIV reads $10 (bit 4 set: a falling edge of bit 4, Pan Docs DIV-APU), and
;   NR52 read: $F1 while CH1 is on, $F0 once its length ran out.  n = 0..7.
;   div_write_trigger (powered on with DIV bit 4 clear): the first event is step 0 and the
;   lengths are clocked on steps 0, 2, 4, ...: length n + 1 runs out at event 2n + 1, so
;   NR52 = $F1 for k < 2n + 1.
;   div_write_trigger_10 (powered on while DIV reads $10): the first event is skipped, and
;   the trigger, made with the next event not clocking lengths, clocks the length once
;   (length 1 goes to 0 and the trigger reloads it with 63): length n + 1 (n >= 1) runs out
;   at event 2n; length 1 outlasts the 15 events.
;   SameSuite's expected tables are exactly these rules.

    title "APU_DIV_TRIGGER"
    include "testlib.asm"
    include "apu_lib.inc"

wMode EQU SCRATCH               ; 0: div_write_trigger, 1: div_write_trigger_10

main:
    ld sp, STACK_TOP
    call lib_init
    di
    xor a
.mode:
    ld [wMode], a
    ld b, 0                     ; n
.n:
    ld c, 0                     ; k
.k:
    push bc
    call run_case
    pop bc
    ld e, a                     ; got
    call expected               ; A = expected
    ld d, a
    ld a, e
    push bc
    ld b, d
    ld hl, s_case
    call expect
    pop bc
    jr z, .ok
    ld a, [wMode]               ; which case: mode, n, k
    call print_hex
    ld a, b
    call print_hex
    ld a, c
    call print_hex
    ld a, 10
    call print_char
.ok:
    inc c
    ld a, c
    cp 16
    jr nz, .k
    inc b
    ld a, b
    cp 8
    jr nz, .n
    ld a, [wMode]
    inc a
    cp 2
    jr nz, .mode
    xor a
    ldh [rNR52], a
    jp finish

; expected: A = the NR52 value for case (wMode, n = B, k = C). Preserves B, C.
expected:
    ld a, [wMode]
    and a
    ld a, b
    jr nz, .skip
    add a                       ; 2n + 1 > k  <=>  2n >= k
    cp c
    jr nc, .on
    jr .off
.skip:
    and a
    jr z, .on                   ; length 1: reloaded with 63
    add a                       ; 2n > k
    dec a
    cp c
    jr nc, .on
.off:
    ld a, $F0
    ret
.on:
    ld a, $F1
    ret

; run_case: one case (wMode, n = B, k = C); returns NR52.
run_case:
    xor a
    ldh [rDIV], a
    ld a, [wMode]
    and a
    jr z, .power
.wait10:                        ; (DIV reads $10 for 256 T: the events below start in it)
    ldh a, [rDIV]
    cp $10
    jr nz, .wait10
.power:
    xor a
    ldh [rNR52], a
    cpl
    ldh [rNR52], a
    ldh [rNR13], a
    ld a, $BF
    sub b
    ldh [rNR11], a
    ldh [rNR12], a
    ld a, $C1
    ldh [rNR14], a
    ld a, c
    and a
    jr z, .read
.event:
    ldh a, [rDIV]
    cp $10
    jr nz, .event
    ldh [rDIV], a
    dec c
    jr nz, .event
.read:
    ldh a, [rNR52]
    ret

s_case: db "NR52 div_write_trigger mode/n/k ", 0
