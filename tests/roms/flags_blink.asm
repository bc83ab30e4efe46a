; flags_blink.asm - flags a game sets for a moment and clears again, as Pokemon Red's starter screen sets the
; Pokedex "owned" flags of all three starters and keeps one: the ROM of the bits milestone's test
; (tests/test_milestones.py: count now reports the flags still set, count peak the most ever set).
;   $C000 wFlags   $00 until VBlank 15, then $0F; from VBlank 45 $01 (bits 1-3 cleared); from VBlank 75 $81
;   $C001 wFrames  VBlank interrupts since start-up (wraps at 256)
; The main loop HALTs until each VBlank interrupt, as a game's frame loop does.

    title "FLAGS"

    org $0040
    jp VBlank

    org $0100
    nop
    jp Start

    org $0150
Start:
    di
    ld sp, $DFFE
    xor a
    ld [$C000], a
    ld [$C001], a
    ldh [$0F], a            ; IF: nothing pending
    ld a, $01
    ldh [$FF], a            ; IE: VBlank only
    ei
.frame:
    halt
    nop
    ld a, [$C001]
    ld b, a
    ld a, b
    cp 15
    jr nz, .not15
    ld a, $0F               ; four flags at once
    ld [$C000], a
.not15:
    ld a, b
    cp 45
    jr nz, .not45
    ld a, $01               ; three of them cleared again
    ld [$C000], a
.not45:
    ld a, b
    cp 75
    jr nz, .frame
    ld a, $81               ; one more, kept
    ld [$C000], a
    jr .frame

VBlank:
    push af
    ld a, [$C001]
    inc a
    ld [$C001], a
    pop af
    reti
