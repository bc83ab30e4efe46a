; ppu_lcd_on_timing.asm - the first lines after the LCD is switched on (DMG).
;
; Pan Docs (LCDC.7, STAT): switched on, the PPU starts at line 0. The first line is
; shorter and has no OAM scan: STAT reads mode 0 (not 2) until mode 3, OAM stays
; accessible, no mode-2 interrupt; lines 1 and 2 are ordinary. Exact values: the
; DMG results of mooneye-gb's lcdon_timing-GS and lcdon_write_timing-GS (verified on
; DMG ABC). A read or write X NOPs after the LCDC write happens 4 (X + 2) T after it:
;   - line 0: mode 3 shows from X = 18 (80 T), mode 0 from X = 61; LY = 1 from
;     X = 111 (452 T: the line is 4 T short), LY = 2 from X = 225;
;   - lines 1 and 2: mode 0 in their first M-cycle, mode 2 from the second, mode 3
;     from 84 T, mode 0 from 256 T; LY=LYC compared from the second M-cycle;
;   - OAM: line 0 closes it only in mode 3; later lines close it to reads from their
;     first M-cycle, to writes from the second, and open it to writes for the M-cycle
;     before mode 3; VRAM: closed in mode 3, to reads from one M-cycle earlier (not
;     in line 0).
; Reads of LY, STAT (LYC=0 and LYC=1), OAM[0] and VRAM[0] at X = 0, 17, 60, 110,
; 130, 174, 224, 244 plus 0, 1 and 2 (24 each); writes of $81 to OAM[0] and
; VRAM[0] at 19 values of X, read back with the LCD off ($00: the write was lost).
; Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "PPU LCDON TIMING"
    include "testlib.asm"

wReads  EQU SCRATCH             ; 24 readings of one register
wWrites EQU SCRATCH + $20       ; 19 write results
wGot    EQU SCRATCH + $F0
wLeft   EQU SCRATCH + $F1
wPtr    EQU SCRATCH + $F2       ; 2 bytes
wName   EQU SCRATCH + $F4       ; 2 bytes

MACRO nops
    rept \1
    nop
    endr
ENDM

; reads N: switch the LCD on ($81, so A = $81), N NOPs, then [DE] at X = 0, 17, 60,
; 110, 130, 174, 224, 244 (+N) to [HL+] (each read: ld a,[de] 2 M + ld [hl+],a 2 M).
MACRO reads
    ld a, $81
    ldh [rLCDC], a
    nops \1
    ld a, [de]
    ld [hl+], a
    nops 17 - 4
    ld a, [de]
    ld [hl+], a
    nops 60 - 17 - 4
    ld a, [de]
    ld [hl+], a
    nops 110 - 60 - 4
    ld a, [de]
    ld [hl+], a
    nops 130 - 110 - 4
    ld a, [de]
    ld [hl+], a
    nops 174 - 130 - 4
    ld a, [de]
    ld [hl+], a
    nops 224 - 174 - 4
    ld a, [de]
    ld [hl+], a
    nops 244 - 224 - 4
    ld a, [de]
    ld [hl+], a
    call lcd_off
ENDM

; write X: with OAM[0] = VRAM[0] = 0, switch the LCD on, X NOPs, write $81 to [DE];
; with the LCD off again, [DE] to [HL+].
MACRO write
    xor a
    ld [$FE00], a
    ld [$8000], a
    ld a, $81
    ldh [rLCDC], a
    nops \1
    ld [de], a
    call lcd_off
    ld a, [de]
    ld [hl+], a
ENDM

