; far_call.asm - MBC3 bank switches, far calls and POP AF as the first instructions of a frame,
; as Pokemon Red's VBlank handler makes them (Pan Docs: MBC3; CPU registers and flags).
;   Each frame's VBlank handler (the first code run after the frame's VBlank request), before
;   any other instruction of the frame:
;   - keeps the bank in HRAM, writes the ROM bank register ($2000) and calls $4000 at once:
;     the new bank's routine runs (each bank's returns its number * $11);
;   - pops $A5F7 into AF: A = $A5, F = $F0 (F's low nibble always reads 0);
;   - far calls the next bank's routine through an HRAM trampoline (the bank kept in HRAM at
;     hBank, pushed with PUSH AF, switched, called, popped and switched back);
;   - calls $4000 again without a switch: the trampoline's bank is back.
;   Then a TAC write that starts the timer with TIMA at $FE, 20 T after a DIV write: the timer
;   request is taken in the first pass of the loop that follows (Pan Docs: Timer; the write's
;   effect on the next event). 14 frames, each bank twice.
; For the emulator these pin what a run of its instruction loop caches: a write that can change
; the fetch's bank or the next event ends the run, and the next run reloads them; and POP AF's
; write-back into A and F (the machine kernel's CUDA shape lost both to Warp reading an unset
; variable: tests/test_warp_scope.py).
; Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "FAR CALL"
    cart_type $13                   ; MBC3+RAM+BATTERY
    rom_size $02                    ; 128 KiB: 8 banks
    ram_size $03
    include "testlib.asm"

FRAMES  EQU 14
PER     EQU 5                       ; readings per frame
wBank   EQU SCRATCH                 ; the bank this frame switches to (1..7)
wFrame  EQU SCRATCH + 1
wPtr    EQU SCRATCH + 2             ; 2 bytes: where the next reading goes
wTimer  EQU SCRATCH + 4             ; 1 once the timer's handler ran, then B there
wGot    EQU SCRATCH + $10           ; FRAMES * PER readings
hBank   EQU $FFB8                   ; the loaded bank, as the trampoline keeps it

main:
    ld sp, STACK_TOP
    call lib_init
    di
    ld hl, hram_src
    ld de, hram_far
    ld b, hram_end - hram_src
.copy:
    ld a, [hl+]
    ld [de], a
    inc e
    dec b
    jr nz, .copy
    ld de, on_vblank
    ld hl, HOOK_VBLANK
    call set_hook
    ld a, 1
    ld [wBank], a
    ldh [hBank], a
    ld [$2000], a
    xor a
    ld [wFrame], a
    ld a, low(wGot)
    ld [wPtr], a
    ld a, high(wGot)
    ld [wPtr + 1], a
    xor a
    ldh [rIF], a
    inc a
    ldh [rIE], a                    ; VBlank only
    ei
.frames:
    halt
    ld a, [wFrame]
    cp FRAMES
    jr c, .frames
    di

    ; a TAC write that starts the timer (TIMA $FE, 16 T a step, counted from a DIV write 20 T
    ; before): TIMA overflows 28 T after the write, the request follows one M-cycle later and
    ; is taken at the next instruction boundary, in the loop's first pass (B = 1)
    ld de, on_timer
    ld hl, HOOK_TIMER
    call set_hook
    ld a, $04
    ldh [rIE], a
    xor a
    ldh [rTMA], a
    ldh [rIF], a
    ld [wTimer], a
    ld a, $FE
    ldh [rTIMA], a
    ld b, 0
    ei
    ldh [rDIV], a
    ld a, $05                       ; 262144 Hz
    ldh [rTAC], a
.count:
    inc b
    ld a, [wTimer]
    or a
    jr z, .count
    di
    xor a
    ldh [rTAC], a

    ld hl, wGot
    ld de, expected
    ld bc, names
    call expect_table
    ld a, [wTimer + 1]
    ld b, 1
    ld hl, s_timer
    call expect
    jp finish

; the VBlank handler: nothing of the frame ran before it
on_vblank:
    push af
    push bc
    push de
    push hl
    ld a, [wPtr]
    ld l, a
    ld a, [wPtr + 1]
    ld h, a
    ld a, [wBank]
    ldh [hBank], a
    ld [$2000], a                   ; switch, then at once into the bank
    call $4000
    ld [hl+], a
    ld bc, $A5F7
    push bc
    pop af                          ; A = $A5, F = $F0
    ld [hl+], a
    push af
    pop bc
    ld a, c
    ld [hl+], a
    ld a, [wBank]
    cp 7
    jr nz, .next
    xor a
.next:
    inc a                           ; the next bank, through HRAM
    ld d, a
    call hram_far
    ld [hl+], a
    call $4000                      ; the trampoline switched back
    ld [hl+], a
    ld a, l
    ld [wPtr], a
    ld a, h
    ld [wPtr + 1], a
    ld a, d
    ld [wBank], a
    ld hl, wFrame
    inc [hl]
    pop hl
    pop de
    pop bc
    pop af
    reti

on_timer:
    ld a, b
    ld [wTimer + 1], a
    ld a, 1
    ld [wTimer], a
    reti

; hram_far: call $4000 in bank D from HRAM, then switch back to the bank in hBank. Returns its A.
hram_src:
    ldh a, [hBank]
    push af
    ld a, d
    ldh [hBank], a
    ld [$2000], a
    call $4000
    ld e, a
    pop af
    ldh [hBank], a
    ld [$2000], a
    ld a, e
    ret
hram_end:
hram_far EQU $FF80

expected:
FR = 0
    rept FRAMES
BK = FR % 7 + 1
    db BK * $11, $A5, $F0, BK % 7 * $11 + $11, BK * $11
FR = FR + 1
    endr
names:
    rept FRAMES
    dw s_bank, s_pop_a, s_pop_f, s_far, s_back
    endr
    dw 0
s_bank:  db "bank switched, then called", 0
s_pop_a: db "POP AF: A", 0
s_pop_f: db "POP AF: F", 0
s_far:   db "far call through HRAM", 0
s_back:  db "bank after the far call", 0
s_timer: db "timer request after a TAC write", 0

N = 1
    rept 7
    bank N
    org $4000
    ld a, N * $11
    ret
N = N + 1
    endr
