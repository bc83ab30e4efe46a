; ppu_sprite_timing.asm - how objects lengthen mode 3, to the M-cycle (DMG).
;
; Pan Docs ("Mode 3 length"): each object on the line delays mode 3's end by 6 to 11
; dots, depending on where it falls against the background's 8-pixel tiles; X >= 168
; (off screen to the right) costs nothing. The exact extra M-cycles for each case
; below - 1 to 10 objects, at X = 0..169, stacked, split in two groups, 8 pixels
; apart, in any OAM order - are the DMG results of mooneye-gb's
; intr_2_mode0_timing_sprites (verified on DMG); the measurement is timed the same:
; the objects (Y = $52: lines $42-$49, 8x8) are set with the LCD off; then, halted,
; the mode-2 request of line $43 returns through 41 + extra NOPs (STAT then reads
; mode 0 at the first of an "inc b; ldh a,[STAT]; and 3" loop's passes: B = 1) and
; through 40 + extra NOPs (B = 2).
; Prints PASS, or "FAIL sprites case NN got XX exp YY" (B in the second round, or
; B + $10 in the first).

    title "PPU OBJ TIMING"
    include "testlib_defs.inc"

    org $0048
    add sp, 2                   ; STAT: drop the return address into the halted
    ret                         ; routine; return to the address pushed before it

    org $0100
    nop
    jp main

    org $0150
    include "testlib_body.inc"

wCase   EQU SCRATCH             ; case number
wPtr    EQU SCRATCH + 1         ; 2 bytes: the case table
wExtra  EQU SCRATCH + 3
wNopsA  EQU SCRATCH + $10       ; 41 + extra NOPs, ret (up to 70 bytes)
wNopsB  EQU SCRATCH + $60       ; 40 + extra NOPs, ret
wName   EQU SCRATCH + $B0       ; "sprites case NN", built for a failure

; count_mode0: B = passes of "inc b; ldh a,[STAT]; and 3" until mode 0 shows
MACRO count_mode0
    ld b, 0
.pass\@:
    inc b
    ldh a, [rSTAT]
    and 3
    jr nz, .pass\@
ENDM

main:
    ld sp, STACK_TOP
    call lib_init
    ld a, $02
    ldh [rIE], a
    xor a
    ld [wCase], a
    ld hl, cases
.case:
    ld a, [hl]
    cp $FF
    jp z, finish
    ld [wExtra], a
    inc hl
    push hl
    call lcd_off
    call set_objects            ; HL: count, X...; returns HL past them
    ld a, l
    ld [wPtr], a
    ld a, h
    ld [wPtr + 1], a
    pop hl
    ld a, [wExtra]
    add 41
    ld c, a
    ld hl, wNopsA
    call nop_run
    ld a, [wExtra]
    add 40
    ld c, a
    ld hl, wNopsB
    call nop_run
    ld a, $93                   ; LCD, objects, BG on
    ldh [rLCDC], a
    ld hl, .after_a
    push hl
    ld hl, wNopsA
    push hl
    jp halt_for_mode2
.after_a:
    count_mode0
    ld a, b
    cp 1
    jr z, .round_b
    add $10
    ld b, 1 + $10
    call case_fail
.round_b:
    ld hl, .after_b
    push hl
    ld hl, wNopsB
    push hl
    jp halt_for_mode2
.after_b:
    count_mode0
    ld a, b
    cp 2
    jr z, .next
    ld b, 2
    call case_fail
.next:
    ld hl, wCase
    inc [hl]
    ld a, [wPtr]
    ld l, a
    ld a, [wPtr + 1]
    ld h, a
    jp .case

; case_fail: "FAIL sprites case <wCase> got A exp B"
case_fail:
    push af
    push bc
    ld hl, wName
    ld de, s_case
    ld c, 13
    call copy
    ld a, [wCase]
    call hex_to_name
    xor a
    ld [hl], a
    pop bc
    pop af
    ld hl, wName
    jp expect

; hex_to_name: A as two hex digits at HL+.
hex_to_name:
    push af
    swap a
    call .digit
    pop af
.digit:
    and $0F
    add '0'
    cp '9' + 1
    jr c, .store
    add 'A' - '9' - 1
.store:
    ld [hl+], a
    ret

; set_objects: OAM cleared, then [HL] objects at Y = $52 with the X values after it.
set_objects:
    push hl
    ld hl, $FE00
    ld c, 160
    xor a
.clear:
    ld [hl+], a
    dec c
    jr nz, .clear
    pop hl
    ld a, [hl+]
    ld c, a
    ld de, $FE00
    ld b, $30                   ; tile numbers
.obj:
    ld a, $52
    ld [de], a
    inc de
    ld a, [hl+]
    ld [de], a
    inc de
    ld a, b
    ld [de], a
    inc de
    inc b
    xor a
    ld [de], a
    inc de
    dec c
    jr nz, .obj
    ret

; nop_run: C NOPs then ret at HL.
nop_run:
    xor a
.n:
    ld [hl+], a
    dec c
    jr nz, .n
    ld a, $C9
    ld [hl], a
    ret

; halt_for_mode2: on line $42, after mode 3 started, enable the mode-2 source, clear
; IF, EI, HALT; the handler returns to the address on the stack.
halt_for_mode2:
    ldh a, [rLY]
    cp $42
    jr nz, halt_for_mode2
.m0:
    ldh a, [rSTAT]
    and 3
    jr nz, .m0
.m3:
    ldh a, [rSTAT]
    and 3
    cp 3
    jr nz, .m3
    ld a, $20
    ldh [rSTAT], a
    xor a
    ldh [rIF], a
    ei
    halt
    nop
    di
    ld hl, s_halt
    call fail_msg
    jp finish

s_halt: db "halt woke no handler", 0
s_case: db "sprites case "

; the cases: extra M-cycles, object count, X of each object; $FF ends
cases:
    db 2, 1, 0
    db 4, 2, 0, 0
    db 5, 3, 0, 0, 0
    db 7, 4, 0, 0, 0, 0
    db 8, 5, 0, 0, 0, 0, 0
    db 10, 6, 0, 0, 0, 0, 0, 0
    db 11, 7, 0, 0, 0, 0, 0, 0, 0
    db 13, 8, 0, 0, 0, 0, 0, 0, 0, 0
    db 14, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0
    db 16, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    db 16, 10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
    db 15, 10, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2
    db 15, 10, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3
    db 15, 10, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4
    db 15, 10, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5
    db 15, 10, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6
    db 15, 10, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7
    db 16, 10, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8
    db 16, 10, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9
    db 15, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10
    db 15, 10, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11
    db 15, 10, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12
    db 15, 10, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13
    db 15, 10, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14
    db 15, 10, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15
    db 16, 10, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16
    db 16, 10, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17
    db 16, 10, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32
    db 16, 10, 33, 33, 33, 33, 33, 33, 33, 33, 33, 33
    db 16, 10, 160, 160, 160, 160, 160, 160, 160, 160, 160, 160
    db 16, 10, 161, 161, 161, 161, 161, 161, 161, 161, 161, 161
    db 15, 10, 162, 162, 162, 162, 162, 162, 162, 162, 162, 162
    db 15, 10, 167, 167, 167, 167, 167, 167, 167, 167, 167, 167
    db 0, 10, 168, 168, 168, 168, 168, 168, 168, 168, 168, 168
    db 0, 10, 169, 169, 169, 169, 169, 169, 169, 169, 169, 169
    db 17, 10, 0, 0, 0, 0, 0, 160, 160, 160, 160, 160
    db 17, 10, 1, 1, 1, 1, 1, 161, 161, 161, 161, 161
    db 16, 10, 2, 2, 2, 2, 2, 162, 162, 162, 162, 162
    db 16, 10, 3, 3, 3, 3, 3, 163, 163, 163, 163, 163
    db 15, 10, 4, 4, 4, 4, 4, 164, 164, 164, 164, 164
    db 15, 10, 5, 5, 5, 5, 5, 165, 165, 165, 165, 165
    db 15, 10, 6, 6, 6, 6, 6, 166, 166, 166, 166, 166
    db 15, 10, 7, 7, 7, 7, 7, 167, 167, 167, 167, 167
    db 17, 10, 64, 64, 64, 64, 64, 160, 160, 160, 160, 160
    db 17, 10, 65, 65, 65, 65, 65, 161, 161, 161, 161, 161
    db 16, 10, 66, 66, 66, 66, 66, 162, 162, 162, 162, 162
    db 16, 10, 67, 67, 67, 67, 67, 163, 163, 163, 163, 163
    db 15, 10, 68, 68, 68, 68, 68, 164, 164, 164, 164, 164
    db 15, 10, 69, 69, 69, 69, 69, 165, 165, 165, 165, 165
    db 15, 10, 70, 70, 70, 70, 70, 166, 166, 166, 166, 166
    db 15, 10, 71, 71, 71, 71, 71, 167, 167, 167, 167, 167
    db 2, 1, 0
    db 2, 1, 1
    db 2, 1, 2
    db 2, 1, 3
    db 1, 1, 4
    db 1, 1, 5
    db 1, 1, 6
    db 1, 1, 7
    db 2, 1, 8
    db 2, 1, 9
    db 2, 1, 10
    db 2, 1, 11
    db 1, 1, 12
    db 1, 1, 13
    db 1, 1, 14
    db 1, 1, 15
    db 2, 1, 16
    db 2, 1, 17
    db 2, 1, 160
    db 2, 1, 161
    db 2, 1, 162
    db 2, 1, 163
    db 1, 1, 164
    db 1, 1, 165
    db 1, 1, 166
    db 1, 1, 167
    db 5, 2, 0, 8
    db 5, 2, 1, 9
    db 4, 2, 2, 10
    db 4, 2, 3, 11
    db 3, 2, 4, 12
    db 3, 2, 5, 13
    db 3, 2, 6, 14
    db 3, 2, 7, 15
    db 5, 2, 8, 16
    db 5, 2, 9, 17
    db 4, 2, 10, 18
    db 4, 2, 11, 19
    db 3, 2, 12, 20
    db 3, 2, 13, 21
    db 3, 2, 14, 22
    db 3, 2, 15, 23
    db 5, 2, 16, 24
    db 27, 10, 0, 8, 16, 24, 32, 40, 48, 56, 64, 72
    db 25, 10, 1, 9, 17, 25, 33, 41, 49, 57, 65, 73
    db 22, 10, 2, 10, 18, 26, 34, 42, 50, 58, 66, 74
    db 20, 10, 3, 11, 19, 27, 35, 43, 51, 59, 67, 75
    db 17, 10, 4, 12, 20, 28, 36, 44, 52, 60, 68, 76
    db 15, 10, 5, 13, 21, 29, 37, 45, 53, 61, 69, 77
    db 15, 10, 6, 14, 22, 30, 38, 46, 54, 62, 70, 78
    db 15, 10, 7, 15, 23, 31, 39, 47, 55, 63, 71, 79
    db 27, 10, 72, 64, 56, 48, 40, 32, 24, 16, 8, 0
    db 25, 10, 73, 65, 57, 49, 41, 33, 25, 17, 9, 1
    db $FF