main:
    ld sp, STACK_TOP
    call lib_init
    call lcd_off
    xor a
    ld [$FE00], a
    ld [$8000], a

    ld de, rLY
    call read_passes
    ld de, ly_exp
    ld hl, s_ly
    call check_reads

    xor a
    ldh [rLYC], a
    ld de, rSTAT
    call read_passes
    ld de, stat0_exp
    ld hl, s_stat0
    call check_reads

    ld a, 1
    ldh [rLYC], a
    ld de, rSTAT
    call read_passes
    ld de, stat1_exp
    ld hl, s_stat1
    call check_reads

    ld de, $FE00
    call read_passes
    ld de, oam_exp
    ld hl, s_oam
    call check_reads

    ld de, $8000
    call read_passes
    ld de, vram_exp
    ld hl, s_vram
    call check_reads

    ld de, $FE00
    call write_cases
    ld de, oamw_exp
    ld hl, s_oamw
    call check_writes

    ld de, $8000
    call write_cases
    ld de, vramw_exp
    ld hl, s_vramw
    call check_writes

    ld a, $91
    ldh [rLCDC], a
    jp finish

read_passes:
    ld hl, wReads
    reads 0
    reads 1
    reads 2
    ret

write_cases:
    ld hl, wWrites
    write 0
    write 17
    write 18
    write 60
    write 61
    write 110
    write 111
    write 112
    write 130
    write 131
    write 132
    write 174
    write 175
    write 224
    write 225
    write 226
    write 244
    write 245
    write 246
    ret

; check_reads / check_writes: wReads (24) or wWrites (19) against the table at DE,
; failures named by the string at HL.
check_reads:
    ld bc, wReads
    ld a, 24
    jr check_table
check_writes:
    ld bc, wWrites
    ld a, 19
check_table:
    ld [wLeft], a
    ld a, c
    ld [wPtr], a
    ld a, b
    ld [wPtr + 1], a
    ld a, l
    ld [wName], a
    ld a, h
    ld [wName + 1], a
.loop:
    ld a, [wPtr]
    ld l, a
    ld a, [wPtr + 1]
    ld h, a
    ld a, [hl+]
    ld [wGot], a
    ld a, l
    ld [wPtr], a
    ld a, h
    ld [wPtr + 1], a
    ld a, [de]
    inc de
    ld b, a
    ld a, [wName]
    ld l, a
    ld a, [wName + 1]
    ld h, a
    ld a, [wGot]
    call expect                 ; (keeps D, E)
    ld hl, wLeft
    dec [hl]
    jr nz, .loop
    ret

ly_exp:
    db $00, $00, $00, $00, $01, $01, $01, $02
    db $00, $00, $00, $01, $01, $01, $02, $02
    db $00, $00, $00, $01, $01, $01, $02, $02
stat0_exp:
    db $84, $84, $87, $84, $82, $83, $80, $82
    db $84, $87, $84, $80, $82, $80, $80, $82
    db $84, $87, $84, $82, $83, $80, $82, $83
stat1_exp:
    db $80, $80, $83, $80, $86, $87, $84, $82
    db $80, $83, $80, $80, $86, $84, $80, $82
    db $80, $83, $80, $86, $87, $84, $82, $83
oam_exp:
    db $00, $00, $FF, $00, $FF, $FF, $00, $FF
    db $00, $FF, $00, $FF, $FF, $00, $FF, $FF
    db $00, $FF, $00, $FF, $FF, $00, $FF, $FF
vram_exp:
    db $00, $00, $FF, $00, $00, $FF, $00, $00
    db $00, $FF, $00, $00, $FF, $00, $00, $FF
    db $00, $FF, $00, $00, $FF, $00, $00, $FF
oamw_exp:      ; X = 0 17 18 60 61 110 111 112 130 131 132 174 175 224 225 226 244 245 246
    db $81, $81, $00, $00, $81, $81, $81, $00, $00, $81, $00, $00, $81, $81, $81, $00, $00, $81, $00
vramw_exp:
    db $81, $81, $00, $00, $81, $81, $81, $81, $81, $81, $00, $00, $81, $81, $81, $81, $81, $81, $00

s_ly:    db "lcd on ly", 0
s_stat0: db "lcd on stat lyc0", 0
s_stat1: db "lcd on stat lyc1", 0
s_oam:   db "lcd on oam read", 0
s_vram:  db "lcd on vram read", 0
s_oamw:  db "lcd on oam write", 0
s_vramw: db "lcd on vram write", 0
