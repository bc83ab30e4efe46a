; power_on.asm - the DMG post-boot state at PC=$0100 (Pan Docs, Power Up
; Sequence: "Console state after boot ROM hand-off", DMG column).
;   CPU: A=$01, F: Z=1 N=0 and H=C=1 unless the header checksum is $00,
;        B=$00 C=$13 D=$00 E=$D8 H=$01 L=$4D SP=$FFFE.
;   I/O: P1=$CF SB=$00 SC=$7E DIV=$AB TIMA=$00 TMA=$00 TAC=$F8 IF=$E1
;        NR50=$77 NR51=$F3 NR52=$F1 LCDC=$91 SCY=SCX=$00 LYC=$00 DMA=$FF
;        BGP=$FC OBP0=OBP1=$FF WY=WX=$00 IE=$00; unmapped I/O reads $FF.
; The registers are saved by the very first instructions; DIV is read 12
; M-cycles after $0100 (nop 1 + jp 4 + ld [nn],a 4 + the read in ldh's 3rd).

    title "POWER_ON"
    include "testlib.asm"

SAVE EQU $C800                  ; A B C D E H L F, SP (2), DIV

main:
    ld [SAVE + 0], a
    ldh a, [rDIV]
    ld [SAVE + 10], a
    ld a, b
    ld [SAVE + 1], a
    ld a, c
    ld [SAVE + 2], a
    ld a, d
    ld [SAVE + 3], a
    ld a, e
    ld [SAVE + 4], a
    ld a, h
    ld [SAVE + 5], a
    ld a, l
    ld [SAVE + 6], a
    ld [SAVE + 8], sp
    push af                     ; F is still the boot ROM's: loads leave flags alone
    pop hl
    ld a, l
    ld [SAVE + 7], a
    ; I/O registers, before anything touches them
    ld hl, io_checks
    ld de, SCRATCH
.io:
    ld a, [hl+]                 ; register low byte; $00 with flag $FF ends
    ld c, a
    ld a, [hl+]
    cp $FF
    jr z, .io_done
    ldh a, [c]
    ld [de], a
    inc de
    inc hl                      ; skip expected value (checked below)
    jr .io
.io_done:

    ld sp, STACK_TOP
    call lib_init

    ; CPU registers
    ld a, [SAVE + 0]
    ld b, $01
    ld hl, str_a
    call expect
    ld a, [SAVE + 7]
    ld b, $B0                   ; Z=1 N=0 H=1 C=1 (header checksum is not $00)
    ld c, a
    ld a, [$014D]
    or a
    jr nz, .f_ok
    ld b, $80
.f_ok:
    ld a, c
    ld hl, str_f
    call expect
    ld a, [SAVE + 1]
    ld b, $00
    ld hl, str_b
    call expect
    ld a, [SAVE + 2]
    ld b, $13
    ld hl, str_c
    call expect
    ld a, [SAVE + 3]
    ld b, $00
    ld hl, str_d
    call expect
    ld a, [SAVE + 4]
    ld b, $D8
    ld hl, str_e
    call expect
    ld a, [SAVE + 5]
    ld b, $01
    ld hl, str_h
    call expect
    ld a, [SAVE + 6]
    ld b, $4D
    ld hl, str_l
    call expect
    ld a, [SAVE + 8]
    ld b, $FE
    ld hl, str_spl
    call expect
    ld a, [SAVE + 9]
    ld b, $FF
    ld hl, str_sph
    call expect
    ld a, [SAVE + 10]
    ld b, $AB
    ld hl, str_div
    call expect

    ; I/O registers: compare the saved reads with the table
    ld hl, io_checks
    ld de, SCRATCH
.cmp:
    ld a, [hl+]
    ld c, a
    ld a, [hl+]
    cp $FF
    jr z, .cmp_done
    ld a, [hl+]
    ld b, a                     ; expected
    push hl
    ; name: "IO FFxx"
    ld a, c
    ld [SCRATCH + $F0], a
    ld a, [de]
    inc de
    cp b
    jr z, .cmp_ok
    push af
    ld hl, str_io
    call fail_prefix
    ld a, [SCRATCH + $F0]
    call print_hex
    ld hl, str_got
    call print_str
    pop af
    call print_hex
    ld hl, str_exp
    call print_str
    ld a, b
    call print_hex
    ld a, 10
    call print_char
    ld hl, FAILS
    inc [hl]
.cmp_ok:
    pop hl
    jr .cmp
.cmp_done:
    jp finish

; fail_prefix: print "FAIL " then the string at HL.
fail_prefix:
    push hl
    ld hl, str_fail
    call print_str
    pop hl
    jp print_str

; register low byte, $00 (a flag: $FF ends the table), expected value
io_checks:
    db $00, 0, $CF              ; P1
    db $01, 0, $00              ; SB
    db $02, 0, $7E              ; SC
    db $03, 0, $FF              ; unmapped
    db $05, 0, $00              ; TIMA
    db $06, 0, $00              ; TMA
    db $07, 0, $F8              ; TAC
    db $08, 0, $FF              ; unmapped
    db $0F, 0, $E1              ; IF
    db $24, 0, $77              ; NR50
    db $25, 0, $F3              ; NR51
    db $26, 0, $F1              ; NR52
    db $40, 0, $91              ; LCDC
    db $42, 0, $00              ; SCY
    db $43, 0, $00              ; SCX
    db $45, 0, $00              ; LYC
    db $46, 0, $FF              ; DMA
    db $47, 0, $FC              ; BGP
    db $48, 0, $FF              ; OBP0
    db $49, 0, $FF              ; OBP1
    db $4A, 0, $00              ; WY
    db $4B, 0, $00              ; WX
    db $4D, 0, $FF              ; KEY1 (CGB only)
    db $4F, 0, $FF              ; VBK (CGB only)
    db $70, 0, $FF              ; SVBK (CGB only)
    db $7F, 0, $FF              ; unmapped
    db $FF, 0, $00              ; IE
    db $00, $FF

str_a:   db "A", 0
str_f:   db "F", 0
str_b:   db "B", 0
str_c:   db "C", 0
str_d:   db "D", 0
str_e:   db "E", 0
str_h:   db "H", 0
str_l:   db "L", 0
str_spl: db "SP lo", 0
str_sph: db "SP hi", 0
str_div: db "DIV", 0
str_io:  db "IO FF", 0
