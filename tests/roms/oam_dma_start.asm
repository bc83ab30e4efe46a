; oam_dma_start.asm - the first M-cycles of OAM DMA, seen by code running in OAM (DMG).
;
; Pan Docs (OAM DMA Transfer): while it runs, the CPU can reach HRAM only; OAM reads
; $FF. mooneye-gb oam_dma_start (verified on DMG): the write to $FF46 is M-cycle 0;
; in M-cycle 1 OAM is still readable; from M-cycle 2 the transfer owns it. Written
; again while a transfer runs, the running one keeps OAM until the new one starts.
; The code: OAM holds "inc b" ($04) everywhere and runs after a "ld [hl], a" (HL =
; $FF46, A = $80: copy VRAM $8000-$809F, $D7 = "rst $10" everywhere) at $FDFF (echo
; RAM, just before OAM):
;   1. fresh transfer: $FE00 "inc b" is fetched in M-cycle 1 and runs; $FE01 in
;      M-cycle 2 reads $FF = "rst $38": B = 1;
;   2. restarted: "ld [hl], a" at $FDFE and $FDFF - the second write is the first
;      transfer's M-cycle 2; $FE00 is fetched in its M-cycle 3 (the new one's 1): $FF,
;      "rst $38" at once: B = 0.
; After the transfers OAM[0] holds $D7 both times (never "rst $10": OAM was not
; readable as the new data). Prints PASS, or "FAIL <what> got XX exp YY" lines.

    title "OAM DMA START"
    include "testlib_defs.inc"

    org $0010
    jp rst10                    ; an OAM byte read as the DMA's data: wrong
    org $0038
rst38:
    ld a, 40                    ; rst $38 ($FF read from OAM): wait for the DMA to
.wait:                          ; end (160 M-cycles), then go on at [wNext]
    dec a
    jr nz, .wait
    ld a, [wNext]
    ld l, a
    ld a, [wNext + 1]
    ld h, a
    jp hl

    org $0100
    nop
    jp main

    org $0150
    include "testlib_body.inc"

wNext EQU SCRATCH               ; where rst $38 continues (2 bytes)
wRes  EQU SCRATCH + 2           ; OAM[0], B for rounds 1 and 2

main:
    ld sp, STACK_TOP
    call lib_init
    call lcd_off
    ld hl, $8000                ; the DMA's source: "rst $10"
    ld c, 160
    ld a, $D7
.src:
    ld [hl+], a
    dec c
    jr nz, .src

    ; 1. fresh transfer
    ld hl, round1_end
    call prepare
    ld a, $77                   ; ld [hl], a at $FDFF
    ld [$FDFF], a
    call start_lcd_in_vblank
    ld b, 0
    ld a, $80
    ld hl, rDMA
    jp $FDFF
round1_end:
    ld sp, STACK_TOP
    ld a, [$FE00]
    ld [wRes + 0], a
    ld a, b
    ld [wRes + 1], a

    ; 2. restarted transfer
    call lcd_off
    ld hl, round2_end
    call prepare
    ld a, $77
    ld [$FDFE], a
    ld [$FDFF], a
    call start_lcd_in_vblank
    ld b, 0
    ld a, $80
    ld hl, rDMA
    jp $FDFE
round2_end:
    ld sp, STACK_TOP
    ld a, [$FE00]
    ld [wRes + 2], a
    ld a, b
    ld [wRes + 3], a

    ld a, [wRes + 0]
    ld b, $D7
    ld hl, s_oam1
    call expect
    ld a, [wRes + 1]
    ld b, 1
    ld hl, s_b1
    call expect
    ld a, [wRes + 2]
    ld b, $D7
    ld hl, s_oam2
    call expect
    ld a, [wRes + 3]
    ld b, 0
    ld hl, s_b2
    call expect
    jp finish

; prepare: (LCD off) rst $38 continues at HL; OAM = "inc b".
prepare:
    ld a, l
    ld [wNext], a
    ld a, h
    ld [wNext + 1], a
    ld hl, $FE00
    ld c, 160
    ld a, $04
.oam:
    ld [hl+], a
    dec c
    jr nz, .oam
    ret

; start_lcd_in_vblank: LCD on, then wait for VBlank (OAM free for the CPU).
start_lcd_in_vblank:
    ld a, $91
    ldh [rLCDC], a
.l143:
    ldh a, [rLY]
    cp 143
    jr nz, .l143
.l144:
    ldh a, [rLY]
    cp 144
    jr nz, .l144
    ret

rst10:
    ld sp, STACK_TOP
    ld hl, s_rst10
    call fail_msg
    jp finish

s_oam1:  db "fresh dma: oam[0] after", 0
s_b1:    db "fresh dma: inc b run", 0
s_oam2:  db "restarted dma: oam[0] after", 0
s_b2:    db "restarted dma: inc b run", 0
s_rst10: db "oam read as dma data (rst $10)", 0
