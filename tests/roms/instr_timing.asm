; instr_timing.asm - M-cycles of a set of instructions, measured with the
; timer (testlib's Hermite-sum harness, exact to one M-cycle), against the
; SM83 opcode table (Pan Docs, CPU Instruction Set; gbdev opcode table):
; taken and not-taken branches included.  Every template runs with A=0 and
; flags Z=1 N=0 H=0 C=0, so "z"/"nc" branches are taken, "nz"/"c" are not.
; Branch targets point at the instruction after the one measured (TI + len).

    title "INSTR_TIMING"
    include "testlib.asm"

TI EQU TIMED_INSTR
BASE EQU $C900                  ; calibration (empty code) result
SAVED_SP EQU $C902

main:
    ld sp, STACK_TOP
    call lib_init
    di
    xor a
    ldh [rIE], a
    ldh [rIF], a
    ld a, $05                   ; timer on, 4 M-cycles per TIMA step
    ldh [rTAC], a

    ld de, t_empty
    call measure
    ld a, l
    ld [BASE], a
    ld a, h
    ld [BASE + 1], a

    ld hl, cases
    call run_cases
    ld hl, read_cases
    call run_cases
    jp finish

; run_cases: measure every case of the table at HL (ends with $80).
run_cases:
.next:
    ld a, [hl+]                 ; expected (X - BASE); $80 ends the list
    cp $80
    ret z
    ld b, a
    push hl                     ; name
.skip:
    ld a, [hl+]
    or a
    jr nz, .skip
    ld d, h                     ; template follows the name
    ld e, l
    push bc
    call measure                ; HL = X
    ld a, [BASE]
    ld c, a
    ld a, l
    sub c                       ; cycles = X - BASE (fits a byte)
    pop bc
    pop hl
    push hl
    call expect
    pop hl
    ; skip to the next case: past the name, then the template
.skip2:
    ld a, [hl+]
    or a
    jr nz, .skip2
    ld a, [hl+]                 ; pre_len
    call .skip_n
    inc hl                      ; tima0
    inc hl                      ; reg
    ld a, [hl+]                 ; len
    call .skip_n
    ld a, [hl+]                 ; post_len
    call .skip_n
    jr .next
.skip_n:
    add l
    ld l, a
    ret nc
    inc h
    ret

; empty code: the harness overhead
t_empty: db 0, 0, low(rTIMA), 0, 0

; db cycles, "name", 0, pre_len, pre..., tima0, reg, len, code..., post_len, post...
cases:
    db 1, "nop", 0,             0, 0, $05, 1, $00, 0
    db 1, "ld b,c", 0,          0, 0, $05, 1, $41, 0
    db 2, "ld b,n", 0,          0, 0, $05, 2, $06, $12, 0
    db 3, "ld bc,nn", 0,        0, 0, $05, 3, $01, $34, $12, 0
    db 2, "ld a,[hl]", 0,       3, $21, $00, $C1, 0, $05, 1, $7E, 0
    db 2, "ld [hl],a", 0,       3, $21, $00, $C1, 0, $05, 1, $77, 0
    db 3, "ld [hl],n", 0,       3, $21, $00, $C1, 0, $05, 2, $36, $55, 0
    db 2, "ld a,[bc]", 0,       3, $01, $00, $C1, 0, $05, 1, $0A, 0
    db 2, "ld [de],a", 0,       3, $11, $00, $C1, 0, $05, 1, $12, 0
    db 2, "ld a,[hl+]", 0,      3, $21, $00, $C1, 0, $05, 1, $2A, 0
    db 4, "ld a,[nn]", 0,       0, 0, $05, 3, $FA, $00, $C1, 0
    db 4, "ld [nn],a", 0,       0, 0, $05, 3, $EA, $00, $C1, 0
    db 3, "ldh a,[n]", 0,       0, 0, $05, 2, $F0, $80, 0
    db 3, "ldh [n],a", 0,       0, 0, $05, 2, $E0, $80, 0
    db 2, "ldh a,[c]", 0,       2, $0E, $80, 0, $05, 1, $F2, 0
    db 2, "ldh [c],a", 0,       2, $0E, $80, 0, $05, 1, $E2, 0
    db 5, "ld [nn],sp", 0,      0, 0, $05, 3, $08, $00, $C1, 0
    db 1, "add a,b", 0,         0, 0, $05, 1, $80, 0
    db 2, "add a,n", 0,         0, 0, $05, 2, $C6, $01, 0
    db 2, "adc a,[hl]", 0,      3, $21, $00, $C1, 0, $05, 1, $8E, 0
    db 2, "cp n", 0,            0, 0, $05, 2, $FE, $01, 0
    db 1, "inc b", 0,           0, 0, $05, 1, $04, 0
    db 3, "inc [hl]", 0,        3, $21, $00, $C1, 0, $05, 1, $34, 0
    db 3, "dec [hl]", 0,        3, $21, $00, $C1, 0, $05, 1, $35, 0
    db 2, "inc bc", 0,          0, 0, $05, 1, $03, 0
    db 2, "dec de", 0,          0, 0, $05, 1, $1B, 0
    db 2, "inc sp", 0,          0, 0, $05, 1, $33, 1, $3B
    db 2, "add hl,bc", 0,       0, 0, $05, 1, $09, 0
    db 4, "add sp,e", 0,        0, 0, $05, 2, $E8, $00, 0
    db 3, "ld hl,sp+e", 0,      0, 0, $05, 2, $F8, $00, 0
    db 2, "ld sp,hl", 0,        4, $21, $00, $00, $39, 0, $05, 1, $F9, 0
    db 1, "daa", 0,             0, 0, $05, 1, $27, 0
    db 1, "cpl", 0,             0, 0, $05, 1, $2F, 0
    db 1, "scf", 0,             0, 0, $05, 1, $37, 0
    db 1, "rlca", 0,            0, 0, $05, 1, $07, 0
    db 4, "push bc", 0,         0, 0, $05, 1, $C5, 1, $C1
    db 3, "pop bc", 0,          1, $C5, 0, $05, 1, $C1, 0
    db 4, "jp nn", 0,           0, 0, $05, 3, $C3, low(TI + 3), high(TI + 3), 0
    db 1, "jp hl", 0,           3, $21, low(TI + 1), high(TI + 1), 0, $05, 1, $E9, 0
    db 4, "jp z taken", 0,      0, 0, $05, 3, $CA, low(TI + 3), high(TI + 3), 0
    db 3, "jp nz untaken", 0,   0, 0, $05, 3, $C2, low(TI + 3), high(TI + 3), 0
    db 4, "jp nc taken", 0,     0, 0, $05, 3, $D2, low(TI + 3), high(TI + 3), 0
    db 3, "jr e", 0,            0, 0, $05, 2, $18, $00, 0
    db 3, "jr z taken", 0,      0, 0, $05, 2, $28, $00, 0
    db 2, "jr nz untaken", 0,   0, 0, $05, 2, $20, $00, 0
    db 2, "jr c untaken", 0,    0, 0, $05, 2, $38, $00, 0
    db 6, "call nn", 0,         0, 0, $05, 3, $CD, low(TI + 3), high(TI + 3), 1, $D1
    db 6, "call z taken", 0,    0, 0, $05, 3, $CC, low(TI + 3), high(TI + 3), 1, $D1
    db 3, "call nz untaken", 0, 0, 0, $05, 3, $C4, low(TI + 3), high(TI + 3), 0
    db 4, "ret", 0,             4, $11, low(TI + 1), high(TI + 1), $D5, 0, $05, 1, $C9, 0
    db 5, "ret z taken", 0,     4, $11, low(TI + 1), high(TI + 1), $D5, 0, $05, 1, $C8, 0
    db 2, "ret nz untaken", 0,  0, 0, $05, 1, $C0, 0
    db 4, "reti", 0,            4, $11, low(TI + 1), high(TI + 1), $D5, 0, $05, 1, $D9, 1, $F3
    db 8, "rst 38+ret", 0,      0, 0, $05, 1, $FF, 0
    db 1, "di", 0,              0, 0, $05, 1, $F3, 0
    db 1, "ei", 0,              0, 0, $05, 1, $FB, 1, $F3
    db 2, "rlc b", 0,           0, 0, $05, 2, $CB, $00, 0
    db 2, "swap a", 0,          0, 0, $05, 2, $CB, $37, 0
    db 3, "bit 0,[hl]", 0,      3, $21, $00, $C1, 0, $05, 2, $CB, $46, 0
    db 4, "set 0,[hl]", 0,      3, $21, $00, $C1, 0, $05, 2, $CB, $C6, 0
    db 4, "rl [hl]", 0,         3, $21, $00, $C1, 0, $05, 2, $CB, $16, 0
    db $80

; Memory-access timing of reads: the code reads TIMA itself into B; the
; harness then reads HRAM and the post code "ld a, b" returns the code's
; reading, so X is the exact M-cycle of the code's read.  "ldh a,[n]" reads
; in its 3rd M-cycle, at the same point as the harness's own read (X = BASE);
; "ld a,[hl]" and friends read in their 2nd (BASE - 1); "ld a,[nn]" in its
; 4th (BASE + 1).  db (X - BASE) & $FF, name, template.
read_cases:
    db 0,   "read cycle ldh a,[n]", 0,  0, 0, $80, 3, $F0, low(rTIMA), $47, 1, $78
    db $FF, "read cycle ld a,[hl]", 0,  3, $21, low(rTIMA), high(rTIMA), 0, $80, 2, $7E, $47, 1, $78
    db $FF, "read cycle ld b,[hl]", 0,  3, $21, low(rTIMA), high(rTIMA), 0, $80, 1, $46, 1, $78
    db $FF, "read cycle add a,[hl]", 0, 3, $21, low(rTIMA), high(rTIMA), 0, $80, 2, $86, $47, 1, $78
    db $FF, "read cycle ld a,[bc]", 0,  3, $01, low(rTIMA), high(rTIMA), 0, $80, 2, $0A, $47, 1, $78
    db $FF, "read cycle ldh a,[c]", 0,  2, $0E, low(rTIMA), 0, $80, 2, $F2, $47, 1, $78
    db 1,   "read cycle ld a,[nn]", 0,  0, 0, $80, 4, $FA, low(rTIMA), high(rTIMA), $47, 1, $78
    ; pop bc with SP=$FF05 reads C from TIMA in its 2nd of 3 M-cycles (not at
    ; the end): pre saves SP to SAVED_SP and points it at TIMA; post restores
    ; SP and returns C.
    db $FF, "read cycle pop bc (low byte)", 0, 6, $08, low(SAVED_SP), high(SAVED_SP), $31, low(rTIMA), high(rTIMA), 0, $80, 1, $C1, 8, $21, low(SAVED_SP), high(SAVED_SP), $2A, $66, $6F, $F9, $79
    db $80
