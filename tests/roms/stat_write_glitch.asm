; stat_write_glitch: where the DMG's spurious STAT interrupt on a STAT write
; happens (Pan Docs, "Spurious STAT interrupts": the write acts as if $FF were
; written for one M-cycle).  For each case of the table below, and each K =
; 0..255, the ROM waits for LY = SYNC (a LY=LYC wake from HALT, IME=0, so it is
; exactly in step with the PPU; SYNC $FE: switches the LCD off and on), sets
; LYC and STAT's enables to the case's
; values, waits DELAY(K) = const + K M-cycles, clears IF, writes STAT (the
; same enables again, or others) and logs IF as read by the next instruction.  K sweeps
; the write across 2.2 lines in 1 M-cycle steps, from mode 3 of line SYNC on:
; mode 0, the line start, mode 2, mode 3 of the next lines (or the VBlank
; lines).  The log (256 bytes per case, at $D000) is compared with gambatte's
; by tests/test_ppu_stat_timing.py; gbmicrotest's stat_write_glitch_* (DMG
; verified) pin single cells of it.
    title "STAT WR GLITCH"
    include "ppu_lib.inc"

hSync    EQU $FFA0      ; LYC value to wake on
hLyc     EQU $FFA1      ; LYC during the probe
hOld     EQU $FFA2      ; STAT enables written before and at the probe
wLog     EQU $D000

Start:
    call Init
    ld a, $81           ; LCD on, BG on, no objects: mode 3 is 172 T
    ldh [rLCDC], a
    ld a, IE_STAT
    ldh [rIE], a
    ld hl, wLog
    ld de, Cases
.case:
    ld a, [de]
    cp $FF
    jr z, .done
    ldh [hSync], a
    inc de
    ld a, [de]
    ldh [hLyc], a
    inc de
    ld a, [de]
    ldh [hOld], a
    ld c, a
    inc de
    ld a, [de]
    inc de
    push de
    ld e, a
    call Sweep
    pop de
    jr .case
.done:
    ld a, $A5
    ld [wResult], a
.idle:
    jr .idle

; (SYNC, LYC during the probe, old STAT enables, enables the probe writes); $FF
; ends the table.
Cases:
    db 143, $FF, $00, $00   ; lines 143, 144 (VBlank starts), 145
    db 143, 144, $00, $00
    db 152, $FF, $00, $00   ; lines 152, 153, 0
    db 152, 153, $00, $00
    db 152, 0, $00, $00     ; LYC=0 matches from line 153's third M-cycle
    db 153, $FF, $00, $00   ; lines 153, 0 (mode 1 -> mode 2), 1
    db 153, 1, $00, $00
    db 0, $FF, $00, $00     ; woken in line 153 (LYC=0): lines 153, 0, 1
    db 0, 1, $00, $00
    db 70, $FF, $00, $00    ; visible lines 70, 71, 72
    db 70, 71, $00, $00
    db 70, $FF, $08, $08    ; HBlank enabled already: its level blocks the glitch
    db 70, 71, $40, $40     ; LY=LYC enabled already
    db 70, $FF, $20, $20    ; OAM enabled already
    db 143, $FF, $10, $10   ; VBlank enabled already
    db $FE, $FF, $00, $00   ; LCD switched on (SYNC $FE): lines 0 (no OAM scan), 1, 2
    db $FE, 0, $00, $00
    db 70, $FF, $00, $20    ; OAM enabled by the probe: only in a line's first M-cycle
    db 152, $FF, $00, $20   ; ... line 0 after VBlank
    db $FE, $FF, $00, $20   ; ... lines 1 and 2 after LCD on (gbmicrotest oam_int_if_level_c/d)
    db $FF

; Sync: wait for LY = [hSync] (exact phase), then set the probe's LYC and STAT.
Sync:
    ldh a, [hSync]
    cp $FE
    jr z, .lcd_on
    ldh [rLYC], a
    ld a, STAT_LYC
    ldh [rSTAT], a
    xor a
    ldh [rIF], a
    halt                ; IME = 0: wakes on the LY=LYC request, no handler
.probe_regs:
    ldh a, [hLyc]
    ldh [rLYC], a
    ld a, c
    ldh [rSTAT], a
    ret
.lcd_on:                ; SYNC $FE: the LCD switched on is the reference point
    call LcdOff
    ld a, $81
    ldh [rLCDC], a
    jr .probe_regs

; Delay: 4 * B + 9 M-cycles including the call (B >= 1).
Delay:
    dec b
    jr nz, Delay
    ret

; Probe: clear IF, write STAT (E), log IF.
Probe:
    xor a
    ldh [rIF], a
    ld a, e
    ldh [rSTAT], a
    ldh a, [rIF]
    ld [hl+], a
    ret

; Sweep: one probe for each K = 0..255, each after its own wait for LY = SYNC.
Sweep:
K = 0
    rept 256
    call Sync
    ld b, K / 4 + 1
    call Delay
    rept K % 4
    nop
    endr
    call Probe
K = K + 1
    endr
    ret

; (VBlankHandler / StatHandler are never entered: IME stays 0.)
VBlankHandler:
StatHandler:
    reti
