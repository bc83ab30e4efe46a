; oam_dma_bus.asm - what the CPU reads outside HRAM while an OAM DMA runs
; (DMG bus conflicts; Pan Docs OAM DMA Transfer: "the CPU can access only
; HRAM").  The DMA unit owns the external bus (cartridge ROM/RAM and WRAM) for
; the 160 M-cycles; a CPU read there sees the byte the DMA reads in that
; M-cycle.  With the DMA written at d=0 and byte i read at d = i + 2 (one
; M-cycle of start-up, the same timing that makes OAM readable again from
; d = 162, see oam_dma.asm), a read at d = 41 returns source byte 39.  VRAM is
; on its own bus, so a VRAM read during a DMA from WRAM is not disturbed.
; Source: SCRATCH[i] = i.  The reads run from HRAM; the LCD is off.

    title "OAM_DMA_BUS"
    include "testlib.asm"

PROBE EQU $FF90

main:
    ld sp, STACK_TOP
    call lib_init
    di
    call lcd_off
    ld de, probe
    ld hl, PROBE
    ld c, probe_end - probe
    call copy
    ld hl, SCRATCH
    ld b, 0
.fill:
    ld a, b
    ld [hl+], a
    inc b
    jr nz, .fill
    ld a, $3C
    ld [$8000], a

    ld hl, $0150                ; ROM
    ld a, high(SCRATCH)
    ld b, 10                    ; read at d = 41
    call PROBE
    ld b, 39
    ld hl, s_rom
    call expect
    ld hl, SCRATCH + $80        ; WRAM, another address than the DMA's
    ld a, high(SCRATCH)
    ld b, 10
    call PROBE
    ld b, 39
    ld hl, s_wram
    call expect
    ld hl, $8000                ; VRAM: separate bus
    ld a, high(SCRATCH)
    ld b, 10
    call PROBE
    ld b, $3C
    ld hl, s_vram
    call expect
    ld hl, $0150                ; later in the transfer: d = 81 -> byte 79
    ld a, high(SCRATCH)
    ld b, 20
    call PROBE
    ld b, 79
    ld hl, s_rom81
    call expect
    jp finish

; probe (runs in HRAM): start DMA from page A, read [HL] at d = 4*B + 1,
; wait for the end of the transfer, return the byte read in A.
probe:
    ldh [rDMA], a               ; d = 0
.w:
    dec b
    jr nz, .w
    ld a, [hl]                  ; read at d = 4B + 1
    ld b, 45
.w2:
    dec b
    jr nz, .w2
    ret
probe_end:

s_rom:   db "ROM read at d=41 during DMA from WRAM", 0
s_wram:  db "WRAM read at d=41 during DMA from WRAM", 0
s_vram:  db "VRAM read during DMA from WRAM", 0
s_rom81: db "ROM read at d=81 during DMA from WRAM", 0
