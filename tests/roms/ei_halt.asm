; ei_halt.asm - "ei" right before "halt" with an interrupt already requested (Pan Docs,
; halt: the halt bug; EI's effect is delayed by one instruction).  IME is still 0 as
; HALT runs, yet the request is serviced: the handler is called with the HALT's own
; address pushed, returns to the HALT, which runs again and waits for the next
; interrupt; the byte after HALT is not read twice (no halt bug).
; Here: the LCD off, IE = VBlank | timer, the VBlank request set by hand, the timer
; requesting later.  Expected: the VBlank handler first, then the timer's, and only
; then the instruction after HALT, once.

    title "EI_HALT"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    call lcd_off
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    ldh [rTMA], a
    ld a, $04                   ; timer on, 4096 Hz: the overflow is ~1 frame away
    ldh [rTAC], a
    ld a, $05
    ldh [rIE], a
    ld a, $01
    ldh [rIF], a                ; VBlank requested
    ld c, 0
    ei
    halt
    inc c
    di
    ld a, [IRQ_COUNT]
    ld d, a
    ld a, c
    ld b, 1
    ld hl, s_once
    call expect
    ld a, d
    ld b, 2
    ld hl, s_count
    call expect
    ld a, [IRQ_LOG]
    ld b, 0
    ld hl, s_first
    call expect
    ld a, [IRQ_LOG + 1]
    ld b, 2
    ld hl, s_second
    call expect
    xor a
    ldh [rTAC], a
    jp finish

s_once:   db "ei/halt: instruction after halt runs", 0
s_count:  db "ei/halt: interrupts before it", 0
s_first:  db "ei/halt: first interrupt (VBlank)", 0
s_second: db "ei/halt: second interrupt (timer)", 0
