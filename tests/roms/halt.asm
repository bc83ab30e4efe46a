; halt.asm - HALT (Pan Docs: halt, halt bug).
;   IME=0, nothing pending: HALT waits until IE&IF != 0, then continues
;   without dispatching (IF keeps the bit).
;   Wake-up time: a timer overflow 16 TIMA steps (TAC=$04: 256 M each) after
;   a DIV reset wakes the CPU at d = 4096 M, so DIV then reads $40.
;   IME=1: the handler runs, then execution continues after HALT.
;   HALT bug: IME=0 with IE&IF != 0 already: HALT ends at once and the byte
;   after it is read twice ("halt; inc b" increments twice; "halt; ld a,$14"
;   runs "ld a,$3E" then "inc d").
;   "ei; halt" with an interrupt pending: the interrupt is serviced, the
;   handler returns to the HALT, which waits again for the next one.
; The LCD is switched off first so no VBlank/STAT request interferes.

    title "HALT"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    call lcd_off
    xor a
    ldh [rIE], a
    ldh [rIF], a

    ; --- IME=0: wake without dispatch
    ld a, $04
    ldh [rIE], a
    ld a, $05
    ldh [rTAC], a
    xor a
    ldh [rTMA], a
    ldh [rIF], a
    ld a, $F0
    ldh [rTIMA], a
    halt
    nop
    ldh a, [rTIMA]              ; reloaded with TMA=0 a few M-cycles ago
    ld c, a
    ldh a, [rIF]
    ld b, $E4
    ld hl, s_wake_if
    call expect
    ld a, [IRQ_COUNT]
    ld b, 0
    ld hl, s_wake_n
    call expect
    ld a, c
    cp 3
    sbc a                       ; $FF when TIMA < 3
    ld b, $FF
    ld hl, s_wake_tima
    call expect

    ; --- wake-up time measured with DIV
    ld a, $04
    ldh [rTAC], a
    xor a
    ldh [rIF], a
    ld a, $F0
    ldh [rDIV], a               ; d = 0
    ldh [rTIMA], a              ; d = 3; 16 steps of 256 M: overflow at d = 4096
    halt
    nop
    ldh a, [rDIV]
    ld b, $40
    ld hl, s_wake_div
    call expect

    ; --- IME=1: dispatch, then continue after HALT
    xor a
    ld [IRQ_COUNT], a
    ldh [rIF], a
    ld a, $05
    ldh [rTAC], a
    ld a, $F0
    ldh [rTIMA], a
    ld b, 0
    ei
    halt
    inc b
    di
    ld a, b
    ld b, 1
    ld hl, s_ime_b
    call expect
    ld a, [IRQ_COUNT]
    ld b, 1
    ld hl, s_ime_n
    call expect
    ld a, [IRQ_LOG]
    ld b, 2
    ld hl, s_ime_vec
    call expect

    ; --- HALT bug: the next byte is read twice
    xor a
    ldh [rTAC], a
    ld [IRQ_COUNT], a
    ld a, $04
    ldh [rIF], a                ; pending and enabled, IME=0
    ld b, 0
    halt
    inc b
    ld a, b
    ld b, 2
    ld hl, s_bug_inc
    call expect
    ld d, 0
    halt
    db $3E, $14                 ; ld a, $14 -> ld a, $3E; inc d
    ld b, $3E
    ld hl, s_bug_lda
    call expect
    ld a, d
    ld b, 1
    ld hl, s_bug_incd
    call expect
    ld a, [IRQ_COUNT]
    ld b, 0
    ld hl, s_bug_n
    call expect
    ldh a, [rIF]
    ld b, $E4
    ld hl, s_bug_if
    call expect

    ; --- ei; halt with one pending: serviced, HALT runs again, the next
    ; overflow (TIMA $80 -> 512 M, well after the first handler) ends it
    xor a
    ld [IRQ_COUNT], a
    ldh [rTMA], a
    ld a, $80
    ldh [rTIMA], a
    ld a, $05
    ldh [rTAC], a
    ld a, $04
    ldh [rIF], a
    ld b, 0
    ei
    halt
    inc b
    di
    ld a, b
    ld b, 1
    ld hl, s_eih_b
    call expect
    ld a, [IRQ_COUNT]
    ld b, 2
    ld hl, s_eih_n
    call expect

    xor a
    ldh [rTAC], a
    ldh [rIE], a
    ldh [rIF], a
    jp finish

s_wake_if:   db "IF after halt wake (IME=0)", 0
s_wake_n:    db "dispatches after halt wake (IME=0)", 0
s_wake_tima: db "TIMA<3 after wake", 0
s_wake_div:  db "DIV at wake after 4096 M", 0
s_ime_b:     db "inc b runs once after halt (IME=1)", 0
s_ime_n:     db "dispatches, halt IME=1", 0
s_ime_vec:   db "vector, halt IME=1", 0
s_bug_inc:   db "halt bug: inc b twice", 0
s_bug_lda:   db "halt bug: ld a,$3E", 0
s_bug_incd:  db "halt bug: then inc d", 0
s_bug_n:     db "halt bug dispatches", 0
s_bug_if:    db "IF after halt bug", 0
s_eih_b:     db "ei;halt pending: inc b", 0
s_eih_n:     db "ei;halt pending: dispatches", 0
