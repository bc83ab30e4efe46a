; cpu_mix.asm - a CPU-bound benchmark ROM with the instruction mix of
; blargg's cpu_instrs (issue 38): no HALT, almost no waiting, the LCD on.
;
; As cpu_instrs does, each instruction under test is copied into WRAM with a
; RET after it and called there, once for every combination of 16 operand
; values and 4 flag settings: the registers are popped from a table (AF BC
; DE HL), the instruction runs, the registers are pushed back, and a CRC-32
; (table-driven, the table built at start with shifts and XORs) is updated
; with the 8 result bytes, one CALL per byte. 102 instructions: ALU on
; registers, (HL) and immediates, INC/DEC, 16-bit arithmetic, the A
; rotations, DAA/CPL/SCF/CCF, CB rotations, shifts, BIT/RES/SET on registers
; and (HL), loads, JR and RET cc. Each instruction's CRC goes into a WRAM
; table and onto the screen as hex digits (8 bytes written behind STAT
; waits: the little idling it does). After all of them the operand values
; change and it starts over, so no two passes compute the same.
;
; Known answer: at start the CRC routine checks itself on "123456789"
; (wCheck: the standard CRC-32 check value $CBF43926, little endian).
; tests/test_gamelike_roms.py runs it against gambatte, frame for frame,
; the result table compared at the end.

    title "CPU MIX"
    include "idiom_lib.inc"

CRC_T0      EQU $D000           ; the CRC-32 table as 4 byte planes ($D000-$D3FF)
SCRATCH     EQU $C800           ; what the (HL) forms point at (H = $C8)
FONT_TILE   EQU 16              ; hex digits 0-F

wValues     EQU $C100           ; 32 bytes: the 16 operand values twice
wIn         EQU $C120           ; F A C B E D L H: popped into AF BC DE HL
wOut        EQU $C128           ; the same, pushed after the instruction
wOutEnd     EQU $C130
wCrc        EQU $C130           ; 4 bytes, low byte first
wSaveSP     EQU $C134           ; 2 bytes
wI          EQU $C136           ; operand value index (0..15)
wJ          EQU $C137           ; flag setting index (0..3)
wInstr      EQU $C138           ; the instruction under test
wPass       EQU $C139
wMode       EQU $C13A           ; 1: the instruction addresses (HL)
wCheck      EQU $C13C           ; 4 bytes: CRC-32 of "123456789"
wSlot       EQU $C140           ; the instruction under test, NOPs, RET
wSlotStack  EQU $C160           ; the stack while it runs (grows down)
wResults    EQU $C200           ; 4 bytes per instruction

main:
    ld sp, STACK_TOP
    call init
    call init_font
    call init_crc_table
    call check_crc
    ld hl, wValues
    ld de, values
    ld bc, 16
    call memcpy
    ld hl, wValues + 16
    ld de, values
    ld bc, 16
    call memcpy
    ld a, $91                   ; LCD on, tiles at $8000, BG on
    ldh [rLCDC], a
.pass:
    xor a
    ld [wInstr], a
.instr:
    call test_instr
    call print_result
    ld a, [wInstr]
    inc a
    ld [wInstr], a
    cp NUM_INSTR
    jr nz, .instr
    ld hl, wPass                ; new operand values for the next pass
    inc [hl]
    ld c, [hl]
    ld hl, wValues
    ld b, 32
.v:
    ld a, [hl]
    rlca
    add c
    ld [hl+], a
    dec b
    jr nz, .v
    jr .pass

vblank_isr:
stat_isr:
timer_isr:
    reti

; init_font: hex digit tiles 16..31 (made-up glyphs: each row a function of
; the digit and the row).
init_font:
    ld hl, $8000 + FONT_TILE * 16
    ld c, 0
.tile:
    ld b, 8
.row:
    ld a, c
    xor b
    rlca
    rlca
    or c
    ld [hl+], a
    ld a, c
    swap a
    xor b
    ld [hl+], a
    dec b
    jr nz, .row
    inc c
    ld a, c
    cp 16
    jr nz, .tile
    ret

; init_crc_table: T[i] = i shifted right 8 times, XOR $EDB88320 after each
; 1 shifted out (the reflected CRC-32), as 4 byte planes. B C D E: the value,
; high byte first.
init_crc_table:
    ld hl, CRC_T0
.i:
    ld e, l
    ld d, 0
    ld c, 0
    ld b, 0
    ld a, 8
.bit:
    srl b
    rr c
    rr d
    rr e
    jr nc, .no
    push af
    ld a, b
    xor $ED
    ld b, a
    ld a, c
    xor $B8
    ld c, a
    ld a, d
    xor $83
    ld d, a
    ld a, e
    xor $20
    ld e, a
    pop af
.no:
    dec a
    jr nz, .bit
    ld [hl], e
    inc h
    ld [hl], d
    inc h
    ld [hl], c
    inc h
    ld [hl], b
    ld h, high(CRC_T0)
    inc l
    jr nz, .i
    ret

