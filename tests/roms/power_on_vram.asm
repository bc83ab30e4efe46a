; power_on_vram.asm - VRAM as the DMG boot ROM leaves it at PC=$0100 (Pan
; Docs, Power Up Sequence: the boot ROM "reads the logo from the header,
; unpacks it into VRAM"; it stays on screen until the game overwrites it).
;   Cleared, then the header logo unpacked into tiles 1-24 and the (R) mark
;   into tile 25, shown by the BG map at $9904 and $9924.
; The LCD is switched off (at VBlank) before VRAM is read.

    title "POWER_ON_VRAM"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    ; VRAM: the boot ROM clears it, unpacks the header logo into tiles 1-24
    ; ($8010-$818F), the (R) mark into tile 25 ($8190) and writes the two logo
    ; rows of the BG map ($9904-$9910, $9924-$992F).  Each logo byte gives
    ; two tile rows per nibble, each bit doubled, in bit plane 0 only.
    call lcd_off
    ld hl, EXP_TILES
    ld bc, $0200 + $0400
    call zero_fill
    ld de, $0104
    ld hl, EXP_TILES + $10
    ld c, 48
.logo:
    ld a, [de]
    inc de
    push af
    swap a
    call put_nibble
    pop af
    call put_nibble
    dec c
    jr nz, .logo
    ld de, reg_mark
    ld hl, EXP_TILES + $190
    ld c, 8
.mark:
    ld a, [de]
    inc de
    ld [hl+], a
    inc hl
    dec c
    jr nz, .mark
    ld hl, EXP_MAP + $104
    ld a, 1
    ld c, 12
.row1:
    ld [hl+], a
    inc a
    dec c
    jr nz, .row1
    ld a, $19
    ld [hl], a
    ld hl, EXP_MAP + $124
    ld a, 13
    ld c, 12
.row2:
    ld [hl+], a
    inc a
    dec c
    jr nz, .row2
    ; compare
    ld hl, $8000
    ld de, EXP_TILES
    ld bc, $0200
    call count_diff
    ld b, 0
    ld hl, s_vram_tiles
    call expect
    ld hl, $9800
    ld de, EXP_MAP
    ld bc, $0400
    call count_diff
    ld b, 0
    ld hl, s_vram_map
    call expect
    ld hl, $8200
    ld bc, $1600
    call count_nonzero
    ld b, 0
    ld hl, s_vram_rest
    call expect
    ld hl, $9C00
    ld bc, $0400
    call count_nonzero
    ld b, 0
    ld hl, s_vram_map2
    call expect
    jp finish

EXP_TILES EQU $C200             ; expected $8000-$81FF
EXP_MAP   EQU $C400             ; expected $9800-$9BFF

; put_nibble: low nibble of A, bits doubled, into two tile rows at HL (plane 0).
put_nibble:
    and $0F
    push hl
    ld hl, doubled
    add l
    ld l, a
    adc h
    sub l
    ld h, a
    ld a, [hl]
    pop hl
    ld [hl+], a
    inc hl
    ld [hl+], a
    inc hl
    ret

; zero_fill: BC bytes of 0 from HL.
zero_fill:
    xor a
    ld [hl+], a
    dec bc
    ld a, b
    or c
    jr nz, zero_fill
    ret

; count_diff: how many of BC bytes at HL differ from DE (saturates at 255).
count_diff:
    push bc
    ld a, 0
    ld [SCRATCH + $F1], a
    pop bc
.loop:
    ld a, [de]
    inc de
    cp [hl]
    inc hl
    call nz, .bump
    dec bc
    ld a, b
    or c
    jr nz, .loop
    ld a, [SCRATCH + $F1]
    ret
.bump:
    ld a, [SCRATCH + $F1]
    inc a
    ret z
    ld [SCRATCH + $F1], a
    ret

; count_nonzero: how many of BC bytes at HL are not 0 (saturates at 255).
count_nonzero:
    xor a
    ld [SCRATCH + $F1], a
.loop:
    ld a, [hl+]
    or a
    call nz, count_diff.bump
    dec bc
    ld a, b
    or c
    jr nz, .loop
    ld a, [SCRATCH + $F1]
    ret

doubled:
    db $00, $03, $0C, $0F, $30, $33, $3C, $3F, $C0, $C3, $CC, $CF, $F0, $F3, $FC, $FF
reg_mark:                       ; the (R) tile the DMG boot ROM draws
    db $3C, $42, $B9, $A5, $B9, $A5, $42, $3C

s_vram_tiles: db "VRAM 8000-81FF bytes unlike the boot ROM's logo tiles", 0
s_vram_map:   db "VRAM 9800-9BFF bytes unlike the boot ROM's logo map", 0
s_vram_rest:  db "VRAM 8200-97FF nonzero bytes", 0
s_vram_map2:  db "VRAM 9C00-9FFF nonzero bytes", 0
