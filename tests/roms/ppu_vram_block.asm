; ppu_vram_block: CPU access to VRAM and OAM while the PPU uses them
; (Pan Docs, "Accessing VRAM and OAM"): VRAM reads give $FF and writes are lost
; in mode 3; OAM reads give $FF and writes are lost in modes 2 and 3; both are
; free in HBlank (mode 0) and VBlank (mode 1).
; The scene: two tile rows whose tiles were written during mode 3 (lost: stays
; blank) and during HBlank (kept: solid), side by side.
    title "PPU VRAM BLOCK"
    include "ppu_lib.inc"

Start:
    call Init
    ld hl, $9800
    ld bc, $0400
    ld d, 34            ; blank
    call MemFill
    ld a, $AA
    ld [$9A00], a       ; probe bytes, set with the LCD off
    ld [$FE00], a
    ld a, $E4
    ldh [rBGP], a
    ld a, $91
    ldh [rLCDC], a
    call WaitLY144
    ; --- VRAM read in mode 3 -> $FF
    call WaitMode3
    ld a, [$9A00]
    ld b, a
    cp $FF
    ld hl, VramReadText
    jp nz, Fail
    ; --- VRAM read in HBlank -> the byte
    call WaitMode0
    ld a, [$9A00]
    ld b, a
    cp $AA
    ld hl, VramHblankText
    jp nz, Fail
    ; --- VRAM write in mode 3 is lost, in HBlank it lands (map row 2, columns 1..)
    call WaitMode3
    ld a, 18            ; solid tile
    ld [$9841], a
    call WaitMode0
    ld a, 18
    ld [$9842], a
    ; --- OAM read in mode 2 -> $FF, in mode 3 -> $FF, in HBlank -> the byte
    call WaitMode2
    ld a, [$FE00]
    ld b, a
    cp $FF
    ld hl, OamMode2Text
    jp nz, Fail
    call WaitMode3
    ld a, [$FE00]
    ld b, a
    cp $FF
    ld hl, OamMode3Text
    jp nz, Fail
    call WaitMode0
    ld a, [$FE00]
    ld b, a
    cp $AA
    ld hl, OamHblankText
    jp nz, Fail
    ; --- OAM write in mode 2 is lost
    call WaitMode2
    ld a, $11
    ld [$FE01], a
    call WaitLY144
    ld a, [$FE01]
    ld b, a
    or a
    ld hl, OamWriteText
    jp nz, Fail
    ld a, [$9841]
    ld b, a
    cp 34
    ld hl, VramWriteText
    jp nz, Fail
    ld a, [$9842]
    ld b, a
    cp 18
    ld hl, VramHblankWriteText
    jp nz, Fail
    call ReportPass
Idle:
    halt
    jr Idle
Fail:
    call ReportFail
    jr Idle

; WaitModeN: return early in mode N (polls STAT; interrupts are off).
WaitMode0:
    ld c, 0
    jr WaitMode
WaitMode2:
    ld c, 2
    jr WaitMode
WaitMode3:
    ld c, 3
WaitMode:               ; first leave mode c, then wait for it to begin
.leave:
    ldh a, [rSTAT]
    and 3
    cp c
    jr z, .leave
.enter:
    ldh a, [rSTAT]
    and 3
    cp c
    jr nz, .enter
    ret

VBlankHandler:
    reti
StatHandler:
    reti

VramReadText:
    db "VRAM read in mode 3", 0
VramHblankText:
    db "VRAM read in HBlank", 0
VramWriteText:
    db "VRAM write in mode 3 landed", 0
VramHblankWriteText:
    db "VRAM write in HBlank lost", 0
OamMode2Text:
    db "OAM read in mode 2", 0
OamMode3Text:
    db "OAM read in mode 3", 0
OamHblankText:
    db "OAM read in HBlank", 0
OamWriteText:
    db "OAM write in mode 2 landed", 0
