; joypad.asm - P1/JOYP (Pan Docs: Joypad Input).
; Button script the harness must apply: nothing pressed for frames 0-19, then
; Right + A + Start held (VecGameBoy mask $91) until the end.
;   P1 bits 7-6 read 1, bits 5-4 read back what was written (0 = group
;   selected: bit 4 the d-pad, bit 5 the buttons), bits 3-0 are active low:
;   the AND of the selected groups; with no group selected they read 1.
;   Released: $30->$FF, $20->$EF, $10->$DF, $00->$CF; writes to bits 3-0 are
;   ignored ($0F->$CF).
;   Held Right (d-pad bit 0), A (bit 0), Start (bit 3):
;   $20->$EE, $10->$D6, $00->$C6, $30->$FF.
;   A press (a selected line going low) requests the joypad interrupt ($60).

    title "JOYPAD"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    xor a
    ldh [rIE], a
    ldh [rIF], a

    ld hl, released
    call check_table

    ; --- wait for the press (frame 20) by its interrupt, ~100 frames at most
    ld a, $00
    ldh [rP1], a                ; both groups selected
    xor a
    ldh [rIF], a
    ld [IRQ_COUNT], a
    ld a, $10
    ldh [rIE], a
    ei
    ld d, 2
    ld bc, 0
.wait:
    ld a, [IRQ_COUNT]
    or a
    jr nz, .pressed
    dec bc
    ld a, b
    or c
    jr nz, .wait
    dec d
    jr nz, .wait
.pressed:
    di
    xor a
    ldh [rIE], a
    ld a, [IRQ_COUNT]
    ld b, 1
    ld hl, s_irq_n
    call expect
    ld a, [IRQ_LOG]
    ld b, 4
    ld hl, s_irq_vec
    call expect

    ld hl, held
    call check_table
    jp finish

; check_table: for each (write, expected, name...) entry at HL until write=$FF:
; write P1, read it back, compare.
check_table:
    ld a, [hl+]
    cp $FF
    ret z
    ldh [rP1], a
    ld a, [hl+]
    ld b, a
    ldh a, [rP1]
    ldh a, [rP1]                ; settle: read twice as games do
    push hl
    call expect
    pop hl
.skip:
    ld a, [hl+]
    or a
    jr nz, .skip
    jr check_table

released:
    db $30, $FF, "P1 released, write 30", 0
    db $20, $EF, "P1 released, write 20", 0
    db $10, $DF, "P1 released, write 10", 0
    db $00, $CF, "P1 released, write 00", 0
    db $0F, $CF, "P1 released, write 0F", 0
    db $FF
held:
    db $20, $EE, "P1 Right+A+Start, write 20", 0
    db $10, $D6, "P1 Right+A+Start, write 10", 0
    db $00, $C6, "P1 Right+A+Start, write 00", 0
    db $30, $FF, "P1 Right+A+Start, write 30", 0
    db $FF

s_irq_n:   db "joypad irq count", 0
s_irq_vec: db "joypad irq vector", 0
