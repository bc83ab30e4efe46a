; ppu_stat_irq: STAT interrupt sources counted per frame, and LY at interrupt time.
; For each case the STAT enables and LYC are set, three frames pass, and the
; count of STAT interrupts between two VBlank interrupts (plus LY read in the
; first handler of that frame) is kept.  Checked against Pan Docs (STAT, LCD
; interrupts): LYC=K fires once per frame at LY=K; the HBlank source 144 times
; from LY=0; the mode 1 source once at LY=144.  Cases that depend on how
; sources block each other (the STAT line is the OR of the enabled sources and
; interrupts on its rising edge) are drawn on screen but not asserted here;
; the frame comparison with gambatte checks them.  Results are drawn as rows:
; case number, count, LY (hex).
    title "PPU STAT IRQ"
    include "ppu_lib.inc"

hCount    EQU $FF95
hLyFirst  EQU $FF96
hLastCnt  EQU $FF97
hLastLy   EQU $FF98
hSeen     EQU $FF99
wResults  EQU $C200     ; count, LY per case
NCASES    EQU 11
NOCHECK   EQU $FF

Start:
    call Init
    ld hl, $9800
    ld bc, $0400
    ld d, 34            ; blank
    call MemFill
    ld a, $E4
    ldh [rBGP], a
    xor a
    ldh [hCount], a
    ldh [hSeen], a
    ldh [hLyFirst], a
    ldh [rSTAT], a
    ld a, $91
    ldh [rLCDC], a
    ld a, IE_VBLANK | IE_STAT
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
    ld hl, Cases
    ld de, wResults
    ld b, NCASES
.case:
    call WaitFrame      ; change sources right after VBlank starts
    ld a, [hl+]
    ldh [rSTAT], a
    ld a, [hl+]
    ldh [rLYC], a
    inc hl              ; skip the expected values
    inc hl
    call WaitFrame
    call WaitFrame
    call WaitFrame
    ldh a, [hLastCnt]
    ld [de], a
    inc de
    ldh a, [hLastLy]
    ld [de], a
    inc de
    dec b
    jr nz, .case
    xor a
    ldh [rSTAT], a
    ld a, IE_VBLANK
    ldh [rIE], a
    ; draw the table in VBlanks (VRAM is free in mode 1): row 2+i: i, count, LY
    call WaitFrame
    ld hl, $9800 + 2 * 32 + 1
    ld de, wResults
    ld b, 0
.draw:
    push hl
    ld a, b
    call WriteHexTile
    inc hl
    ld a, [de]
    inc de
    call WriteHexTile
    inc hl
    ld a, [de]
    inc de
    call WriteHexTile
    pop hl
    push de
    ld de, 32
    add hl, de
    pop de
    inc b
    ld a, b
    and 3
    call z, WaitFrame   ; at most 4 rows per VBlank
    ld a, b
    cp NCASES
    jr nz, .draw
    ; check the documented cases
    ld hl, Cases + 2
    ld de, wResults
    ld c, 0
.check:
    ld a, [hl+]         ; expected count
    cp NOCHECK
    jr z, .skip
    ld b, a
    ld a, [de]
    cp b
    jr nz, .bad
    inc de
    ld a, [hl]          ; expected LY
    ld b, a
    ld a, [de]
    cp b
    jr nz, .bad
    dec de
.skip:
    inc de
    inc de
    ld a, l
    add a, 3
    ld l, a
    ld a, h
    adc a, 0
    ld h, a
    inc c
    ld a, c
    cp NCASES
    jr nz, .check
    call ReportPass
    jr Idle
.bad:
    ld b, c
    ld hl, CaseText
    call ReportFail
Idle:
    halt
    jr Idle

; WaitFrame: sleep until the VBlank handler has advanced hFrame.
WaitFrame:
    ldh a, [hFrame]
    ld c, a
.wait:
    halt
    ldh a, [hFrame]
    cp c
    jr z, .wait
    ret

VBlankHandler:
    push af
    ldh a, [hCount]
    ldh [hLastCnt], a
    ldh a, [hLyFirst]
    ldh [hLastLy], a
    xor a
    ldh [hCount], a
    ldh [hSeen], a
    ldh [hLyFirst], a
    ldh a, [hFrame]
    inc a
    ldh [hFrame], a
    and $0F             ; frame digit in the top-left corner
    ld [$9800], a
    pop af
    reti

StatHandler:
    push af
    ldh a, [hSeen]
    or a
    jr nz, .counted
    ldh a, [rLY]
    ldh [hLyFirst], a
    ld a, 1
    ldh [hSeen], a
.counted:
    ldh a, [hCount]
    inc a
    ldh [hCount], a
    pop af
    reti

; STAT enables, LYC, expected count, expected LY (NOCHECK: drawn, not asserted)
Cases:
    db STAT_LYC, 1, 1, 1
    db STAT_LYC, 77, 1, 77
    db STAT_LYC, 143, 1, 143
    db STAT_LYC, 144, 1, 144
    db STAT_LYC, 0, 1, 0
    db STAT_HBLANK, 0, 144, 0
    db STAT_VBLANK, 0, 1, 144
    db STAT_OAM, 0, NOCHECK, 0
    db STAT_HBLANK | STAT_OAM, 0, NOCHECK, 0
    db STAT_HBLANK | STAT_LYC, 77, NOCHECK, 0
    db STAT_OAM | STAT_LYC, 77, NOCHECK, 0

CaseText:
    db "STAT irq case", 0
