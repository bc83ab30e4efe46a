; stat_irq_lcdon: when the STAT interrupt (HBlank, OAM, LY=LYC) is taken in the
; first lines after the LCD is switched on, with the source enabled before the
; LCD is switched on or about a line after, under SCX 0..7, with the CPU
; counting (an INC A sled), idling (NOPs) or halted.  Each case is the
; instruction sequence of one of gbmicrotest's DMG-verified tests (aappleby,
; sources in aappleby/metroboy microtests/: hblank_int_l1, hblank_int_scx*,
; lcdon_to_oam_int_l1/_l2, oam_int_*, int_hblank_{nops,incs,halt}_scx*,
; line_153_lyc0_int_inc_sled ...), written from their description, from the
; LCD switch-on on: only the set-up before it differs (the LCD is switched off
; in VBlank, the timer is reset so that it can time the interrupt).
;
; Each case runs 4 times, K = 0..3: LCD off, registers cleared, the case's own
; set-up, DIV := 0 and TIMA := 0 (TAC $05: TIMA counts every 4 M-cycles), LCD
; on ($91), the case's own sequence.  The STAT handler waits K M-cycles, reads
; TIMA, LY and STAT and logs (A, TIMA, LY, STAT); A is the sled's count, where
; gbmicrotest's verdict is read.  From the 4 TIMA values the interrupt's
; M-cycle follows (tests/test_ppu_stat_irq_lcdon.py).  A case the interrupt
; never comes to logs (A, $FF, LY, $FF).  The log (16 bytes per case, from
; $D000) is compared with gambatte's; $C000 = $A5 when the ROM has finished.
    title "STAT IRQ LCD ON"
    include "ppu_lib.inc"

rDIV    EQU $FF04
rTIMA   EQU $FF05
rTAC    EQU $FF07

hEntry  EQU $FFA0       ; 3 - K: where the handler enters its 3-NOP sled
hPtr    EQU $FFA1       ; 2 bytes: next log byte
wLog    EQU $D000

; The LCD switched on, DIV and TIMA reset just before (A is clobbered).
MACRO lcd_on_timed
    xor a
    ldh [rDIV], a
    ldh [rTIMA], a
    ld a, $91
    ldh [rLCDC], a
ENDM

; gbmicrotest hblank_int_l1/_l2, hblank_int_scx*, lcdon_to_oam_int_l1/_l2,
; oam_int_inc_sled: the source enabled \1 NOPs after the LCD is switched on
; (SCX := \2 first unless \2 is $FF), then EI and a 200-INC sled.
; \3: the STAT enables.
MACRO late_incs
    di
    xor a
    ldh [rIF], a
    lcd_on_timed
    rept \1
    nop
    endr
    if \2 != $FF
    ld a, \2
    ldh [rSCX], a
    endc
    ld a, \3
    ldh [rSTAT], a
    ld a, IE_STAT
    ldh [rIE], a
    ei
    xor a
    rept 200
    inc a
    endr
    jp NoInt
ENDM

; gbmicrotest oam_int_halt_a/_b (\1 = 0: HALT) and oam_int_nops_a/_b (\1 = 1:
; NOPs): the OAM source enabled a line after LCD on, DIV written, then wait.
MACRO late_div
    di
    xor a
    ldh [rIF], a
    lcd_on_timed
    rept 114
    nop
    endr
    ld a, STAT_OAM
    ldh [rSTAT], a
    ld a, IE_STAT
    ldh [rIE], a
    ei
    ldh [rDIV], a
    if \1 == 0
    halt
    nop
    else
    rept 200
    nop
    endr
    endc
    jp NoInt
ENDM

; gbmicrotest hblank_int_l0, int_hblank_{nops,incs,halt}_scx*: SCX := \1 and
; the HBlank source enabled with the LCD off; \2 says what follows:
;   0: LCD on, EI, XOR A, NOPs          (int_hblank_nops_scx*)
;   1: EI, LCD on, XOR A, INC sled      (int_hblank_incs_scx*, hblank_int_l0)
;   2: LCD on, EI, XOR A, HALT          (int_hblank_halt_scx*, one version)
;   3: EI, LCD on, XOR A, HALT          (the other)
MACRO early
    ld a, \1
    ldh [rSCX], a
    ld a, STAT_HBLANK
    ldh [rSTAT], a
    ld a, IE_STAT
    ldh [rIE], a
    xor a
    ldh [rIF], a
    if \2 == 1 || \2 == 3
    ei
    endc
    lcd_on_timed
    if \2 == 0 || \2 == 2
    ei
    endc
    xor a
    if \2 == 0
    rept 120
    nop
    endr
    elif \2 == 1
    rept 200
    inc a
    endr
    else
    halt
    nop
    endc
    jp NoInt