; crc_init: wCrc = $FFFFFFFF.
crc_init:
    ld a, $FF
    ld hl, wCrc
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
    ld [hl], a
    ret

; crc_byte: wCrc = (wCrc >> 8) ^ T[(wCrc ^ A) & $FF]. Clobbers A DE HL.
crc_byte:
    ld hl, wCrc
    xor [hl]
    ld e, a
    ld d, high(CRC_T0)
    inc hl
    ld a, [de]
    xor [hl]
    dec hl
    ld [hl+], a
    inc hl
    inc d
    ld a, [de]
    xor [hl]
    dec hl
    ld [hl+], a
    inc hl
    inc d
    ld a, [de]
    xor [hl]
    dec hl
    ld [hl+], a
    inc d
    ld a, [de]
    ld [hl], a
    ret

; check_crc: the CRC-32 of "123456789" (final XOR included) into wCheck.
check_crc:
    call crc_init
    ld bc, check_text
.c:
    ld a, [bc]
    or a
    jr z, .done
    call crc_byte
    inc bc
    jr .c
.done:
    ld hl, wCrc
    ld de, wCheck
    ld b, 4
.x:
    ld a, [hl+]
    cpl
    ld [de], a
    inc de
    dec b
    jr nz, .x
    ret

check_text:
    db "123456789", 0

; test_instr: instruction wInstr into the slot, then every operand/flag
; combination through it; its CRC into wResults.
test_instr:
    ld a, [wInstr]
    ld l, a
    ld h, 0
    add hl, hl
    add hl, hl
    push hl
    ld de, instrs
    add hl, de
    ld de, wSlot
    ld a, [hl+]
    ld [de], a
    inc de
    ld a, [hl+]
    ld [de], a
    inc de
    ld a, [hl+]
    ld [de], a
    inc de
    ld a, $C9                   ; RET
    ld [de], a
    ld a, [hl]
    ld [wMode], a
    call crc_init
    xor a
    ld [wI], a
.i:
    xor a
    ld [wJ], a
.j:
    call build_in
    call run_case
    ld hl, wJ
    inc [hl]
    ld a, [hl]
    cp 4
    jr nz, .j
    ld hl, wI
    inc [hl]
    ld a, [hl]
    cp 16
    jr nz, .i
    pop hl
    ld de, wResults
    add hl, de
    ld de, wCrc
    ld b, 4
.r:
    ld a, [de]
    ld [hl+], a
    inc de
    dec b
    jr nz, .r
    ret

; build_in: the registers for case (wI, wJ): A B C D E = values i..i+4,
; L = value i + 5 + 2j, H = value i + 9 + j (or the scratch page for the (HL)
; forms), F = flags[j].
build_in:
    ld a, [wI]
    ld e, a
    ld d, 0
    ld hl, wValues
    add hl, de
    ld a, [hl+]
    ld [wIn + 1], a             ; A
    ld a, [hl+]
    ld [wIn + 3], a             ; B
    ld a, [hl+]
    ld [wIn + 2], a             ; C
    ld a, [hl+]
    ld [wIn + 5], a             ; D
    ld a, [hl+]
    ld [wIn + 4], a             ; E
    ld a, [wJ]
    ld c, a
    add a
    ld e, a
    push hl
    add hl, de
    ld a, [hl]
    ld [wIn + 6], a             ; L
    pop hl
    ld a, c
    add 4
    ld e, a
    add hl, de
    ld a, [hl]
    ld [wIn + 7], a             ; H
    ld a, [wMode]
    or a
    jr z, .flags
    ld a, high(SCRATCH)
    ld [wIn + 7], a
.flags:
    ld e, c
    ld hl, flag_sets
    add hl, de
    ld a, [hl]
    ld [wIn], a                 ; F
    ret

; run_case: pop the registers, call the slot on its own stack, push the
; results, CRC them.
run_case:
    ld [wSaveSP], sp
    ld sp, wIn
    pop af
    pop bc
    pop de
    pop hl
    ld sp, wSlotStack
    call wSlot
    ld sp, wOutEnd
    push hl
    push de
    push bc
    push af
    ld a, [wSaveSP]
    ld l, a
    ld a, [wSaveSP + 1]
    ld h, a
    ld sp, hl
    ld c, 0
.crc:
    ld a, c
    add low(wOut)
    ld l, a
    ld h, high(wOut)
    ld a, [hl]
    call crc_byte
    inc c
    ld a, c
    cp 8
    jr nz, .crc
    ret

; print_result: "II CCCCCCCC" (instruction index, its CRC high byte first)
; on map row wInstr mod 18, each digit written after a STAT wait.
print_result:
    ld a, [wInstr]
.mod:
    cp 18
    jr c, .row
    sub 18
    jr .mod
