; workload.asm - a game-like benchmark ROM for tools/bench_emu.py (not a test).
; Every frame, like a typical game: wait for VBlank with HALT (VBlank
; interrupt), OAM DMA from a shadow copy, scroll the background, write a row
; of the tilemap, read the joypad (both groups), move 40 sprites (a
; pseudo-random walk nudged by the d-pad), and run some arithmetic over a WRAM
; table (a 16-bit checksum and a multiply-by-shifts), so the CPU is busy for
; a good part of the frame and the PPU draws BG + sprites.

    title "WORKLOAD"
    include "testlib.asm"

SHADOW_OAM EQU $C200            ; 160 bytes, DMA source page $C2
TABLE      EQU $C400            ; 256 bytes of "game state"
FRAME      EQU $C300
SEED       EQU $C301
JOY        EQU $C302
CHECKSUM   EQU $C303            ; 2 bytes
HRAM_DMA   EQU $FF80

main:
    ld sp, STACK_TOP
    call lib_init
    di
    call lcd_off
    ; tiles 0-3 at $8000: solid shades 0..3, tile 4: a checkerboard, 5: a ball
    ld hl, $8000
    ld de, tiles
    ld c, tiles_end - tiles
    call copy
    ; BG map: a diagonal pattern of tiles 0-4
    ld hl, $9800
    ld bc, $0400
.map:
    ld a, l
    add h
    and $03
    ld [hl+], a
    dec bc
    ld a, b
    or c
    jr nz, .map
    ; shadow OAM: 40 sprites on a grid, tile 5
    ld hl, SHADOW_OAM
    ld b, 40
    ld c, 0
.spr:
    ld a, c
    and $70
    add 24
    ld [hl+], a                 ; y
    ld a, c
    swap a
    and $F0
    add 12
    ld [hl+], a                 ; x
    ld a, 5
    ld [hl+], a                 ; tile
    ld a, c
    and $10
    ld [hl+], a                 ; attributes: palette 0/1
    ld a, c
    add 13
    ld c, a
    dec b
    jr nz, .spr
    ; table
    ld hl, TABLE
    ld b, 0
.tab:
    ld a, b
    ld [hl+], a
    inc b
    jr nz, .tab
    ; DMA routine in HRAM
    ld de, dma_routine
    ld hl, HRAM_DMA
    ld c, dma_routine_end - dma_routine
    call copy
    xor a
    ld [FRAME], a
    ld a, $5A
    ld [SEED], a
    ld a, $E4
    ldh [rBGP], a
    ldh [rOBP0], a
    ld a, $1B
    ldh [rOBP1], a
    ld hl, HOOK_VBLANK
    ld de, vblank
    call set_hook
    ld a, $93                   ; LCD on, BG on, OBJ on, tiles at $8000
    ldh [rLCDC], a
    ld a, $01
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei

.loop:
    halt
    nop
    call read_joypad
    call move_sprites
    call crunch
    jr .loop

; VBlank: DMA the shadow OAM, scroll, write one row of the map.
vblank:
    push af
    push bc
    push hl
    ld a, high(SHADOW_OAM)
    call HRAM_DMA
    ld a, [FRAME]
    inc a
    ld [FRAME], a
    ldh [rSCX], a
    srl a
    ldh [rSCY], a
    ; row (FRAME & 31) of the map gets tiles from the table
    ld a, [FRAME]
    and $1F
    ld l, a
    ld h, 0
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    ld bc, $9800
    add hl, bc
    ld b, 20
    ld a, [FRAME]
.row:
    and $03
    ld [hl+], a
    inc a
    dec b
    jr nz, .row
    pop hl
    pop bc
    pop af
    reti

read_joypad:
    ld a, $20
    ldh [rP1], a
    ldh a, [rP1]
    ldh a, [rP1]
    cpl
    and $0F
    swap a
    ld b, a
    ld a, $10
    ldh [rP1], a
    ldh a, [rP1]
    ldh a, [rP1]
    ldh a, [rP1]
    cpl
    and $0F
    or b
    ld [JOY], a
    ld a, $30
    ldh [rP1], a
    ret

; move_sprites: each sprite moves by a pseudo-random step; Right/Left nudge x.
move_sprites:
    ld hl, SHADOW_OAM
    ld b, 40
.one:
    ld a, [SEED]                ; xorshift-ish byte PRNG
    ld c, a
    add a
    xor c
    ld c, a
    srl a
    xor c
    ld [SEED], a
    and $03
    dec a
    dec a                       ; -2..1
    add [hl]
    ld [hl+], a                 ; y
    ld a, [JOY]
    bit 4, a                    ; Right
    ld a, [hl]
    jr z, .noright
    inc a
.noright:
    inc a
    ld [hl+], a                 ; x
    inc hl
    inc hl
    dec b
    jr nz, .one
    ret

; crunch: 16-bit checksum of the table, then update each entry with a
; shift-and-add multiply (x * 5 + frame).
crunch:
    ld hl, TABLE
    ld de, 0
    ld b, 0
.sum:
    ld a, [hl+]
    add e
    ld e, a
    jr nc, .nc
    inc d
.nc:
    dec b
    jr nz, .sum
    ld a, e
    ld [CHECKSUM], a
    ld a, d
    ld [CHECKSUM + 1], a
    ld hl, TABLE
    ld b, 0
    ld a, [FRAME]
    ld c, a
.mul:
    ld a, [hl]
    ld d, a
    add a
    add a
    add d
    add c
    ld [hl+], a
    dec b
    jr nz, .mul
    ret

dma_routine:
    ldh [rDMA], a
    ld a, 40
.w:
    dec a
    jr nz, .w
    ret
dma_routine_end:

tiles:
    ds 16, $00                  ; tile 0: shade 0
    db $FF, $00, $FF, $00, $FF, $00, $FF, $00, $FF, $00, $FF, $00, $FF, $00, $FF, $00
    db $00, $FF, $00, $FF, $00, $FF, $00, $FF, $00, $FF, $00, $FF, $00, $FF, $00, $FF
    ds 16, $FF                  ; tile 3: shade 3
    db $AA, $AA, $55, $55, $AA, $AA, $55, $55, $AA, $AA, $55, $55, $AA, $AA, $55, $55
    db $3C, $3C, $7E, $42, $FF, $81, $FF, $81, $FF, $81, $FF, $81, $7E, $42, $3C, $3C
tiles_end:
