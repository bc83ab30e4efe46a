; ppu_vblank_timing.asm - the requests as VBlank starts, and line 153 (DMG).
;
; 1. The VBlank request and the STAT mode-2 request of line 144 come in the same
;    M-cycle (the DMG's "OAM interrupt at VBlank"; mooneye-gb vblank_stat_intr-GS,
;    verified on DMG): after a HALT started at the same time, both handlers read the
;    same DIV. DIV is reset 4 times, each 1 M-cycle later than the one before, at a
;    fixed time after the previous VBlank handler; the readings must step once across
;    the four (so the comparison has 1-M resolution) and agree request for request.
; 2. Line 153 (Pan Docs: LY reads 153 only at the line's start, then 0; LY=LYC with 0
;    matches during line 153): from the LY=LYC request of line 152 (LYC=152, as the
;    line starts + 2 T), reads 1 M-cycle apart find LY=153 for exactly one M-cycle,
;    114 M-cycles after the request; STAT's LY=LYC flag with LYC=153 set in the
;    line's second M-cycle only, with LYC=0 from its fourth M-cycle on.
;    (The windows: gambatte's, from its author's hardware tests of line 153.)
; Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "PPU VBLANK TIME"
    include "testlib_defs.inc"

    org $0040
    jp hl                       ; VBlank and STAT: continue at HL
    org $0048
    jp hl

    org $0100
    nop
    jp main

    org $0150
    include "testlib_body.inc"

wDiv    EQU SCRATCH             ; 8 DIV readings: VBlank x4, STAT x4
wLine   EQU SCRATCH + $10       ; 3 x 6 readings around line 153's start
wGot    EQU SCRATCH + $F0
DELAY   EQU 2498
BASE    EQU 2               ; (7-M passes) from a VBlank handler to the DIV resets:
                            ; with 2..5 more NOPs they straddle a DIV step

MACRO nops
    rept \1
    nop
    endr
ENDM

; div_round SRC, K, DEST: halt for a VBlank; K M-cycles after a fixed delay reset DIV,
; halt for request SRC (1: VBlank, 2: STAT mode 2 at line 144), DIV to DEST.
MACRO div_round
    ld hl, .sync\@
    ld a, 1
    call halt_ie
.sync\@:
    ld bc, DELAY
.wait\@:
    dec bc
    ld a, b
    or c
    jr nz, .wait\@
    nops \2
    xor a
    ldh [rDIV], a
    ld hl, .got\@
    ld a, \1
    call halt_ie
.got\@:
    ldh a, [rDIV]
    ld [\3], a
ENDM

; line153 LYC, K, DEST: LYC=152 request (HALT), K NOPs, set LYC, read STAT and LY ...
MACRO line_read
    ld a, 152
    ldh [rLYC], a
    ld hl, .got\@
    ld a, 2
    call halt_ie
.got\@:
    ld a, \1
    ldh [rLYC], a
    nops \2
    ldh a, [\3]
    ld [\4], a
ENDM

main:
    ld sp, STACK_TOP
    call lib_init
    xor a
    ldh [rSTAT], a
    div_round 1, BASE + 0, wDiv + 0
    div_round 1, BASE + 1, wDiv + 1
    div_round 1, BASE + 2, wDiv + 2
    div_round 1, BASE + 3, wDiv + 3
    ld a, $20                   ; mode-2 source
    ldh [rSTAT], a
    div_round 2, BASE + 0, wDiv + 4
    div_round 2, BASE + 1, wDiv + 5
    div_round 2, BASE + 2, wDiv + 6
    div_round 2, BASE + 3, wDiv + 7
    ld a, $40                   ; LY=LYC source
    ldh [rSTAT], a
    ; from line 152's start the read comes 4 (the request, seen 2 T after it is made)
    ; + 20 (dispatch) + 4 (jp hl) + 20 (ld a, ldh [LYC]) + 8 (ldh a's read) + 4K T
    ; later: K = 99..104 reads at line 153's start - 4 T, + 0, 4, 8, 12, 16 T
    line_read 152, 99, rLY, wLine + 0
    line_read 152, 100, rLY, wLine + 1
    line_read 152, 101, rLY, wLine + 2
    line_read 152, 102, rLY, wLine + 3
    line_read 152, 103, rLY, wLine + 4
    line_read 152, 104, rLY, wLine + 5
    line_read 153, 99, rSTAT, wLine + 6
    line_read 153, 100, rSTAT, wLine + 7
    line_read 153, 101, rSTAT, wLine + 8
    line_read 153, 102, rSTAT, wLine + 9
    line_read 153, 103, rSTAT, wLine + 10
    line_read 153, 104, rSTAT, wLine + 11
    line_read 0, 99, rSTAT, wLine + 12
    line_read 0, 100, rSTAT, wLine + 13
    line_read 0, 101, rSTAT, wLine + 14
    line_read 0, 102, rSTAT, wLine + 15
    line_read 0, 103, rSTAT, wLine + 16
    line_read 0, 104, rSTAT, wLine + 17
    di
    xor a
    ldh [rSTAT], a
    ldh [rLYC], a
    jp check

; halt_ie: IE = A, IF = 0, EI, HALT; the handler jumps to HL.
halt_ie:
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
    halt
    nop
    di
    ld hl, s_halt
    call fail_msg
    jp finish

check:
    ; VBlank and STAT readings equal, delay for delay
    ld de, 0
.pair:
    ld hl, wDiv + 4
    add hl, de
    ld b, [hl]
    ld hl, wDiv
    add hl, de
    ld a, [hl]
    ld hl, s_same
    call expect
    inc e
    ld a, e
    cp 4
    jr nz, .pair
    ; one step across the four delays
    ld a, [wDiv]
    ld b, a
    ld a, [wDiv + 3]
    inc a
    ld hl, s_step
    call expect
    ; line 153
    ld de, 0
.line:
    ld hl, wLine
    add hl, de
    ld a, [hl]
    ld [wGot], a
    ld a, e
    cp 6
    jr c, .ly
    ld a, [wGot]
    and $87                     ; STAT: mode and LY=LYC flag
    ld [wGot], a
.ly:
    ld hl, line_expected
    add hl, de
    ld b, [hl]
    ld hl, s_ly153
    ld a, e
    cp 6
    jr c, .named
    ld hl, s_lyc153
    cp 12
    jr c, .named
    ld hl, s_lyc0
.named:
    ld a, [wGot]
    call expect
    inc e
    ld a, e
    cp 18
    jr nz, .line
    jp finish

line_expected:
    db 152, 153, 0, 0, 0, 0     ; LY: 153 in line 153's first M-cycle only
    db $81, $81, $85, $81, $81, $81   ; LYC=153: the flag in its second M-cycle only
    db $81, $81, $81, $81, $85, $85   ; LYC=0: the flag from its fourth M-cycle on

s_halt:   db "halt woke no handler", 0
s_same:   db "vblank vs stat m2 at 144", 0
s_step:   db "div step across delays", 0
s_ly153:  db "ly at line 153", 0
s_lyc153: db "stat lyc=153", 0
s_lyc0:   db "stat lyc=0 in line 153", 0