ENDM

; gbmicrotest lyc2_int_halt_a/_b: LYC := \1 and the LY=LYC source enabled a line
; after LCD on (in line 1's mode 2), DIV written, HALT.
MACRO late_lyc_halt
    di
    xor a
    ldh [rIF], a
    lcd_on_timed
    rept 114
    nop
    endr
    ld a, \1
    ldh [rLYC], a
    ld a, STAT_LYC
    ldh [rSTAT], a
    ld a, IE_STAT
    ldh [rIE], a
    ei
    ldh [rDIV], a
    halt
    nop
    jp NoInt
ENDM

; LY=LYC with LYC := \1, enabled with the LCD off; EI, LCD on, XOR A, HALT
; (gbmicrotest int_lyc_halt, lyc2_int_halt_*).
MACRO lyc_halt
    ld a, STAT_LYC
    ldh [rSTAT], a
    ld a, IE_STAT
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
    ld a, \1
    ldh [rLYC], a
    lcd_on_timed
    xor a
    halt
    nop
    jp NoInt
ENDM

; STAT read on the line the LCD is switched on (SCX := \1): K + 47 NOPs after
; the LCDC write (and a 12 M-cycle computed jump), STAT is read in the M-cycle
; LCD-on + 248 + 4 K T-cycles: mode 3 or mode 0.  Logs (STAT, 0, LY, 0).
MACRO stat_read
    ld a, \1
    ldh [rSCX], a
    lcd_on_timed
    ldh a, [hEntry]
    ld e, a
    ld d, 0
    ld hl, .sled\@
    add hl, de
    jp hl
.sled\@:
    nop
    nop
    nop
    rept 47
    nop
    endr
    ldh a, [rSTAT]
    ld b, a
    ldh a, [rLY]
    ld d, a
    ld c, 0
    ld e, 0
    jp Finish
ENDM

Start:
    call Init
    ld a, low(wLog)
    ldh [hPtr], a
    ld a, high(wLog)
    ldh [hPtr+1], a
    ld hl, Cases
.case:
    ld a, [hl+]
    ld e, a
    ld a, [hl+]
    ld d, a
    or e
    jr z, .done
    push hl
    ld a, 3
.run:
    ldh [hEntry], a
    push de
    call RunOne
    pop de
    ldh a, [hEntry]
    dec a
    cp $FF
    jr nz, .run
    pop hl
    jr .case
.done:
    call LcdOff
    ld a, $A5
    ld [wResult], a
.idle:
    jr .idle

; RunOne: the case at DE, from a switched-off LCD and cleared registers.  It
; returns through Finish (from the handler, or from NoInt).
RunOne:
    di
    call LcdOff
    xor a
    ldh [rIE], a
    ldh [rIF], a
    ldh [rSTAT], a
    ldh [rSCX], a
    ldh [rLYC], a
    ld a, $05
    ldh [rTAC], a
    ld h, d
    ld l, e
    jp hl

; The STAT handler (via the vector's JP): K NOPs, then TIMA, LY, STAT.
StatHandler:
    ld b, a
    ldh a, [hEntry]
    ld e, a
    ld d, 0
    ld hl, .sled
    add hl, de
    jp hl
.sled:
    nop
    nop
    nop
    ldh a, [rTIMA]
    ld c, a
    ldh a, [rLY]
    ld d, a
    ldh a, [rSTAT]
    ld e, a
    pop hl              ; the interrupted PC: Finish returns to RunOne's caller
    jr Finish

; A case that ran out without its interrupt.
NoInt:
    di
    ld b, a
    ld c, $FF
    ldh a, [rLY]
    ld d, a
    ld e, $FF

; Finish: log B, C, D, E.
Finish:
    ldh a, [hPtr]
    ld l, a
    ldh a, [hPtr+1]
    ld h, a
    ld a, b
    ld [hl+], a
    ld a, c
    ld [hl+], a
    ld a, d
    ld [hl+], a
    ld a, e
    ld [hl+], a
    ld a, l
    ldh [hPtr], a
    ld a, h
    ldh [hPtr+1], a
    ret

VBlankHandler:
    reti

; line_153_lyc0_int_inc_sled: a loop from LCD on to the start of line 143,
; then LYC := 0 and the LY=LYC source enabled; the sled counts to the
; interrupt in line 153 (LY=LYC with 0 there).
Line153Lyc0:
    di
    xor a
    ldh [rIF], a
    lcd_on_timed
    xor a
    ld bc, 2972
.wait:
    dec bc
    cp b
    jr nz, .wait
    xor a
    ldh [rLYC], a
    ld a, STAT_LYC
    ldh [rSTAT], a
    ld a, IE_STAT
    ldh [rIE], a
    ei
    xor a
    rept 1200
    inc a
    endr
    jp NoInt

HblankL1:
    late_incs 114, $FF, STAT_HBLANK
HblankL2:
    late_incs 228, $FF, STAT_HBLANK
HblankScx0:
    late_incs 114, 0, STAT_HBLANK
HblankScx1:
    late_incs 114, 1, STAT_HBLANK
HblankScx2:
    late_incs 114, 2, STAT_HBLANK
HblankScx3:
    late_incs 114, 3, STAT_HBLANK
HblankScx4:
    late_incs 114, 4, STAT_HBLANK
HblankScx5:
    late_incs 114, 5, STAT_HBLANK
HblankScx6:
    late_incs 114, 6, STAT_HBLANK
HblankScx7:
    late_incs 114, 7, STAT_HBLANK
OamL1:
    late_incs 114, $FF, STAT_OAM
OamL2:
    late_incs 228, $FF, STAT_OAM
OamHalt:
    late_div 0
OamNops:
    late_div 1
EarlyNops0:
    early 0, 0
EarlyNops1:
    early 1, 0
EarlyNops2:
    early 2, 0
EarlyNops3:
    early 3, 0
EarlyNops4:
    early 4, 0
EarlyNops5:
    early 5, 0
EarlyNops6:
    early 6, 0
EarlyNops7:
    early 7, 0
EarlyIncs0:
    early 0, 1
EarlyIncs1:
    early 1, 1
EarlyIncs2:
    early 2, 1
EarlyIncs3:
    early 3, 1
EarlyIncs4:
    early 4, 1
EarlyIncs5:
    early 5, 1
EarlyIncs6:
    early 6, 1
EarlyIncs7:
    early 7, 1
EarlyHalt0:
    early 0, 2
EarlyHalt1:
    early 1, 2
EarlyHalt2:
    early 2, 2
EarlyHalt3:
    early 3, 2
EarlyHalt4:
    early 4, 2
EarlyHalt5:
    early 5, 2
EarlyHalt6:
    early 6, 2
EarlyHalt7:
    early 7, 2
EiHalt0:
    early 0, 3
EiHalt1:
    early 1, 3
EiHalt2:
    early 2, 3
EiHalt3:
    early 3, 3
EiHalt4:
    early 4, 3
EiHalt5:
    early 5, 3
EiHalt6:
    early 6, 3
EiHalt7:
    early 7, 3
StatRead0:
    stat_read 0
StatRead1:
    stat_read 1
StatRead2:
    stat_read 2
StatRead3:
    stat_read 3
StatRead4:
    stat_read 4
StatRead5:
    stat_read 5
StatRead6:
    stat_read 6
StatRead7:
    stat_read 7
Lyc2LateHalt:
    late_lyc_halt 2
LycHalt1:
    lyc_halt 1
LycHalt2:
    lyc_halt 2

; The cases, in log order (tests/test_ppu_stat_irq_lcdon.py names them).
Cases:
    dw HblankL1, HblankL2
    dw HblankScx0, HblankScx1, HblankScx2, HblankScx3, HblankScx4, HblankScx5, HblankScx6, HblankScx7
    dw OamL1, OamL2, OamHalt, OamNops, Line153Lyc0
    dw EarlyNops0, EarlyNops1, EarlyNops2, EarlyNops3, EarlyNops4, EarlyNops5, EarlyNops6, EarlyNops7
    dw EarlyIncs0, EarlyIncs1, EarlyIncs2, EarlyIncs3, EarlyIncs4, EarlyIncs5, EarlyIncs6, EarlyIncs7
    dw EarlyHalt0, EarlyHalt1, EarlyHalt2, EarlyHalt3, EarlyHalt4, EarlyHalt5, EarlyHalt6, EarlyHalt7
    dw EiHalt0, EiHalt1, EiHalt2, EiHalt3, EiHalt4, EiHalt5, EiHalt6, EiHalt7
    dw LycHalt1, LycHalt2
    dw StatRead0, StatRead1, StatRead2, StatRead3, StatRead4, StatRead5, StatRead6, StatRead7
    dw Lyc2LateHalt
    dw 0
