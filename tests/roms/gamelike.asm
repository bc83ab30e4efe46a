; gamelike.asm - a benchmark ROM that does what a game does every frame (issue 38).
;
; The idiom ROMs each isolate one idiom; real games do all of them at once,
; and run a sound driver besides. This ROM's frame, as a game's:
;
; - VBlank interrupt: OAM DMA from HRAM, a map row (64 tiles) copied into
;   VRAM, the top band's scroll, LYC and LCDC reset for the next frame's
;   splits, then the music driver.
; - The music driver (sound_update), every VBlank as real drivers do: four
;   channels stepping through note patterns. Per note: duty/length (NRx1),
;   envelope (NRx2), period and trigger (NRx3/NRx4), length enables on some
;   instruments, CH1's sweep on one; CH3's wave RAM reloaded (DAC off, 16
;   bytes, DAC on) when its instrument changes; CH4 drums with the length
;   enabled; NR51 panning per drum. Between notes: vibrato, a period write
;   (NRx3, then NRx4 without trigger, its length enable read back) every
;   frame on CH1 and CH2. Sound effects from the game take CH1 (A: a sweep) and CH4
;   (a hit). Each frame the driver reads NR52 (its channel flags) into a log.
; - STAT interrupt on LYC: at line 32 the scroll split to the camera (SCY
;   written straight away, so it lands in the line's mode 3 as many games'
;   writes do: that line is drawn dot by dot; SCX after a wait for mode 0,
;   STAT polled), at line 127 the objects off under the window's status bar
;   (after a wait for mode 0 too).
; - The main loop: HALT until VBlank; the joypad; the player moved with a
;   collision check against the metatile map (16x16 metatiles of 2x2 tiles,
;   the whole 256x256 background); 8 actors that walk, bounce off solid
;   metatiles and score (BCD, DAA) when they touch the player, with the
;   nearest one found by a shift-and-add multiply (and a point for each
;   step the player takes); the camera; the shadow
;   OAM (36 objects); one metatile of the map changed and one metatile row
;   decoded into tiles for the VBlank handler (the map walk); the status
;   bar (score and a countdown in BCD as tiles) and a text printer (one
;   character every 4 frames); then a wait for line 100 (LY polled) and the
;   status bar copied into the window map, each byte behind a STAT wait.
;
; Everything is deterministic from the post-boot state and the buttons: the
; d-pad moves the player (what the camera and the actors follow), A plays the
; effect. tests/test_gamelike_roms.py runs it against gambatte, frame for
; frame, with the WRAM (the driver's NR52 log included) compared at the end.

    title "GAMELIKE"
    include "idiom_lib.inc"

rNR30   EQU $FF1A
rNR31   EQU $FF1B
rNR32   EQU $FF1C
rNR33   EQU $FF1D
rNR34   EQU $FF1E
rNR41   EQU $FF20
rNR42   EQU $FF21
rNR43   EQU $FF22
rNR44   EQU $FF23
WAVE_RAM EQU $FF30

LCDC_GAME   EQU $F3             ; LCD, window at $9C00, window on, tiles $8000, OBJ, BG
LCDC_HUD    EQU $F1             ; the same with objects off (under the status bar)
WIN_MAP     EQU $9C00
SPLIT_LINE  EQU 32
HUD_LINE    EQU 127
NUM_ACTORS  EQU 8
FONT_TILE   EQU 16              ; tiles 16..63: digits then letters (built by init_font)

; WRAM ($C100 on: the library's variables are below)
wCamX       EQU $C100
wCamY       EQU $C101
wPX         EQU $C102           ; the player in world pixels (0..255 wraps)
wPY         EQU $C103
wRowNext    EQU $C104           ; metatile row decoded next (0..15)
wRowReady   EQU $C105           ; 1: wRowBuf holds a row for the VBlank handler
wRowDest    EQU $C106           ; 2 bytes: its BG map address
wScore      EQU $C108           ; 3 bytes BCD, low byte first
wTime       EQU $C10B           ; 2 bytes BCD seconds, low byte first
wTimeSub    EQU $C10D           ; frames into the second
wTextPos    EQU $C10E           ; index into the dialog text
wTextCol    EQU $C10F           ; printer column (0..19)
wSplit      EQU $C110           ; the next LYC split: 0 scroll, 1 status bar
wSfx1       EQU $C111           ; frames CH1 still plays the effect
wSfx4       EQU $C112           ; frames CH4 still plays the effect
wNearest    EQU $C113           ; index of the nearest actor
wNearD      EQU $C114           ; 2 bytes: its squared distance
wHits       EQU $C116
wMutate     EQU $C117           ; the map cell changed next
wMusic      EQU $C140           ; 4 channels x 8 bytes (CH_*)
wActors     EQU $C200           ; NUM_ACTORS x 4: x, y, dx, dy
wRowBuf     EQU $C240           ; 64 bytes: two BG rows of tile numbers
wHudBuf     EQU $C280           ; 20 bytes: window row 0
wTextBuf    EQU $C2A0           ; 20 bytes: window row 1
wNR52Log    EQU $C2C0           ; 64 bytes: NR52 as the driver read it (frame & 63)
wMap        EQU $C300           ; 16 x 16 metatile kinds (0..7)

CH_PTR      EQU 0               ; 2 bytes: next pattern byte
CH_DELAY    EQU 2               ; frames to the next note
CH_INST     EQU 3               ; instrument (pointer into instruments, low byte)
CH_VIB      EQU 4               ; vibrato phase
CH_PER      EQU 5               ; 2 bytes: the note's period
CH_START    EQU 7               ; low byte of the pattern's start (patterns are page aligned)

main:
    ld sp, STACK_TOP
    call init
    call init_dma
    call init_font
    call init_map
    call init_actors
    call init_sound
    ; the whole map drawn once while the LCD is off
    xor a
    ld [wRowNext], a
.draw:
    call decode_row
    call copy_row
    ld a, [wRowNext]
    or a
    jr nz, .draw
    xor a
    ld [wRowReady], a
    ld hl, WIN_MAP              ; window rows 0-1 blank
    ld bc, 64
    ld a, FONT_TILE + 10        ; (space)
    call memset
    ld a, 128
    ldh [rWY], a
    ld a, 7
    ldh [rWX], a
    ld a, $40                   ; STAT: LYC source
    ldh [rSTAT], a
    ld a, SPLIT_LINE
    ldh [rLYC], a
    ld a, LCDC_GAME
    ldh [rLCDC], a
    ld a, $03                   ; VBlank and STAT
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
.frame:
    call wait_vbl_done
    call read_pad
    call update_player
    call update_actors
    call update_camera
    call build_oam
    call map_walk
    call build_hud
    call print_text
    call wait_line
    call copy_hud
    ld hl, wFrame
    inc [hl]
    jr .frame

wait_vbl_done:
    xor a
    ld [wVBlankDone], a
.halt:
    halt
    ld a, [wVBlankDone]
    or a
    jr z, .halt
    ret

; ---- interrupts -----------------------------------------------------------

vblank_isr:
    push af
    push bc
    push de
    push hl
    ld a, high(wShadowOAM)
    call hDMA
    ld a, [wRowReady]
    or a
    call nz, copy_row
    xor a
    ld [wRowReady], a
    ld a, [wCamX]               ; the top band: half the camera's scroll, row 0 on
    srl a
    ldh [rSCX], a
    xor a
    ldh [rSCY], a
    ld [wSplit], a
    ld a, SPLIT_LINE
    ldh [rLYC], a
    ld a, LCDC_GAME
    ldh [rLCDC], a
    ld a, 1
    ld [wVBlankDone], a
    call sound_update
    pop hl
    pop de
    pop bc
    pop af
    reti

stat_isr:
    push af
    ld a, [wSplit]
    or a
    jr nz, .hud
    ld a, [wCamY]               ; the scroll split: SCY written at once (it lands in
    ldh [rSCY], a               ; the line's mode 3), SCX in its mode 0
.wait_h:
    ldh a, [rSTAT]
    and $03
    jr nz, .wait_h
    ld a, [wCamX]
    ldh [rSCX], a
    ld a, HUD_LINE
    ldh [rLYC], a
    ld a, 1
    ld [wSplit], a
    pop af
    reti
.hud:
.wait0:                         ; the status bar: objects off, in mode 0
    ldh a, [rSTAT]
    and $03
    jr nz, .wait0
    ld a, LCDC_HUD
    ldh [rLCDC], a
    ld a, 2
    ld [wSplit], a
    pop af
    reti

timer_isr:
    reti

; ---- set-up ---------------------------------------------------------------

; init_font: tiles 16..63 from their index (a made-up font: each row a
; function of the character and the row), and the metatile art in tiles 8..15.
init_font:
    ld hl, $8000 + 8 * 16
    ld c, 8
.tile:
    ld b, 8
.row:
    ld a, c
    add b
    rlca
    xor c
    ld [hl+], a
    ld a, b
    swap a
    or c
    ld [hl+], a
    dec b
    jr nz, .row
    inc c
    ld a, c
    cp 64
    jr nz, .tile
    ret

; init_map: 256 metatile kinds from the library's LFSR; kinds 6-7 are solid
; (a quarter of the cells), the player's start area clear.
init_map:
    ld hl, wMap
.cell:
    push hl
    call rand
    pop hl
    and $07
    ld [hl+], a
    ld a, l
    or a
    jr nz, .cell
    ld hl, wMap + 7 * 16 + 7    ; around (128, 128)
    xor a
    ld [hl+], a
    ld [hl], a
    ld hl, wMap + 8 * 16 + 7
    ld [hl+], a
    ld [hl], a
    ld a, 124
    ld [wPX], a
    ld [wPY], a
    ret

init_actors:
    ld hl, wActors
    ld b, NUM_ACTORS
.one:
    push hl
    call rand
    pop hl
    ld [hl+], a                 ; x
    push hl
    call rand
    pop hl
    ld [hl+], a                 ; y
    ld a, 1
    ld [hl+], a                 ; dx
    ld a, $FF
    ld [hl+], a                 ; dy
    dec b
    jr nz, .one
    ld a, $99
    ld [wTime], a
    ld a, $01
    ld [wTime + 1], a
    ret

init_sound:
    ld a, $80
    ldh [rNR52], a
    ld a, $77
    ldh [rNR50], a
    ld a, $FF
    ldh [rNR51], a
    ld hl, wMusic
    ld de, patterns
    ld b, 4
.ch:
    ld a, e
    ld [hl+], a                 ; CH_PTR
    ld a, d
    ld [hl+], a
    ld a, 1
    ld [hl+], a                 ; CH_DELAY: the first note next frame
    ld a, low(instruments)
    ld [hl+], a                 ; CH_INST
    xor a
    ld [hl+], a                 ; CH_VIB
    ld [hl+], a                 ; CH_PER
    ld [hl+], a
    ld a, e
    ld [hl+], a                 ; CH_START
    inc d                       ; (one page per channel's pattern)
    dec b
    jr nz, .ch
    ret

; ---- the game -------------------------------------------------------------

; solid_at: B = x, C = y (world pixels) -> Z clear if that metatile is solid.
solid_at:
    push hl
    ld a, c
    and $F0
    ld l, a
    ld a, b
    swap a
    and $0F
    or l
    ld l, a
    ld h, high(wMap)
    ld a, [hl]
    ld hl, solid
    add l
    ld l, a
    jr nc, .nc
    inc h
.nc:
    ld a, [hl]
    or a
    pop hl
    ret

; blocked: B = x, C = y of a 16x16 body's top left -> Z clear if any corner
; is in a solid metatile.
blocked:
    call solid_at
    ret nz
    ld a, b
    add 15
    ld b, a
    call solid_at
    jr nz, .back
    ld a, c
    add 15
    ld c, a
    call solid_at
    jr nz, .back2
    ld a, b
    sub 15
    ld b, a
    call solid_at
    push af
    ld a, c
    sub 15
    ld c, a
    pop af
    ret
.back2:
    ld a, c
    sub 15
    ld c, a
.back:
    ld a, b
    sub 15
    ld b, a
    or $FF                      ; (Z clear)
    ret

update_player:
    ld a, [wPX]
    ld b, a
    ld a, [wPY]
    ld c, a
    ld a, [wJoy]
    ld d, a
    bit 4, d                    ; right
    jr z, .nr
    inc b
    call blocked
    jr z, .nr
    dec b
.nr:
    bit 5, d                    ; left
    jr z, .nl
    dec b
    call blocked
    jr z, .nl
    inc b
.nl:
    bit 7, d                    ; down
    jr z, .nd
    inc c
    call blocked
    jr z, .nd
    dec c
.nd:
    bit 6, d                    ; up
    jr z, .nu
    dec c
    call blocked
    jr z, .nu
    inc c
.nu:
    ld a, [wPX]                 ; a step taken: a point (BCD)
    cp b
    jr nz, .step
    ld a, [wPY]
    cp c
    jr z, .still
.step:
    ld a, [wScore]
    add $01
    daa
    ld [wScore], a
    ld a, [wScore + 1]
    adc 0
    daa
    ld [wScore + 1], a
.still:
    ld a, b
    ld [wPX], a
    ld a, c
    ld [wPY], a
    ld a, [wJoyNew]             ; A: the jump effect on CH1 (a sweep)
    and PAD_A
    ret z
    ld a, 16
    ld [wSfx1], a
    ld a, $16                   ; sweep: pace 1, up, step 6
    ldh [rNR10], a
    ld a, $80
    ldh [rNR11], a
    ld a, $F2
    ldh [rNR12], a
    ld a, $20
    ldh [rNR13], a
    ld a, $86
    ldh [rNR14], a
    ret

; update_actors: each walks (a new heading every 32 frames), turns back at
; solid metatiles, and scores when it overlaps the player; the nearest by
; squared distance is noted.
update_actors:
    ld a, $FF
    ld [wNearD], a
    ld [wNearD + 1], a
    ld hl, wActors
    ld e, 0
.one:
    ld a, [wFrame]              ; a new heading now and then
    add e
    and $1F
    jr nz, .keep
    push hl
    push de
    call rand
    pop de
    pop hl
    ld b, a
    inc hl
    inc hl
    and $02
    dec a                       ; -1 / 1
    ld [hl+], a
    ld a, b
    rlca
    and $02
    dec a
    ld [hl-], a
    dec hl
    dec hl
.keep:
    ld a, [hl+]                 ; x + dx
    ld b, a
    ld a, [hl-]                 ; y
    ld c, a
    inc hl
    inc hl
    ld a, [hl+]                 ; dx
    add b
    ld b, a
    ld a, [hl-]                 ; dy
    add c
    ld c, a
    call blocked
    jr z, .move
    ld a, [hl]                  ; turn back
    cpl
    inc a
    ld [hl+], a
    ld a, [hl]
    cpl
    inc a
    ld [hl-], a
    dec hl
    dec hl
    jr .moved
.move:
    dec hl
    dec hl
    ld a, b
    ld [hl+], a
    ld a, c
    ld [hl-], a
.moved:
    call touch_player
    call distance
    inc hl
    inc hl
    inc hl
    inc hl
    inc e
    ld a, e
    cp NUM_ACTORS
    jr nz, .one
    ret

; touch_player: actor at HL (x, y) overlapping the player: +5 points (BCD),
; the hit effect on CH4, and the actor moved away.
touch_player:
    ld a, [wPX]
    sub [hl]
    jr nc, .px
    cpl
    inc a
.px:
    cp 12
    ret nc
    inc hl
    ld a, [wPY]
    sub [hl]
    dec hl
    jr nc, .py
    cpl
    inc a
.py:
    cp 12
    ret nc
    ld a, [wScore]
    add $05
    daa
    ld [wScore], a
    ld a, [wScore + 1]
    adc 0
    daa
    ld [wScore + 1], a
    ld a, [wScore + 2]
    adc 0
    daa
    ld [wScore + 2], a
    ld a, [wHits]
    inc a
    ld [wHits], a
    ld a, [hl]                  ; away: half the world across
    add 128
    ld [hl+], a
    ld a, [hl]
    add 96
    ld [hl-], a
    ld a, 8
    ld [wSfx4], a
    ld a, $3F                   ; the hit: noise, length enabled
    ldh [rNR41], a
    ld a, $F1
    ldh [rNR42], a
    ld a, $51
    ldh [rNR43], a
    ld a, $C0
    ldh [rNR44], a
    ret

; distance: squared distance from the player to the actor at HL (E its
; index); the nearest is kept in wNearest / wNearD.
distance:
    push hl
    push de
    ld a, [wPX]
    sub [hl]
    jr nc, .dx
    cpl
    inc a
.dx:
    call square                 ; DE = A * A
    push de
    inc hl
    ld a, [wPY]
    sub [hl]
    jr nc, .dy
    cpl
    inc a
.dy:
    call square
    pop hl
    add hl, de                  ; dx^2 + dy^2 (mod 65536)
    ld a, [wNearD + 1]          ; nearer?
    cp h
    jr c, .far
    jr nz, .near
    ld a, [wNearD]
    cp l
    jr c, .far
.near:
    ld a, l
    ld [wNearD], a
    ld a, h
    ld [wNearD + 1], a
    pop de
    ld a, e
    ld [wNearest], a
    pop hl
    ret
.far:
    pop de
    pop hl
    ret

; square: DE = A * A, by shifts and adds.
square:
    push hl
    push bc
    ld c, a
    ld b, 0
    ld hl, 0
    ld d, 8
.bit:
    add hl, hl
    rlca
    jr nc, .skip
    add hl, bc
.skip:
    dec d
    jr nz, .bit
    ld d, h
    ld e, l
    pop bc
    pop hl
    ret

update_camera:
    ld a, [wPX]
    sub 72
    ld [wCamX], a
    ld a, [wPY]
    sub 60
    ld [wCamY], a
    ret

; build_oam: the player (2x2 objects) and each actor (2x2) at their screen
; positions; an actor off screen is hidden (Y = 0).
build_oam:
    ld hl, wShadowOAM
    ld a, [wPX]
    ld b, a
    ld a, [wPY]
    ld c, a
    ld d, 5                     ; the ring tile
    call put_body
    ld de, wActors
    ld a, NUM_ACTORS
.one:
    push af
    ld a, [de]
    ld b, a
    inc de
    ld a, [de]
    ld c, a
    inc de
    inc de
    inc de
    push de
    ld d, 6                     ; the diamond tile
    call put_body
    pop de
    pop af
    dec a
    jr nz, .one
    ret

; put_body: four objects at HL for a 16x16 body at world (B, C), tile D.
put_body:
    ld a, [wCamX]
    cpl
    inc a
    add b
    add 8
    ld b, a                     ; screen x + 8
    ld a, [wCamY]
    cpl
    inc a
    add c
    add 16
    ld c, a                     ; screen y + 16
    cp 168
    jr c, .shown
    ld c, 0
.shown:
    ld e, 0
.obj:
    ld a, e
    and $02
    jr z, .top
    ld a, c
    or a
    jr z, .y
    add 8
    jr .y
.top:
    ld a, c
.y:
    ld [hl+], a
    ld a, e
    and $01
    ld a, b
    jr z, .x
    add 8
.x:
    ld [hl+], a
    ld a, d
    ld [hl+], a
    ld a, e
    swap a
    and $10                     ; palettes alternate
    ld [hl+], a
    inc e
    ld a, e
    cp 4
    jr nz, .obj
    ret

; map_walk: one cell of the map changes kind (a tree grows), then one
; metatile row is decoded for the VBlank handler.
map_walk:
    ld a, [wMutate]
    add 37
    ld [wMutate], a
    ld l, a
    ld h, high(wMap)
    ld a, [hl]
    cp 6
    jr nc, .kept                ; (walls stay walls)
    inc a
    cp 6
    jr c, .grown
    xor a
.grown:
    ld [hl], a
.kept:
    ; fall through
; decode_row: metatile row wRowNext into wRowBuf (two tile rows of 32),
; wRowDest its BG map address; then the next row.
decode_row:
    ld a, [wRowNext]
    ld c, a
    swap a
    ld e, a
    ld d, high(wMap)            ; DE: the row's first metatile
    ld a, c                     ; BG map address: $9800 + row * 64
    rrca
    rrca
    ld b, a
    and $C0
    ld [wRowDest], a
    ld a, b
    and $03
    add high(BG_MAP)
    ld [wRowDest + 1], a
    ld hl, wRowBuf
    ld b, 16
.cell:
    ld a, [de]
    inc de
    add a
    add a                       ; kind * 4: its four tiles
    push de
    ld de, metatiles
    add e
    ld e, a
    jr nc, .nc
    inc d
.nc:
    ld a, [de]                  ; top left, top right
    ld [hl+], a
    inc de
    ld a, [de]
    ld [hl], a
    inc de
    push hl                     ; bottom left, bottom right: 31 bytes on
    ld a, l
    add 31
    ld l, a
    ld a, [de]
    ld [hl+], a
    inc de
    ld a, [de]
    ld [hl], a
    pop hl
    inc hl
    pop de
    dec b
    jr nz, .cell
    ld a, c
    inc a
    and $0F
    ld [wRowNext], a
    ld a, 1
    ld [wRowReady], a
    ret

; copy_row: wRowBuf's 64 tiles to the BG map at wRowDest (VBlank or LCD off).
copy_row:
    ld a, [wRowDest]
    ld l, a
    ld a, [wRowDest + 1]
    ld h, a
    ld de, wRowBuf
    ld b, 64
.b:
    ld a, [de]
    ld [hl+], a
    inc de
    dec b
    jr nz, .b
    ret

; build_hud: "SC" score (6 BCD digits) "T" time (3 digits) as tiles; the
; time counts down one a second (BCD), back to 199 at 0.
build_hud:
    ld a, [wTimeSub]
    inc a
    cp 60
    jr c, .same
    ld a, [wTime]
    sub 1
    daa
    ld [wTime], a
    ld a, [wTime + 1]
    sbc 0
    daa
    ld [wTime + 1], a
    ld a, [wTime]
    ld b, a
    ld a, [wTime + 1]
    or b
    jr nz, .left
    ld a, $99
    ld [wTime], a
    ld a, $01
    ld [wTime + 1], a
.left:
    xor a
.same:
    ld [wTimeSub], a
    ld hl, wHudBuf
    ld a, FONT_TILE + 11 + 18   ; S
    ld [hl+], a
    ld a, FONT_TILE + 11 + 2    ; C
    ld [hl+], a
    ld a, FONT_TILE + 10
    ld [hl+], a
    ld a, [wScore + 2]
    call bcd_tiles
    ld a, [wScore + 1]
    call bcd_tiles
    ld a, [wScore]
    call bcd_tiles
    ld a, FONT_TILE + 10
    ld [hl+], a
    ld a, FONT_TILE + 11 + 19   ; T
    ld [hl+], a
    ld a, [wTime + 1]
    and $0F
    add FONT_TILE
    ld [hl+], a
    ld a, [wTime]
    call bcd_tiles
    ld a, FONT_TILE + 10
    ld [hl+], a
    ld a, [wNearest]            ; the nearest actor's number and hits
    add FONT_TILE
    ld [hl+], a
    ld a, [wHits]
    call bcd_byte
    ret

; bcd_tiles: the two BCD digits in A as tiles at HL+.
bcd_tiles:
    ld b, a
    swap a
    and $0F
    add FONT_TILE
    ld [hl+], a
    ld a, b
    and $0F
    add FONT_TILE
    ld [hl+], a
    ret

; bcd_byte: A (binary, 0..99 shown mod 100) as two digit tiles at HL+, by
; repeated subtraction of 10.
bcd_byte:
    ld c, 0
.mod:
    cp 100
    jr c, .tens
    sub 100
    jr .mod
.tens:
    cp 10
    jr c, .ones
    sub 10
    inc c
    jr .tens
.ones:
    ld b, a
    ld a, c
    add FONT_TILE
    ld [hl+], a
    ld a, b
    add FONT_TILE
    ld [hl+], a
    ret

; print_text: every 4th frame the next character of the dialog text goes
; into wTextBuf (letters A-Z as font tiles, "." a space); a full line is
; cleared and printing starts over at column 0.
print_text:
    ld a, [wFrame]
    and $03
    ret nz
    ld a, [wTextCol]
    cp 20
    jr c, .room
    ld hl, wTextBuf
    ld b, 20
    ld a, FONT_TILE + 10
.clear:
    ld [hl+], a
    dec b
    jr nz, .clear
    xor a
    ld [wTextCol], a
.room:
    ld e, a
    ld d, 0
    ld a, [wTextPos]
    ld c, a
    ld b, 0
    ld hl, dialog
    add hl, bc
    ld a, [hl]
    or a
    jr nz, .char
    ld [wTextPos], a            ; the end: from the start again
    ld a, '.'
    jr .put
.char:
    inc c
    ld a, c
    ld [wTextPos], a
    ld a, [hl]
.put:
    cp 'A'
    jr c, .space
    sub 'A' - (FONT_TILE + 11)
    jr .tile
.space:
    ld a, FONT_TILE + 10
.tile:
    ld hl, wTextBuf
    add hl, de
    ld [hl], a
    ld a, [wTextCol]
    inc a
    ld [wTextCol], a
    ret

; wait_line: poll LY until line 100 is reached (or VBlank began).
wait_line:
.w:
    ldh a, [rLY]
    cp 100
    jr c, .w
    ret

; copy_hud: the two status bar rows into the window map, each byte after a
; STAT wait (modes 2-3 hold VRAM), as GBDK's set_win_tiles.
copy_hud:
    ld hl, WIN_MAP
    ld de, wHudBuf
    call .row
    ld hl, WIN_MAP + 32
    ld de, wTextBuf
.row:
    ld b, 20
.byte:
    ldh a, [rSTAT]
    and $02
    jr nz, .byte
    ld a, [de]
    ld [hl+], a
    inc de
    dec b
    jr nz, .byte
    ret

; ---- the music driver -----------------------------------------------------

; sound_update: one step of each channel: a note whose time has come is
; started (its registers written); between notes, vibrato on CH1/CH2.
sound_update:
    ld hl, wMusic
    ld c, 0                     ; channel
.ch:
    push hl
    inc hl
    inc hl                      ; CH_DELAY
    dec [hl]
    jr z, .note
    call vibrato
    jr .next
.note:
    pop hl
    push hl
    call next_note
.next:
    pop hl
    ld a, l
    add 8
    ld l, a
    inc c
    ld a, c
    cp 4
    jr nz, .ch
    ld a, [wSfx1]               ; effects count down
    or a
    jr z, .s1
    dec a
    ld [wSfx1], a
    jr nz, .s1
    xor a                       ; CH1's sweep off again
    ldh [rNR10], a
.s1:
    ld a, [wSfx4]
    or a
    jr z, .s4
    dec a
    ld [wSfx4], a
.s4:
    ld a, [wFrame]              ; the channel flags, as a driver checks them
    and $3F
    add low(wNR52Log)
    ld l, a
    ld h, high(wNR52Log)
    ldh a, [rNR52]
    ld [hl], a
    ret

; next_note: channel C's state at HL: read pattern bytes (instrument
; changes, the loop mark) up to a note and its length, and start the note.
; Pattern bytes: $00-$3F a note (then its length in frames), $FD a rest (then
; its length), $FE an instrument (then its offset in `instruments`), $FF
; back to the start.
next_note:
    push hl
    ld a, [hl+]
    ld e, a
    ld d, [hl]                  ; DE: pattern pointer
.byte:
    ld a, [de]
    inc de
    cp $FF
    jr nz, .not_loop
    pop hl
    push hl
    ld a, l
    add CH_START
    ld l, a
    ld e, [hl]
    jr .byte
.not_loop:
    cp $FE
    jr nz, .not_inst
    ld a, [de]
    inc de
    pop hl
    push hl
    inc hl
    inc hl
    inc hl
    ld [hl], a                  ; CH_INST
    ld a, c
    cp 2
    call z, load_wave           ; CH3: new wave between notes
    jr .byte
.not_inst:
    ld b, a                     ; the note (or $FD)
    ld a, [de]                  ; its length
    inc de
    pop hl
    push hl
    ld [hl], e                  ; CH_PTR
    inc hl
    ld [hl], d
    inc hl
    ld [hl+], a                 ; CH_DELAY
    ld a, [hl+]                 ; CH_INST
    ld e, a
    ld d, high(instruments)
    xor a
    ld [hl+], a                 ; CH_VIB
    ld a, b
    cp $FD
    jr z, .rest
    add a                       ; the period from the note table
    push hl
    ld hl, periods
    add l
    ld l, a
    jr nc, .nc
    inc h
.nc:
    ld a, [hl+]
    ld b, [hl]
    pop hl
    ld [hl+], a                 ; CH_PER
    ld [hl], b
    ld l, a                     ; L = period low, B = period high
    pop af                      ; (the saved HL: not needed any more)
    ld a, c
    or a
    jr z, start_ch1
    dec a
    jr z, start_ch2
    dec a
    jr z, start_ch3
    jp start_ch4
.rest:
    pop hl
    ld a, c                     ; a rest: the channel's DAC off
    or a
    jr nz, .r2
    ld a, [wSfx1]
    or a
    ret nz
    xor a
    ldh [rNR12], a
    ret
.r2:
    dec a
    jr nz, .r3
    xor a
    ldh [rNR22], a
    ret
.r3:
    dec a
    jr nz, .r4
    xor a
    ldh [rNR30], a
    ret
.r4:
    ld a, [wSfx4]
    or a
    ret nz
    xor a
    ldh [rNR42], a
    ret

; Instrument bytes (DE): 0 NRx1 (duty, length), 1 NRx2 (envelope; CH3: NR32),
; 2 NR10 sweep (CH1), 3 flags (bit 6: length enable, bit 0: vibrato),
; 4 wave (CH3: offset of its 16 bytes in `waves`).
start_ch1:
    ld a, [wSfx1]               ; the effect has the channel
    or a
    ret nz
    inc de
    inc de
    ld a, [de]
    ldh [rNR10], a
    dec de
    dec de
    ld a, [de]
    ldh [rNR11], a
    inc de
    ld a, [de]
    ldh [rNR12], a
    ld a, l
    ldh [rNR13], a
    inc de
    inc de
    ld a, [de]
    and $40
    or b
    or $80
    ldh [rNR14], a
    ret

start_ch2:
    ld a, [de]
    ldh [rNR21], a
    inc de
    ld a, [de]
    ldh [rNR22], a
    ld a, l
    ldh [rNR23], a
    inc de
    inc de
    ld a, [de]
    and $40
    or b
    or $80
    ldh [rNR24], a
    ret

start_ch3:
    ld a, $80
    ldh [rNR30], a              ; (DAC on again after a wave load)
    ld a, [de]
    ldh [rNR31], a
    inc de
    ld a, [de]
    ldh [rNR32], a
    ld a, l
    ldh [rNR33], a
    inc de
    inc de
    ld a, [de]
    and $40
    or b
    or $80
    ldh [rNR34], a
    ret

start_ch4:
    ld a, [wSfx4]
    or a
    ret nz
    ld a, [de]
    ldh [rNR41], a
    inc de
    ld a, [de]
    ldh [rNR42], a
    ld a, l                     ; the note's period low byte as the noise setting
    and $F7
    ldh [rNR43], a
    ld a, $C0                   ; drums: trigger, length enabled
    ldh [rNR44], a
    ld a, [wFrame]              ; panning moves with each drum
    and $10
    ld a, $FF
    jr z, .pan
    ld a, $ED
.pan:
    ldh [rNR51], a
    ret

; load_wave: CH3's instrument at HL (its CH_INST byte): DAC off, its 16 wave
; bytes into wave RAM (the next note turns the DAC on and triggers).
load_wave:
    push bc
    push de
    ld e, [hl]
    ld d, high(instruments)
    ld a, e
    add 4
    ld e, a
    ld a, [de]                  ; offset in `waves`
    ld e, a
    ld d, high(waves)
    xor a
    ldh [rNR30], a
    ld c, low(WAVE_RAM)
    ld b, 16
.b:
    ld a, [de]
    inc de
    ldh [c], a
    inc c
    dec b
    jr nz, .b
    pop de
    pop bc
    ret

; vibrato: between notes, CH1 and CH2 (C = 0, 1) with an instrument that
; asks for it: the period plus a small triangle wave, written every frame
; (NRx3, then NRx4 without trigger, its length enable read back from it).
; HL: the channel's CH_DELAY byte.
vibrato:
    ld a, c
    cp 2
    ret nc
    or a
    jr nz, .ch2
    ld a, [wSfx1]
    or a
    ret nz
.ch2:
    inc hl                      ; CH_INST
    ld e, [hl]
    ld d, high(instruments)
    inc e
    inc e
    inc e
    ld a, [de]
    and $01
    ret z
    inc hl                      ; CH_VIB
    ld a, [hl]
    inc a
    ld [hl+], a
    and $07
    ld e, a
    ld d, 0
    push hl
    ld hl, vib_table
    add hl, de
    ld e, [hl]                  ; a signed offset
    pop hl
    ld a, e
    rlca
    sbc a
    ld b, a                     ; its sign
    ld a, [hl+]                 ; CH_PER + the offset
    add e
    ld d, a
    ld a, b
    adc [hl]
    and $07
    ld e, a                     ; E: the period's high bits, D: its low byte
    ld a, c
    or a
    jr nz, .w2
    ld a, d
    ldh [rNR13], a
    ldh a, [rNR14]              ; (bit 6, the length enable, reads back; the rest reads 1)
    and $40
    or e
    ldh [rNR14], a
    ret
.w2:
    ld a, d
    ldh [rNR23], a
    ldh a, [rNR24]
    and $40
    or e
    ldh [rNR24], a
    ret

vib_table:
    db $00, $01, $02, $01, $00, $FF, $FE, $FF

solid:                          ; metatile kinds 6 and 7 are walls
    db 0, 0, 0, 0, 0, 0, 1, 1

metatiles:                      ; kind: TL TR BL BR tiles
    db 0, 0, 0, 0               ; grass
    db 1, 2, 2, 1               ; flowers
    db 4, 4, 4, 4               ; sand
    db 8, 9, 10, 11             ; a path
    db 12, 13, 14, 15           ; a sign
    db 0, 7, 7, 0               ; stones
    db 3, 3, 3, 3               ; a wall
    db 5, 6, 6, 5               ; a tree

dialog:
    db "WELCOME TO THE BENCHMARK. THE ORCHARD IS NORTH. "
    db "MIND THE WALLS AND CATCH THE DIAMONDS", 0

; 32 notes: 11-bit periods (C3 up).
periods:
    dw $002C, $009D, $0107, $016B, $01C9, $0223, $0277, $02C7
    dw $0312, $0358, $039B, $03DA, $0416, $044E, $0483, $04B5
    dw $04E5, $0511, $053B, $0563, $0589, $05AC, $05CE, $05ED
    dw $060A, $0627, $0642, $065B, $0672, $0689, $069E, $06B2

    org $1000
instruments:                    ; 8 bytes each (5 used), one page
    ; 0: CH1 lead, vibrato
    db $80, $F3, $00, $01, 0, 0, 0, 0
    ; 8: CH1 lead with a sweep down, length enabled
    db $A8, $C4, $2B, $40, 0, 0, 0, 0
    ; 16: CH2 pad, vibrato, length enabled
    db $60, $A5, $00, $41, 0, 0, 0, 0
    ; 24: CH2 pluck
    db $40, $82, $00, $00, 0, 0, 0, 0
    ; 32: CH3 bass, wave 0
    db $C0, $20, $00, $00, 0, 0, 0, 0
    ; 40: CH3 bass, wave 1, length enabled
    db $F0, $40, $00, $40, 16, 0, 0, 0
    ; 48: CH4 kick
    db $38, $F1, $00, $40, 0, 0, 0, 0
    ; 56: CH4 hat
    db $3C, $61, $00, $40, 0, 0, 0, 0

    org $1100
waves:
    db $01, $23, $45, $67, $89, $AB, $CD, $EF, $FE, $DC, $BA, $98, $76, $54, $32, $10
    db $FF, $FF, $FF, $FF, $00, $00, $00, $00, $FF, $FF, $FF, $FF, $00, $00, $00, $00

    org $1200
patterns:                       ; one page per channel (CH_START: the low byte)
    ; CH1: a melody; the sweep instrument every other phrase
    db $FE, 0
    db 12, 8, 16, 8, 19, 8, 24, 16, 23, 8, 19, 8, 16, 16, $FD, 8
    db $FE, 8
    db 12, 6, 14, 6, 16, 6, 17, 6, 19, 12, $FD, 12
    db $FE, 0
    db 24, 8, 23, 8, 21, 8, 19, 8, 17, 8, 16, 8, 14, 8, 12, 24
    db $FF
    org $1300
    ; CH2: harmony, two instruments
    db $FE, 16
    db 4, 16, 7, 16, 9, 16, 11, 16
    db $FE, 24
    db 16, 4, 19, 4, 23, 4, 19, 4, 16, 4, 19, 4, 23, 4, 19, 4
    db $FD, 16
    db $FF
    org $1400
    ; CH3: bass, the wave changed every few notes
    db $FE, 32
    db 0, 12, 0, 12, 7, 12, 5, 12
    db $FE, 40
    db 3, 8, 3, 8, 10, 8, 8, 8, $FD, 8
    db $FE, 32
    db 5, 24, 7, 24
    db $FF
    org $1500
    ; CH4: drums
    db $FE, 48
    db 6, 8
    db $FE, 56
    db 20, 4, 20, 4
    db $FE, 48
    db 6, 4, 6, 4
    db $FE, 56
    db 20, 8, $FD, 4, 22, 4
    db $FF
