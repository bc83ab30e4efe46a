; timer.asm - DIV, TIMA, TMA, TAC (Pan Docs: Timer and Divider Registers,
; Timer obscure behaviour).
;
; The system counter advances 4 T (one M-cycle) per M-cycle; a DIV write
; zeroes it.  Below, d = M-cycles after the M-cycle that wrote DIV, so the
; counter is 4*d T-cycles; DIV = counter >> 8 (steps every 64 M); TIMA steps
; on the falling edge of counter bit 9/3/5/7 for TAC 0/1/2/3 (every 256/4/16/64
; M).  Reads are placed half a period away from a step, so they do not depend
; on which half of an M-cycle the hardware samples in.
;   rates: DIV and TIMA at each TAC frequency; TAC bit 2 clear stops TIMA.
;   overflow: TIMA reads $00 for one M-cycle, then TMA; IF bit 2 is set in
;     that same later cycle; scanned one M-cycle at a time.
;   DIV-write glitch: a DIV write while the selected counter bit is 1 is a
;     falling edge: TIMA increments.
;   TAC-write glitch (DMG): a TAC write that changes the selected input from 1
;     to 0, or disables the timer while it is 1, increments TIMA.
;   writes around the overflow: TIMA written in cycle A cancels the reload
;     and the interrupt; TIMA written in cycle B is ignored; TMA written in
;     cycle B is copied to TIMA too.
;   the overflow requests the timer interrupt (vector $50).

    title "TIMER"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    xor a
    ldh [rIE], a
    ldh [rIF], a

    ; --- DIV rate: read at d = 3 + D
    xor a
    ldh [rDIV], a               ; d = 0
    ld b, 55                    ; D = 4*55+1 = 221 -> d = 224 = 3*64 + 32
.d1:
    dec b
    jr nz, .d1
    ldh a, [rDIV]
    ld b, 3
    ld hl, s_div3
    call expect

    xor a
    ldh [rDIV], a               ; d = 0
    ld b, 255                   ; 1021
.d2:
    dec b
    jr nz, .d2
    ld b, 7                     ; 29
