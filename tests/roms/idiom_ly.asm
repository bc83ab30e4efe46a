; idiom_ly.asm - VBlank wait by polling LY (a benchmark idiom ROM).
;
; Games without interrupts (and many that could use them) wait for the frame
; by reading LY in a loop: first until VBlank is over (LY < 144), then until
; it starts again (LY = 144), so the loop runs once a frame however short
; the frame's work was. IE stays 0: nothing but the LY reads ends the wait.
;
; The game: the player (sprite 0) follows the d-pad; eight "bugs" (sprites
; 1-8) wander at random; A changes the background scroll direction. All
; sprite and map writes go straight to OAM and VRAM during VBlank (no DMA).

    title "IDIOM LY"
    include "idiom_lib.inc"

wBugs       EQU $C100           ; 8 x (y, x)
wScrollDir  EQU $C110
wScroll     EQU $C111
wSpin       EQU $C112

main:
    ld sp, STACK_TOP
    call init
    ld hl, wBugs                ; bugs on a diagonal
    ld b, 8
    ld c, 24
.bugs:
    ld a, c
    ld [hl+], a                 ; y
    add 8
    ld [hl+], a                 ; x
    ld a, c
    add 14
    ld c, a
    dec b
    jr nz, .bugs
    xor a
    ldh [rIE], a
    ld a, LCDC_ON
    ldh [rLCDC], a
.frame:
    call wait_vblank
    call draw                   ; VBlank: OAM, scroll, one map tile
    call read_pad
    call move_player
    call move_bugs
    ld a, [wJoyNew]
    and PAD_A
    jr z, .same_dir
    ld a, [wScrollDir]
    xor 1
    ld [wScrollDir], a
.same_dir:
    ld hl, wFrame
    inc [hl]
    jr .frame

; wait_vblank: until LY < 144 (out of the last VBlank), then until LY = 144.
; The first wait counts its iterations into wSpin, which stirs the bugs'
; random walk (games often draw randomness from how long they waited).
wait_vblank:
    ld hl, wSpin
.out:
    inc [hl]
    ldh a, [rLY]
    cp 144
    jr nc, .out
.in:
    ldh a, [rLY]
    cp 144
    jr nz, .in
    ret

draw:
    ld hl, OAM                  ; sprite 0: the player
    ld a, [wPlayerY]
    ld [hl+], a
    ld a, [wPlayerX]
    ld [hl+], a
    ld a, 5
    ld [hl+], a
    xor a
    ld [hl+], a
    ld de, wBugs                ; sprites 1-8: the bugs
    ld b, 8
.bug:
    ld a, [de]
    inc de
    ld [hl+], a
    ld a, [de]
    inc de
    ld [hl+], a
    ld a, 6
    ld [hl+], a
    ld a, $10                   ; palette 1
    ld [hl+], a
    dec b
    jr nz, .bug
    ld a, [wScrollDir]          ; scroll one pixel a frame, direction by A
    or a
    ld a, [wScroll]
    jr z, .down
    dec a
    jr .scrolled
.down:
    inc a
.scrolled:
    ld [wScroll], a
    ldh [rSCY], a
    ld a, [wFrame]              ; one map tile a frame: tile (frame & 7) on row 0
    and $1F
    ld l, a
    ld h, high(BG_MAP)
    ld a, [wFrame]
    and $07
    ld [hl], a
    ret

; move_bugs: each bug steps one pixel in a random direction, wrapping.
move_bugs:
    ld de, wBugs
    ld b, 8
.bug:
    push bc
    push de
    call rand
    pop de
    pop bc
    ld c, a
    ld a, [wSpin]
    xor c
    ld c, a
    ld a, [de]                  ; y += (r & 1) ? 1 : -1
    bit 0, c
    jr z, .up
    inc a
    jr .y_done
.up:
    dec a
.y_done:
    ld [de], a
    inc de
    ld a, [de]                  ; x += (r & 2) ? 1 : -1
    bit 1, c
    jr z, .left
    inc a
    jr .x_done
.left:
    dec a
.x_done:
    ld [de], a
    inc de
    dec b
    jr nz, .bug
    ret

vblank_isr:
stat_isr:
timer_isr:
    reti
