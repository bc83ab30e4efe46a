; ppu_window: window scene with moving WX/WY and mid-frame window changes.
; BG: pattern tiles scrolled SCX=4; window ($9C00 map): a box row, then rows of
; digits so the window's own line counter shows in the picture.
; Every VBlank: WX = 3 + (frame & 127) (WX 3..6 clips the window's left edge),
; WY = (frame >> 1) & 127.  LYC interrupts: in line 71's HBlank the window is
; switched off (LCDC.5), in line 95's HBlank back on — its line counter must
; resume where it stopped (Pan Docs, Window).  In frames with bit 6 set the
; second handler also writes WY=100, so a window not yet triggered starts at 100.
; Holding B moves the window 1 pixel left per frame instead of right.
; Self-check: STAT bit 2 (LYC=LY) reads 1 in the LYC handler.
    title "PPU WINDOW"
    include "ppu_lib.inc"

hWx EQU $FF93

Start:
    call Init
    ld hl, $9800        ; BG: 16 + ((row + col) & 15)
    ld b, 0
.bgrow:
    ld c, 0
.bgcol:
    ld a, b
    add a, c
    and 15
    add a, 16
    ld [hl+], a
    inc c
    ld a, c
    cp 32
    jr nz, .bgcol
    inc b
    ld a, b
    cp 32
    jr nz, .bgrow
    ld hl, $9C00        ; window row 0: box tiles
    ld bc, 32
    ld d, 21
    call MemFill
    ld b, 1             ; window rows 1..31: digit (row*3 + col) & 15
.wrow:
    ld c, 0
.wcol:
    ld a, b
    add a, a
    add a, b
    add a, c
    and 15
    ld [hl+], a
    inc c
    ld a, c
    cp 32
    jr nz, .wcol
    inc b
    ld a, b
    cp 32
    jr nz, .wrow
    ld a, $E4
    ldh [rBGP], a
    ld a, 4
    ldh [rSCX], a
    xor a
    ldh [rSCY], a
    ldh [rWY], a
    ld a, 7
    ldh [hWx], a
    ldh [rWX], a
    ld a, 71
    ldh [rLYC], a
    ld a, STAT_LYC
    ldh [rSTAT], a
    ld a, $F1           ; LCD on, window map $9C00, window on, $8000 data, BG on
    ldh [rLCDC], a
    ld a, IE_VBLANK | IE_STAT
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
    call ReportPass
Idle:
    halt
    jr Idle

VBlankHandler:
    push af
    push bc
    call ReadJoypad
    ldh a, [hFrame]
    inc a
    ldh [hFrame], a
    ld c, a
    ldh a, [hButtons]
    bit 5, a            ; B: move left
    ldh a, [hWx]
    jr z, .right
    dec a
    dec a
.right:
    inc a
    and 127
    ldh [hWx], a
    add a, 3
    ldh [rWX], a
    ld a, c
    srl a
    and 127
    ldh [rWY], a
    ldh a, [rLCDC]
    set 5, a
    ldh [rLCDC], a
    ld a, 71
    ldh [rLYC], a
    pop bc
    pop af
    reti

StatHandler:
    push af
    push bc
    ldh a, [rSTAT]
    ld b, a
    bit 2, a
    jr nz, .wait
    ld a, [wResult]
    cp $5A
    jr z, .wait
    push hl
    ld hl, LycFlagText
    call ReportFail
    pop hl
.wait:                  ; act in this line's HBlank: the change shows from the next line
    ldh a, [rSTAT]
    and 3
    jr nz, .wait
    ldh a, [rLYC]
    cp 71
    jr nz, .second
    ldh a, [rLCDC]
    res 5, a
    ldh [rLCDC], a
    ld a, 95
    ldh [rLYC], a
    jr .out
.second:
    ldh a, [rLCDC]
    set 5, a
    ldh [rLCDC], a
    ld a, 71
    ldh [rLYC], a
    ldh a, [hFrame]
    bit 6, a
    jr z, .out
    ld a, 100
    ldh [rWY], a
.out:
    pop bc
    pop af
    reti

LycFlagText:
    db "STAT.2 clear in LYC handler", 0
