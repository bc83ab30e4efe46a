; serial_shift.asm - SB during an internal-clock transfer (Pan Docs: Serial
; Data Transfer, FF01 SB: "During a transfer, it has a blend of the outgoing
; and incoming bytes": each clock the leftmost bit goes out and the incoming
; bit, 1 with no partner, comes in on the right).
; The 8192 Hz clock edges fall every 128 M-cycles from a DIV reset (serial.asm
; shows the whole byte takes 8 x 128 = 1024 M from there), so a transfer
; started 5 M after a DIV reset has shifted k bits at d = 128k + 64:
;   '=' ($3D) reads $7B after 1 shift, $DF after 4, $7F after 6
;   (($3D << k) | (1 << k) - 1) & $FF.
; Serial output: "===" then the verdict.

    title "SERIAL_SHIFT"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    xor a
    ldh [rIE], a
    ld hl, cases
.next:
    ld a, [hl+]                 ; delay loop count; 0 ends
    or a
    jp z, finish
    ld c, a
    ld a, [hl+]                 ; expected SB
    ld b, a
    push hl
    push bc
    ld a, '='
    ldh [rSB], a
    xor a
    ldh [rDIV], a               ; d = 0
    ld a, $81
    ldh [rSC], a                ; d = 5
.wait:
    dec c                       ; 4*C - 1 M
    jr nz, .wait
    nop
    nop                         ; read at d = 5 + 4C - 1 + 2 + 3 = 4C + 9
    ldh a, [rSB]
    pop bc
    pop hl
    push hl
    call expect
    ld c, 0
.end:
    ldh a, [rSC]
    bit 7, a
    jr z, .done
    dec c
    jr nz, .end
.done:
    pop hl
.skip:
    ld a, [hl+]
    or a
    jr nz, .skip
    jr .next

; db C (read at d = 4C + 9), expected SB, name
cases:
    db 46, $7B, "SB after 1 shift (d=193)", 0
    db 142, $DF, "SB after 4 shifts (d=577)", 0
    db 206, $7F, "SB after 6 shifts (d=833)", 0
    db 0
