; interrupts.asm - IE/IF/IME and dispatch (Pan Docs: Interrupts, Interrupt
; Sources; CPU instruction EI).
;   IF bits 7-5 read 1; IE is a plain 8-bit register.
;   EI takes effect after the following instruction: "ei; di" lets nothing
;   in, "ei; nop; di" dispatches once.
;   Several pending: lowest bit first (VBlank, STAT, Timer, Serial, Joypad);
;   RETI re-enables IME at once so the next pending one follows; only IE bits
;   are taken, the others stay pending in IF.
;   RET from a handler leaves IME=0: the next pending interrupt waits.
;   Dispatch costs 5 M-cycles (2 wait, 2 push PC, 1 jump): measured as
;   ei (1) + nop (1) + dispatch (5) + jp at $50 (4) + jp in the WRAM hook (4).
; The LCD is switched off first so that no real VBlank/STAT request lands in
; the logs.

    title "INTERRUPTS"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    call lcd_off
    xor a
    ldh [rIE], a
    ldh [rIF], a

    ; --- register bits
    xor a
    ldh [rIF], a
    ldh a, [rIF]
    ld b, $E0
    ld hl, s_if0
    call expect
    ld a, $1F
    ldh [rIF], a
    ldh a, [rIF]
    ld b, $FF
    ld hl, s_if1f
    call expect
    ld a, $FF
    ldh [rIE], a
    ldh a, [rIE]
    ld b, $FF
    ld hl, s_ieff
    call expect
    ld a, $A5
    ldh [rIE], a
    ldh a, [rIE]
    ld b, $A5
    ld hl, s_iea5
    call expect
    xor a
    ldh [rIE], a
    ldh [rIF], a

    ; --- EI delay
    ld a, $04
    ldh [rIE], a
    ldh [rIF], a
    ei
    di
    ld a, [IRQ_COUNT]
    ld b, 0
    ld hl, s_eidi
    call expect
    ldh a, [rIF]
    ld b, $E4
    ld hl, s_eidi_if
    call expect
    ei
    nop
    di
    ld a, [IRQ_COUNT]
    ld b, 1
    ld hl, s_einopdi
    call expect
    ldh a, [rIF]
    ld b, $E0
    ld hl, s_einopdi_if
    call expect

    ; --- priority: all five pending, all enabled, handlers end with reti
    xor a
    ld [IRQ_COUNT], a
    ld a, $1F
    ldh [rIE], a
    ldh [rIF], a
    ei
    nop
    di
    ld a, [IRQ_COUNT]
    ld b, 5
    ld hl, s_prio_n
    call expect
    ld de, exp_prio
    ld c, 5
    ld hl, s_prio
    call expect_log
    ldh a, [rIF]
    ld b, $E0
    ld hl, s_prio_if
    call expect

    ; --- only enabled ones are taken
    xor a
    ld [IRQ_COUNT], a
    ld a, $14
    ldh [rIE], a
    ld a, $1F
    ldh [rIF], a
    ei
    nop
    di
    ld a, [IRQ_COUNT]
    ld b, 2
    ld hl, s_part_n
    call expect
    ld de, exp_part
    ld c, 2
    ld hl, s_part
    call expect_log
    ldh a, [rIF]
    ld b, $EB
    ld hl, s_part_if
    call expect

    ; --- RET (not RETI) leaves IME off
    ld hl, HOOK_TIMER
    ld de, handler_ret
    call set_hook
    xor a
    ld [IRQ_COUNT], a
    ld a, $0C
    ldh [rIE], a
    ldh [rIF], a
    ei
    nop
    nop
    nop
    di
    ld a, [IRQ_COUNT]
    ld b, 1
    ld hl, s_ret_n
    call expect
    ldh a, [rIF]
    ld b, $E8
    ld hl, s_ret_if
    call expect
    ei                          ; the serial one is still pending
    nop
    di
    ld a, [IRQ_COUNT]
    ld b, 2
    ld hl, s_ret_n2
    call expect
    xor a
    ldh [rIE], a
    ldh [rIF], a

    ; --- dispatch cost, exact (see the header)
    ld hl, HOOK_TIMER
    ld de, TIMED_INSTR + 2
    call set_hook
    ld a, $05
    ldh [rTAC], a
    ld de, t_empty
    call measure
    push hl
    ld de, t_dispatch
    call measure
    pop bc
    ld a, l
    sub c
    ld b, 15
    ld hl, s_dispatch
    call expect
    xor a
    ldh [rTAC], a
    ldh [rIE], a
    ldh [rIF], a
    jp finish

; handler_ret: count the interrupt, return with plain ret (IME stays 0).
handler_ret:
    push af
    push hl
    ld hl, IRQ_COUNT
    inc [hl]
    pop hl
    pop af
    ret

; expect_log: compare IRQ_LOG[0..C-1] with the bytes at DE; name HL.
expect_log:
    push hl
    ld hl, IRQ_LOG
.loop:
    ld a, [de]
    inc de
    cp [hl]
    inc hl
    jr nz, .bad
    dec c
    jr nz, .loop
    pop hl
    ret
.bad:
    pop hl
    jp fail_msg

t_empty:    db 0, 0, low(rTIMA), 0, 0
; pre: ld a,$04; ldh [IE],a; ldh [IF],a   code: ei; nop   post: pop de; ld hl,$FFFF; ld [hl],0
t_dispatch: db 6, $3E, $04, $E0, $FF, $E0, $0F, 0, low(rTIMA), 2, $FB, $00, 6, $D1, $21, $FF, $FF, $36, $00

exp_prio: db 0, 1, 2, 3, 4
exp_part: db 2, 4

s_if0:       db "IF after writing 00", 0
s_if1f:      db "IF after writing 1F", 0
s_ieff:      db "IE after writing FF", 0
s_iea5:      db "IE after writing A5", 0
s_eidi:      db "ei;di dispatched", 0
s_eidi_if:   db "IF after ei;di", 0
s_einopdi:   db "ei;nop;di count", 0
s_einopdi_if: db "IF after ei;nop;di", 0
s_prio_n:    db "priority count", 0
s_prio:      db "priority order not 0 1 2 3 4", 0
s_prio_if:   db "IF after priority", 0
s_part_n:    db "IE=14 count", 0
s_part:      db "IE=14 order not 2 4", 0
s_part_if:   db "IF after IE=14", 0
s_ret_n:     db "ret handler count", 0
s_ret_if:    db "IF after ret handler", 0
s_ret_n2:    db "count after second ei", 0
s_dispatch:  db "ei+nop+dispatch+2 jp cycles", 0