.d3:
    dec b
    jr nz, .d3
    nop
    nop
    nop                         ; D = 1053 -> d = 1056 = 16*64 + 32
    ldh a, [rDIV]
    ld b, 16
    ld hl, s_div16
    call expect

    ; --- TIMA rates: TAC; DIV write (d=0); TIMA=0 (d=3); delay D; read at d = D + 6
    ld a, $05                   ; 4 M per step
    ldh [rTAC], a
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    ld b, 23                    ; 93
.t1:
    dec b
    jr nz, .t1
    nop
    nop
    nop                         ; D = 96 -> d = 102 = 25*4 + 2
    ldh a, [rTIMA]
    ld b, 25
    ld hl, s_tac1
    call expect

    ld a, $06                   ; 16 M per step
    ldh [rTAC], a
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    ld b, 24                    ; 97
.t2:
    dec b
    jr nz, .t2
    nop                         ; D = 98 -> d = 104 = 6*16 + 8
    ldh a, [rTIMA]
    ld b, 6
    ld hl, s_tac2
    call expect

    ld a, $07                   ; 64 M per step
    ldh [rTAC], a
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    ld b, 54                    ; 217
.t3:
    dec b
    jr nz, .t3
    nop                         ; D = 218 -> d = 224 = 3*64 + 32
    ldh a, [rTIMA]
    ld b, 3
    ld hl, s_tac3
    call expect

    ld a, $04                   ; 256 M per step
    ldh [rTAC], a
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    ld b, 222                   ; 889
.t0:
    dec b
    jr nz, .t0
    nop                         ; D = 890 -> d = 896 = 3*256 + 128
    ldh a, [rTIMA]
    ld b, 3
    ld hl, s_tac0
    call expect

    ld a, $01                   ; timer disabled: TIMA holds
    ldh [rTAC], a
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    ld b, 222
.tx:
    dec b
    jr nz, .tx
    nop
    ldh a, [rTIMA]
    ld b, 0
    ld hl, s_off
    call expect

    ; --- overflow, one M-cycle at a time.  TIMA=$FD written at d=3 steps at
    ; d=4 (FE), 8 (FF), 12 (overflow: reads 00), 13 (TMA=$23 loaded, IF.2 set),
    ; 16 ($24).  Reads at d = 11 + p, p = 0..7.
    ld a, $05
    ldh [rTAC], a
    ld de, t_ovf_tima
    call timed_build
    ld b, 8
    call timed_run
    ld de, exp_ovf_tima
    ld hl, s_ovf_tima
    ld c, 8
    call expect_readings
    ld de, t_ovf_if
    call timed_build
    ld b, 8
    call timed_run
    ld de, exp_ovf_if
    ld hl, s_ovf_if
    ld c, 8
    call expect_readings

    ; --- writes around the overflow.  TIMA=$FC: steps at d=4,8,12, overflow
    ; at d=16 (cycle A, reads 00), reload + IF at d=17 (cycle B), step at 20.
    ; The code "ld a,n; ldh [reg],a" writes at d = 13 + p, the read is at
    ; d = 16 + p; p = 0..6 (p=7 would write on a step: a race).
    ;   TIMA := $77: before A it just counts on (78); in A it cancels the
    ;   reload and the interrupt (77, IF clear); in B it is ignored (TMA,
    ;   then 24); after B it counts on (78).
    ;   TMA := $55: before B the reload takes the new TMA; in B the new TMA
    ;   is copied to TIMA as well (55 -> 56 at d=20); after B too late (24).
    ld de, t_wr_tima
    call timed_build
    ld b, 7
    call timed_run
    ld de, exp_wr_tima
    ld hl, s_wr_tima
    ld c, 7
    call expect_readings
    ld de, t_wr_tima_if
    call timed_build
    ld b, 7
    call timed_run
    ld de, exp_wr_tima_if
    ld hl, s_wr_tima_if
    ld c, 7
    call expect_readings
    ld de, t_wr_tma
    call timed_build
    ld b, 7
    call timed_run
    ld de, exp_wr_tma
    ld hl, s_wr_tma
    ld c, 7
    call expect_readings

    ; --- DIV-write glitch (TAC=$05, bit 3 = 8 T).  DIV write d=0, TIMA=0 at
    ; d=3, step at d=4 (TIMA=1), second DIV write at d=5 (counter 20: bit 3
    ; clear, no glitch) or d=6 (counter 24: bit 3 set, glitch: TIMA=2).
    ld a, $05
    ldh [rTAC], a
    ld hl, rDIV
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    ld [hl], a                  ; d = 5
    ldh a, [rTIMA]
    ld b, 1
    ld hl, s_divw5
    call expect

    ld hl, rDIV
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    nop
    ld [hl], a                  ; d = 6
    ldh a, [rTIMA]
    ld b, 2
    ld hl, s_divw6
    call expect

    ld a, $06                   ; bit 5 (32 T) is clear at counter 24: no glitch
    ldh [rTAC], a
    ld hl, rDIV
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    nop
    ld [hl], a
    ldh a, [rTIMA]
    ld b, 0
    ld hl, s_divw_t2
    call expect

    ; --- TAC-write glitch: TAC=$05, DIV d=0, TIMA=0 d=3, step d=4; write TAC
    ; at d=5 (bit 3 clear: no glitch, 1) or d=6 (bit 3 set: glitch, 2).
    ld a, $05
    ldh [rTAC], a
    ld hl, rTAC
    ld b, $04                   ; new input: bit 9, which is 0
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    ld [hl], b                  ; d = 5
    ldh a, [rTIMA]
    ld b, 1
    ld hl, s_tacw5
    call expect

    ld a, $05
    ldh [rTAC], a
    ld hl, rTAC
    ld b, $04
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    nop
    ld [hl], b                  ; d = 6
    ldh a, [rTIMA]
    ld b, 2
    ld hl, s_tacw6
    call expect

    ld a, $05                   ; disabling while the input is 1 also glitches
    ldh [rTAC], a
    ld hl, rTAC
    ld b, $01
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    nop
    ld [hl], b                  ; d = 6
    ldh a, [rTIMA]
    ld b, 2
    ld hl, s_tacoff
    call expect

    ; --- overflow requests the timer interrupt
    xor a
    ldh [rIF], a
    ld [IRQ_COUNT], a
    ld a, $04
    ldh [rIE], a
    ld a, $05
    ldh [rTAC], a
    ld a, $FE
    ldh [rTIMA], a
    ei
    ld b, 10                    ; 41 M: two steps away at most 8 M
