; oam_dma.asm - OAM DMA (Pan Docs: OAM DMA Transfer).
;   Writing $XX to DMA ($FF46) copies $XX00-$XX9F to OAM $FE00-$FE9F in 160
;   M-cycles (after one M-cycle of start-up); the CPU can only use HRAM
;   meanwhile, so the waiting code runs from HRAM; OAM reads $FF while the
;   transfer runs.  DMA reads back the last value written.
;   Duration: from HRAM, OAM[0] read 157 M-cycles after the DMA write is still
;   $FF; read 165 M-cycles after, it holds the copied byte.
;   Source pages in WRAM ($C1) and in ROM ($01: $0100-$019F).
; The LCD is off, so the PPU does not lock OAM.

    title "OAM_DMA"
    include "testlib.asm"

HRAM_CODE EQU $FF80
PROBE     EQU $FF90

main:
    ld sp, STACK_TOP
    call lib_init
    di
    call lcd_off
    ; copy the routines to HRAM
    ld de, dma_wait
    ld hl, HRAM_CODE
    ld c, dma_wait_end - dma_wait
    call copy
    ld de, probe
    ld hl, PROBE
    ld c, probe_end - probe
    call copy
    ; source: SCRATCH[i] = i ^ $A5, and clear OAM
    ld hl, SCRATCH
    ld b, 0
.fill:
    ld a, b
    xor $A5
    ld [hl+], a
    inc b
    jr nz, .fill
    ld hl, $FE00
    ld b, $A0
    xor a
.clr:
    ld [hl+], a
    dec b
    jr nz, .clr

    ; --- full copy from WRAM
    ld a, high(SCRATCH)
    call HRAM_CODE
    ld hl, $FE00
    ld de, SCRATCH
    ld c, $A0
    ld b, 0
.cmp:
    ld a, [de]
    inc de
    cp [hl]
    inc hl
    jr z, .same
    inc b
.same:
    dec c
    jr nz, .cmp
    ld a, b
    ld b, 0
    ld hl, s_copy
    call expect
    ldh a, [rDMA]
    ld b, high(SCRATCH)
    ld hl, s_reg
    call expect

    ; --- copy from ROM page $01
    ld a, $01
    call HRAM_CODE
    ld hl, $FE00
    ld de, $0100
    ld c, $A0
    ld b, 0
.cmp2:
    ld a, [de]
    inc de
    cp [hl]
    inc hl
    jr z, .same2
    inc b
.same2:
    dec c
    jr nz, .cmp2
    ld a, b
    ld b, 0
    ld hl, s_rom
    call expect

    ; --- duration: OAM read during and after (source SCRATCH: OAM[0] = $A5)
    ld a, high(SCRATCH)
    ld b, 39                    ; read at d = 4*39 + 1 = 157
    call PROBE
    ld b, $FF
    ld hl, s_during
    call expect
    ld a, high(SCRATCH)
    ld b, 41                    ; read at d = 165
    call PROBE
    ld b, $A5
    ld hl, s_after
    call expect
    jp finish

; dma_wait (runs in HRAM): start DMA from page A and wait 41*4 M-cycles.
dma_wait:
    ldh [rDMA], a
    ld a, 41
.w:
    dec a
    jr nz, .w
    ret
dma_wait_end:

; probe (runs in HRAM): start DMA from page A, read OAM[0] at d = 4*B + 1,
; wait for the end of the transfer, return the byte read in A.
probe:
    ld hl, $FE00
    ldh [rDMA], a               ; d = 0
.w:
    dec b
    jr nz, .w                   ; d = 1 .. 4B-1
    ld a, [hl]                  ; read at d = 4B + 1
    ld b, 45
.w2:
    dec b
    jr nz, .w2
    ret
probe_end:

s_copy:   db "bytes differing after DMA from C100", 0
s_reg:    db "DMA register read", 0
s_rom:    db "bytes differing after DMA from 0100", 0
s_during: db "OAM read 157 M into DMA", 0
s_after:  db "OAM read 165 M after DMA start", 0
