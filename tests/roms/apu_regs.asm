; apu_regs.asm - sound register read-back and APU power (Pan Docs: Audio
; Registers).  The APU's sound is not part of the emulation, but its
; registers are state a game can read:
;   write-only and unused bits read 1: after writing $00, NR10..NR51 read
;   $80 $3F $00 $FF $BF, $FF(unused) $3F $00 $FF $BF, $7F $FF $9F $FF $BF,
;   $FF(unused) $FF $00 $00 $BF, $00 $00.
;   NR52 bits 4-6 read 1, bits 0-3 report the channels (all off once their
;   DACs are off: NRx2 = $00, NR30 = $00).
;   NR52 bit 7 = 0 "clears all APU registers and makes them read-only until
;   turned back on, except NR52"; wave RAM stays readable and writable.

    title "APU_REGS"
    include "testlib.asm"

main:
    ld sp, STACK_TOP
    call lib_init
    di
    ld a, $80
    ldh [rNR52], a
    ; read masks
    ld hl, masks
    ld c, $10
.mask:
    xor a
    ldh [c], a
    ldh a, [c]
    ld b, [hl]
    inc hl
    push hl
    push bc
    ld hl, s_mask
    call expect
    pop bc
    pop hl
    inc c
    ld a, c
    cp $26
    jr nz, .mask
    ldh a, [rNR52]
    ld b, $F0
    ld hl, s_nr52_on
    call expect
    ; values survive while on
    ld a, $77
    ldh [rNR50], a
    ld a, $F3
    ldh [rNR51], a
    ld a, $80
    ldh [$FF11], a              ; NR11 duty 2
    ld a, $5A
    ldh [$FF30], a              ; wave RAM
    ; power off: registers cleared and read-only
    xor a
    ldh [rNR52], a
    ldh a, [rNR52]
    ld b, $70
    ld hl, s_nr52_off
    call expect
    ldh a, [rNR50]
    ld b, $00
    ld hl, s_nr50_off
    call expect
    ldh a, [rNR51]
    ld b, $00
    ld hl, s_nr51_off
    call expect
    ldh a, [$FF11]
    ld b, $3F
    ld hl, s_nr11_off
    call expect
    ld a, $55
    ldh [rNR50], a              ; ignored while off
    ldh a, [rNR50]
    ld b, $00
    ld hl, s_nr50_ro
    call expect
    ldh a, [$FF30]
    ld b, $5A
    ld hl, s_wave_off
    call expect
    ld a, $A5
    ldh [$FF31], a              ; wave RAM writable while off
    ldh a, [$FF31]
    ld b, $A5
    ld hl, s_wave_w
    call expect
    ; power on again: writable, still cleared
    ld a, $80
    ldh [rNR52], a
    ldh a, [rNR52]
    ld b, $F0
    ld hl, s_nr52_on2
    call expect
    ldh a, [rNR50]
    ld b, $00
    ld hl, s_nr50_on2
    call expect
    ld a, $12
    ldh [rNR50], a
    ldh a, [rNR50]
    ld b, $12
    ld hl, s_nr50_w
    call expect
    ld a, $77
    ldh [rNR50], a
    ld a, $F3
    ldh [rNR51], a
    jp finish

masks:
    db $80, $3F, $00, $FF, $BF          ; NR10-NR14
    db $FF, $3F, $00, $FF, $BF          ; $FF15 (unused), NR21-NR24
    db $7F, $FF, $9F, $FF, $BF          ; NR30-NR34
    db $FF, $FF, $00, $00, $BF          ; $FF1F (unused), NR41-NR44
    db $00, $00                         ; NR50, NR51

s_mask:     db "sound register read after writing 00", 0
s_nr52_on:  db "NR52 on, channels off", 0
s_nr52_off: db "NR52 after power off", 0
s_nr50_off: db "NR50 cleared by power off", 0
s_nr51_off: db "NR51 cleared by power off", 0
s_nr11_off: db "NR11 cleared by power off", 0
s_nr50_ro:  db "NR50 write ignored while off", 0
s_wave_off: db "wave RAM kept while off", 0
s_wave_w:   db "wave RAM written while off", 0
s_nr52_on2: db "NR52 on again", 0
s_nr50_on2: db "NR50 after power on", 0
s_nr50_w:   db "NR50 writable again", 0