.w:
    dec b
    jr nz, .w
    di
    ld a, [IRQ_COUNT]
    ld b, 1
    ld hl, s_irq
    call expect
    ld a, [IRQ_LOG]
    ld b, 2
    ld hl, s_irqvec
    call expect
    ldh a, [rIF]
    ld b, $E0
    ld hl, s_irqif
    call expect
    xor a
    ldh [rIE], a
    ldh [rTAC], a
    jp finish

; expect_readings: compare READINGS[0..C-1] with the C bytes at DE; name HL.
expect_readings:
    push hl
    ld hl, READINGS
    ld b, c
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
    call fail_prefix
    ld hl, str_got
    call print_str
    ld hl, READINGS
    ld c, b
.dump:
    ld a, [hl+]
    call print_hex
    dec c
    jr nz, .dump
    ld a, 10
    call print_char
    ld hl, FAILS
    inc [hl]
    ret

fail_prefix:
    push hl
    ld hl, str_fail
    call print_str
    pop hl
    jp print_str

t_ovf_tima: db 4, $3E, $23, $E0, low(rTMA), $FD, low(rTIMA), 0, 0
t_ovf_if:   db 7, $AF, $E0, low(rIF), $3E, $23, $E0, low(rTMA), $FD, low(rIF), 0, 0
exp_ovf_tima: db $FF, $00, $23, $23, $23, $24, $24, $24
exp_ovf_if:   db $E0, $E0, $E4, $E4, $E4, $E4, $E4, $E4
; pre: ld a,$23; ldh [TMA],a (IF variant: xor a; ldh [IF],a first); code: ld a,n; ldh [reg],a
t_wr_tima:    db 4, $3E, $23, $E0, low(rTMA), $FC, low(rTIMA), 4, $3E, $77, $E0, low(rTIMA), 0
t_wr_tima_if: db 7, $AF, $E0, low(rIF), $3E, $23, $E0, low(rTMA), $FC, low(rIF), 4, $3E, $77, $E0, low(rTIMA), 0
t_wr_tma:     db 4, $3E, $23, $E0, low(rTMA), $FC, low(rTIMA), 4, $3E, $55, $E0, low(rTMA), 0
exp_wr_tima:    db $78, $78, $78, $77, $24, $78, $78
exp_wr_tima_if: db $E0, $E0, $E0, $E0, $E4, $E4, $E4
exp_wr_tma:     db $00, $55, $55, $55, $56, $24, $24

s_div3:    db "DIV after 224 M", 0
s_div16:   db "DIV after 1056 M", 0
s_tac1:    db "TIMA TAC=5 after 102 M", 0
s_tac2:    db "TIMA TAC=6 after 104 M", 0
s_tac3:    db "TIMA TAC=7 after 224 M", 0
s_tac0:    db "TIMA TAC=4 after 896 M", 0
s_off:     db "TIMA with TAC=1 (off)", 0
s_ovf_tima: db "TIMA overflow scan", 0
s_ovf_if:  db "IF overflow scan", 0
s_wr_tima:    db "TIMA writes around overflow", 0
s_wr_tima_if: db "IF with TIMA writes around overflow", 0
s_wr_tma:     db "TMA writes around overflow", 0
s_divw5:   db "DIV write, bit 3 clear", 0
s_divw6:   db "DIV write glitch, bit 3 set", 0
s_divw_t2: db "DIV write, TAC=6 bit 5 clear", 0
s_tacw5:   db "TAC write, bit 3 clear", 0
s_tacw6:   db "TAC write glitch, 1 to 0", 0
s_tacoff:  db "TAC disable glitch", 0
s_irq:     db "timer irq count", 0
s_irqvec:  db "timer irq vector", 0
s_irqif:   db "IF after timer irq", 0