.row:
    ld l, a
    ld h, 0
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    ld de, BG_MAP + 1
    add hl, de
    ld a, [wInstr]
    call put_hex
    inc hl
    ld de, wCrc + 3
    ld c, 4
.b:
    ld a, [de]
    call put_hex
    dec de
    dec c
    jr nz, .b
    ret

; put_hex: A as two hex digit tiles at HL+.
put_hex:
    push af
    swap a
    call put_digit
    pop af
put_digit:
    and $0F
    add FONT_TILE
    ld b, a
.w:
    ldh a, [rSTAT]
    and $02
    jr nz, .w
    ld a, b
    ld [hl+], a
    ret

values:
    db $00, $01, $0F, $10, $1F, $7F, $80, $F0, $FF, $02, $04, $08, $20, $40, $55, $AA

flag_sets:
    db $00, $10, $A0, $F0

; The instructions under test: 3 bytes (NOP-padded) and the mode (1: (HL)).
instrs:
    ; ALU A, r
    db $80, 0, 0, 0,  $89, 0, 0, 0,  $92, 0, 0, 0,  $9B, 0, 0, 0
    db $A4, 0, 0, 0,  $AD, 0, 0, 0,  $B0, 0, 0, 0,  $B9, 0, 0, 0
    db $87, 0, 0, 0,  $8F, 0, 0, 0,  $97, 0, 0, 0,  $9F, 0, 0, 0
    ; ALU A, (HL)
    db $86, 0, 0, 1,  $8E, 0, 0, 1,  $96, 0, 0, 1,  $9E, 0, 0, 1
    db $A6, 0, 0, 1,  $AE, 0, 0, 1,  $B6, 0, 0, 1,  $BE, 0, 0, 1
    ; ALU A, n
    db $C6, $5A, 0, 0,  $CE, $A5, 0, 0,  $D6, $3C, 0, 0,  $DE, $C3, 0, 0
    db $E6, $0F, 0, 0,  $EE, $F0, 0, 0,  $F6, $81, 0, 0,  $FE, $7E, 0, 0
    ; INC / DEC r, (HL)
    db $04, 0, 0, 0,  $0D, 0, 0, 0,  $14, 0, 0, 0,  $1D, 0, 0, 0
    db $24, 0, 0, 0,  $2D, 0, 0, 0,  $3C, 0, 0, 0,  $3D, 0, 0, 0
    db $34, 0, 0, 1,  $35, 0, 0, 1
    ; 16-bit INC / DEC / ADD HL
    db $03, 0, 0, 0,  $0B, 0, 0, 0,  $13, 0, 0, 0,  $1B, 0, 0, 0
    db $23, 0, 0, 0,  $2B, 0, 0, 0,  $09, 0, 0, 0,  $19, 0, 0, 0
    db $29, 0, 0, 0,  $39, 0, 0, 0
    ; A rotations, DAA, CPL, SCF, CCF
    db $07, 0, 0, 0,  $0F, 0, 0, 0,  $17, 0, 0, 0,  $1F, 0, 0, 0
    db $27, 0, 0, 0,  $2F, 0, 0, 0,  $37, 0, 0, 0,  $3F, 0, 0, 0
    ; CB on registers
    db $CB, $00, 0, 0,  $CB, $09, 0, 0,  $CB, $12, 0, 0,  $CB, $1B, 0, 0
    db $CB, $24, 0, 0,  $CB, $2D, 0, 0,  $CB, $37, 0, 0,  $CB, $3F, 0, 0
    db $CB, $47, 0, 0,  $CB, $7C, 0, 0,  $CB, $9A, 0, 0,  $CB, $B8, 0, 0
    db $CB, $C1, 0, 0,  $CB, $FF, 0, 0,  $CB, $5F, 0, 0
    ; CB on (HL)
    db $CB, $06, 0, 1,  $CB, $1E, 0, 1,  $CB, $2E, 0, 1,  $CB, $36, 0, 1
    db $CB, $46, 0, 1,  $CB, $86, 0, 1,  $CB, $C6, 0, 1
    ; loads
    db $78, 0, 0, 0,  $4A, 0, 0, 0,  $53, 0, 0, 0,  $6C, 0, 0, 0
    db $7D, 0, 0, 0,  $41, 0, 0, 0,  $77, 0, 0, 1,  $7E, 0, 0, 1
    db $36, $99, 0, 1,  $2A, 0, 0, 1,  $3A, 0, 0, 1,  $22, 0, 0, 1
    db $F8, $05, 0, 0,  $08, $00, $C8, 0
    ; JR and RET cc (taken or not, both return to the caller)
    db $18, $00, 0, 0,  $20, $00, 0, 0,  $28, $00, 0, 0,  $30, $00, 0, 0
    db $38, $00, 0, 0,  $C0, 0, 0, 0,  $C8, 0, 0, 0,  $D0, 0, 0, 0
    db $D8, 0, 0, 0,  $D9, 0, 0, 0
instrs_end:
NUM_INSTR EQU (instrs_end - instrs) / 4
