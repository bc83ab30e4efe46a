; =============================================================================
; HAMLET - the second built-in game of gbx_lightning (DMG, MBC1 + battery RAM)
; =============================================================================
; A small top-down adventure written for this project with the opening
; structure of Pokemon Red: you wake up in your bedroom upstairs, the way out
; is the staircase in the top-right corner, and right beside it stands a PC
; whose menus waste your time. Downstairs your mother sits at the table, the
; TV and the bookshelf have something to say, and the door at the bottom
; leads out into the village, a map larger than the screen that scrolls with
; you. There the story goes on through events: a kid blocks the path to the
; elder's house until you talk to him, the elder gives you a LANTERN, the
; guard at the east gate lets you onto the dark route only with it, a KEY
; lies on the route, and it opens the gate of the shrine, where the bell
; waits to be rung. Build:
;     python -m gbx_lightning.roms.asm gbx_lightning/roms/hamlet.asm -o hamlet.gb
; or gbx_lightning.roms.build_rom("hamlet"). Python mirror (addresses, maps,
; the stage-select input traces): gbx_lightning/roms/hamlet.py. Tasks:
; gbx_lightning/roms/tasks/hamlet/. Tests: tests/test_hamlet_*.py.
; Sources: this file (hardware, start-up, VBlank, frame loop, utilities),
; hamlet_world.inc (maps, movement, camera, objects, warps), hamlet_ui.inc
; (text boxes, menus, the Start menu, the PC, options, saving),
; hamlet_script.inc (what talking to things does, the events, the texts),
; hamlet_maps.inc (map data), hamlet_font.inc (the font, the UI tiles, the
; VRAM tile layout), hamlet_gfx.inc (objects, map tiles, metatiles),
; hamlet_music.inc (the sound driver and its songs).
;
; CONTROLS (as in Pokemon)
;   D-pad   walk one 16x16 step (16 frames at 1 pixel per frame) in that
;           direction; a blocked step turns you and thuds (16 frames in
;           place). A direction held when a step ends walks on. In menus:
;           move the cursor (Up/Down), change an option (Left/Right).
;   A       talk to / check what you face; in menus choose; in text boxes
;           go on when the arrow blinks (A or B), and print faster while held.
;   B       close a menu or go back one screen; go on in a text box.
;   START   open the Start menu (ITEM, KAI, SAVE, OPTION, EXIT); close it.
;   SELECT  held at power-on: the stage select (below).
;
; WORLD (map ids; hamlet_maps.inc; all maps at most 16x16 steps, so a map
; fits the 32x32-tile BG map whole and the camera only moves SCX/SCY)
;   0 BEDROOM      7x7, upstairs. Stairs top right, the PC beside them.
;   1 LIVING ROOM  8x8. Stairs top right, MOM at the table, TV, bookshelf,
;                  the door (three mats) at the bottom.
;   2 VILLAGE      16x16 outdoors, scrolls. Your house top left; the KID
;                  blocks the gap to the ELDER's house; the GUARD blocks the
;                  east exit to the route; a girl wanders by the pond.
;   3 ELDER HOUSE  8x8. The ELDER gives the LANTERN.
;   4 ROUTE        12x16 outdoors, scrolls. The KEY lies here; the shrine
;                  gate (an object) blocks the way north until unlocked.
;   5 SHRINE       8x8. The bell: ring it.
;   Stepping onto a warp (stairs, a door mat, a door, an exit) fades the
;   screen out (BGP/OBP0/OBP1 in 3 steps of 4 frames), loads the new map
;   (the BG map is rewritten 4 rows per VBlank while the screen is white),
;   and fades it in; presses during the change are ignored.
;
; EVENTS (wEvents bits; each is set once and never cleared)
;   EV_LEFT_HOUSE   first arrival in the village
;   EV_TALKED_MOM   MOM has spoken
;   EV_KID_MOVED    the KID stepped aside (talk to him)
;   EV_GOT_LANTERN  the ELDER gave the LANTERN (needs EV_KID_MOVED: the
;                   only way to his door is the gap the KID blocks)
;   EV_GUARD_MOVED  the GUARD stepped aside (talk to him with the LANTERN)
;   EV_GOT_KEY      picked up the KEY on the route
;   EV_GATE_OPEN    unlocked the shrine gate (check it with the KEY)
;   EV_RANG_BELL    rang the shrine bell
;
; STAGE SELECT (a debug menu, as orchard's level select)
;   SELECT held when the VBlank handler reads the joypad in either of the
;   first SELECT_WINDOW (2) game frames (the title screen's first frames)
;   opens "STAGE SELECT" instead of the title. RIGHT or UP (new presses)
;   add one, LEFT or DOWN take one (1..4, wrapping); START or A begins:
;     1 HOUSE    new game: the bedroom, facing up (as the title's START)
;     2 LANTERN  the village in front of your house (as after stage 1)
;     3 ROUTE    the same with EV_KID_MOVED, EV_GOT_LANTERN, the LANTERN
;     4 SHRINE   the route's south end, + EV_GUARD_MOVED
;   gbx_lightning/roms/hamlet.py: stage_inputs(stage), stage_start_frames().
;
; TEXT
;   Letters are printed one by one, every 1 / 3 / 5 frames at text speed
;   FAST / MEDIUM / SLOW (OPTION; MEDIUM at power-on), every frame while A
;   or B is held. A full box waits with a blinking arrow for a new press of
;   A or B. The window layer shows a 20x18 copy of the screen (wTileMap)
;   with the boxes drawn on it; the VBlank handler copies one sixth of it
;   (3 rows) to the window map every frame (Pokemon's engine, too, keeps
;   its screen in WRAM and copies it to VRAM a part per VBlank).
;
; DETERMINISM
;   Everything follows from the power-on state and the joypad. The random
;   generator (xorshift16; NPC turns and walks) is seeded from DIV once at
;   start-up and stirred with every new press, as orchard's.
;
; SOUND
;   A driver called from the VBlank handler every frame plays each map's
;   looping song on CH2 (melody: duty, envelope, length) and CH3 (bass:
;   wave, length) and CH4 (drums); CH1 plays sound effects (a step into a
;   wall, menu cursor, text arrow, door, save jingle). SOUND in OPTION
;   selects MONO (NR51 = $FF: every channel to both sides) or STEREO
;   (NR51 = $7B: melody and effects both sides, bass left, drums right).
;
; MEMORY MAP (WRAM; RL environments may read these: tasks/hamlet/ram.yaml)
;   $C000-$C09F shadow OAM (copied to OAM by DMA every VBlank)
;   $C100  wMapId        current map (0-5, WORLD above)
;   $C101  wEvents       2 bytes of event flags (EV_* bit numbers: bit n of
;                        the 16-bit little-endian value)
;   $C103  wBagCount     items in the bag (0-4)
;   $C104  wBagItems     4 bytes: item ids (1 POTION, 2 LANTERN, 3 KEY)
;   $C108  wPCCount      items stored in the PC (0-4)
;   $C109  wPCItems      4 bytes: item ids
;   $C10D  wOptTextSpeed 0 FAST, 1 MEDIUM, 2 SLOW
;   $C10E  wOptSound     0 MONO, 1 STEREO
;   $C10F  wSaveCount    times the game was saved (wraps at 256)
;   $C110  wUIState      the screen in front: UI_* below
;   $C111  wUIContext    what opened it: CTX_* below
;   $C112  wFrameCount   2 bytes, little endian, game frames since power-on
;   $C114  wRng          2 bytes, xorshift16 state
;   $C116  wSeed         the DIV value read at start-up
;   $C117  wVBlankLate   VBlank handlers that ran past VBlank (stays 0)
;   $C118  wStepCount    2 bytes, steps walked since the game began
;   $C11A  wStage        the stage begun at the stage select (0: the title)
;   $C11B  wMapWidth     the map's size in steps
;   $C11C  wMapHeight
;   $C11D  wCamX         camera (SCX) and (SCY) in pixels
;   $C11E  wCamY
;   $C11F  wBGLoadRow    next BG row the VBlank handler copies (32: none)
;   $C120  wOverlay      1 while the window shows wTileMap
;   $C121  wThird        the sixth of wTileMap (3 rows) copied next VBlank
;   $C122  wStartCursor  the Start menu's remembered entry
;   $C123  wBumpFrames   frames left in a step into a wall
;   $C124  wTextDelay    frames per letter (from wOptTextSpeed)
;   $C125  wSong         the song playing
;   $C126  wMenuItems    entries in the open menu
;   $C127  wMenuCursor   its cursor
;   $C128  wItemCount    entries of the item list on screen
;   $C129  wTextCol      the text printer's column and row in wTileMap
;   $C12A  wTextRow
;   $C12B  wScriptObject the object being talked to (1-7)
;   $C12C  wWarpsLeft    bookkeeping of the map loader
;   $C130  wMapHeader    a copy of the current map's header (MAP_HEADER_SIZE)
;   $C140  wMusic        the sound driver's channels (3 x CHAN_SIZE)
;   $C160  wSfx          the sound-effect channel: pointer, timer
;   $C200  wObjects      8 objects x 16 bytes; object 0 is the player:
;   $C201  wPlayerX      the player's x in steps (the step's target while walking)
;   $C202  wPlayerY      the player's y in steps
;   $C203  wPlayerFacing DIR_* below
;   $C204  wPlayerWalk   frames left in the step (0 standing)
;   $C300  wMapBlocks    16 x 16 metatile codes of the map (stride 16)
;   $C400  wBGMap        32 x 32 BG tiles, the WRAM copy of $9800
;   $C810  wTileMap      20 x 18 tiles the window shows
;   $C990  wTileMapSave  20 x 18: the screen under the open menus
;   Directions (joypad bit order): DIR_RIGHT 1, DIR_LEFT 2, DIR_UP 4, DIR_DOWN 8.
;   Object fields (offsets in each 16-byte slot): OBJ_KIND 0 (0 = empty),
;   OBJ_X 1, OBJ_Y 2, OBJ_FACING 3, OBJ_WALK 4, OBJ_WALKDIR 5, OBJ_MOVE 6,
;   OBJ_TIMER 7, OBJ_SCRIPT 8, OBJ_HOMEX 9, OBJ_HOMEY 10, OBJ_ANIM 11.
;   UI_* (wUIState): 0 overworld, 1 text box, 2 Start menu, 3 PC menu,
;   4 item list, 5 options, 6 YES/NO, 7 saving, 8 trainer card,
;   9 map change (fade, load), 10 title, 11 stage select.
;   CTX_* (wUIContext): 0 none, 1 Start menu and its screens, 2 the PC and
;   its screens, 3 talking (text boxes in the world), 4 map change.
;
; HARDWARE USE (so the game exercises an emulator the way real games do)
;   VBlank-interrupt frame loop (HALT), OAM DMA from HRAM every VBlank,
;   joypad through P1 with both select lines, window layer for text boxes and
;   menus, SCX/SCY scrolling, BGP/OBP0/OBP1 fades, 16x16 characters from four
;   8x8 objects with X flips, the four sound channels, MBC1 RAM enable and
;   battery RAM writes (SAVE), VRAM written only in VBlank (and with the LCD
;   off at start-up), DIV-seeded PRNG.
; =============================================================================

    title "HAMLET"
    cart_type $03               ; MBC1 + RAM + BATTERY: SAVE writes to it
    ram_size 2                  ; 8 KiB

; ----------------------------------------------------------------- hardware
rP1     EQU $FF00
rDIV    EQU $FF04
rIF     EQU $FF0F
rNR10   EQU $FF10
rNR11   EQU $FF11
rNR12   EQU $FF12
rNR13   EQU $FF13
rNR14   EQU $FF14
rNR21   EQU $FF16
rNR22   EQU $FF17
rNR23   EQU $FF18
rNR24   EQU $FF19
rNR30   EQU $FF1A
rNR31   EQU $FF1B
rNR32   EQU $FF1C
rNR33   EQU $FF1D
rNR34   EQU $FF1E
rNR41   EQU $FF20
rNR42   EQU $FF21
rNR43   EQU $FF22
rNR44   EQU $FF23
rNR50   EQU $FF24
rNR51   EQU $FF25
rNR52   EQU $FF26
rWAVE   EQU $FF30
rLCDC   EQU $FF40
rSTAT   EQU $FF41
rSCY    EQU $FF42
rSCX    EQU $FF43
rLY     EQU $FF44
rDMA    EQU $FF46
rBGP    EQU $FF47
rOBP0   EQU $FF48
rOBP1   EQU $FF49
rWY     EQU $FF4A
rWX     EQU $FF4B
rIE     EQU $FFFF

MBC_RAM_ENABLE EQU $0000        ; write $0A: cartridge RAM on, anything else: off
SRAM           EQU $A000

IEF_VBLANK  EQU %00000001
; LCD on, window map $9C00, window off (bit 5, set while a menu shows), tile
; data $8000, BG map $9800, 8x8 objects, objects on, BG on
LCDC_BASE   EQU %11010011
LCDC_WINDOW EQU %00100000

VRAM_TILES  EQU $8000
BG_MAP      EQU $9800
WIN_MAP     EQU $9C00
OAM_ENTRIES EQU 40

; ----------------------------------------------------------------- constants
DIR_RIGHT   EQU 1
DIR_LEFT    EQU 2
DIR_UP      EQU 4
DIR_DOWN    EQU 8
PAD_DIRS    EQU $0F
BTN_A       EQU $10
BTN_B       EQU $20
BTN_SELECT  EQU $40
BTN_START   EQU $80

UI_WORLD    EQU 0
UI_TEXT     EQU 1
UI_START    EQU 2
UI_PC       EQU 3
UI_ITEMS    EQU 4
UI_OPTIONS  EQU 5
UI_YESNO    EQU 6
UI_SAVING   EQU 7
UI_CARD     EQU 8
UI_WARP     EQU 9
UI_TITLE    EQU 10
UI_SELECT   EQU 11

CTX_NONE    EQU 0
CTX_START   EQU 1
CTX_PC      EQU 2
CTX_TALK    EQU 3
CTX_WARP    EQU 4

SELECT_WINDOW EQU 2             ; title frames that look for SELECT held
NUM_STAGES  EQU 4

STEP_FRAMES EQU 16              ; a step: 16 pixels at 1 pixel per frame
BUMP_FRAMES EQU 16              ; a step into a wall: as long, in place
FADE_FRAMES EQU 4               ; frames per fade step (3 steps each way)
SAVE_FRAMES EQU 120             ; "SAVING..." shows this long
BG_ROWS_PER_VBLANK EQU 4        ; map load: 4 x 32 tiles per VBlank (8 VBlanks)

BGP_NORMAL  EQU %11100100       ; 0 white, 1 light, 2 dark, 3 black
OBP0_NORMAL EQU %11010000       ; objects: colour 1 white, 2 light, 3 black
OBP1_NORMAL EQU %11100000       ; colour 1 white, 2 dark, 3 black

; ----------------------------------------------------------------- WRAM
wShadowOAM  EQU $C000
wMapId      EQU $C100
wEvents     EQU $C101
wBagCount   EQU $C103
wBagItems   EQU $C104
wPCCount    EQU $C108
wPCItems    EQU $C109
MAX_ITEMS   EQU 4
wOptTextSpeed EQU $C10D
wOptSound   EQU $C10E
wSaveCount  EQU $C10F
SAVE_BLOCK_SIZE EQU $10         ; $C100-$C10F: what SAVE writes (and the player's object)
wUIState    EQU $C110
wUIContext  EQU $C111
wFrameCount EQU $C112
wRng        EQU $C114
wSeed       EQU $C116
wVBlankLate EQU $C117
wStepCount  EQU $C118
wStage      EQU $C11A
wMapWidth   EQU $C11B
wMapHeight  EQU $C11C
wCamX       EQU $C11D
wCamY       EQU $C11E
wBGLoadRow  EQU $C11F
wOverlay    EQU $C120
wThird      EQU $C121           ; (a sixth: 0-5)
wStartCursor EQU $C122
wBumpFrames EQU $C123
wTextDelay  EQU $C124
wSong       EQU $C125
wMenuItems  EQU $C126
wMenuCursor EQU $C127
wItemCount  EQU $C128
wTextCol    EQU $C129
wTextRow    EQU $C12A
wScriptObject EQU $C12B
wWarpsLeft  EQU $C12C
wMenuWrap   EQU $C12D           ; 1: the open menu's cursor wraps
wMenuExit   EQU $C12E           ; buttons that leave the open menu with $FF
wMenuX      EQU $C12F           ; cursor column of the open menu
wMapHeader  EQU $C130
wMusic      EQU $C140
wSfx        EQU $C160
wMenuTop    EQU $C168           ; row of the open menu's first entry
wScratch    EQU $C170           ; 32 bytes for the routine that runs ($C170-$C18F)
wObjects    EQU $C200
wPlayerX    EQU wObjects + 1
wPlayerY    EQU wObjects + 2
wPlayerFacing EQU wObjects + 3
wPlayerWalk EQU wObjects + 4
wMapBlocks  EQU $C300
wBGMap      EQU $C400
wTileMap    EQU $C810
wTileMapSave EQU $C990
STACK_TOP   EQU $E000

; ----------------------------------------------------------------- HRAM
hDmaRoutine EQU $FF80
hPadHeld    EQU $FF90           ; buttons down this frame (joypad bit order)
hPadPressed EQU $FF91           ; buttons that went down this frame
hVBlankFlag EQU $FF92           ; DelayFrame sets it, the VBlank handler clears it
hSCX        EQU $FF93           ; register shadows, written in VBlank
hSCY        EQU $FF94
hBGP        EQU $FF95
hOBP0       EQU $FF96
hOBP1       EQU $FF97
hLCDC       EQU $FF98

; ----------------------------------------------------------------- macros
; Call the routine whose address is in hl.
MACRO call_hl
    rst $00
ENDM

; ============================================================== vectors
    org $0000                   ; rst $00: jp hl (call_hl)
    jp hl

    org $0040                   ; VBlank interrupt
    jp VBlankHandler

    org $0100                   ; entry point after the boot ROM
    nop
    jp Start

; ============================================================== start-up
    org $0150
Start:
    di
    ld sp, STACK_TOP

    ; The LCD may only be switched off in VBlank (Pan Docs: LCDC bit 7).
.waitVBlank:
    ldh a, [rLY]
    cp 144
    jr c, .waitVBlank
    xor a
    ldh [rLCDC], a

    ; WRAM (but the stack's last page, in use by this very call), OAM and
    ; HRAM to 0.
    ld hl, $C000
    ld bc, $1F00
    xor a
    call MemFill
    ld hl, $FE00
    ld bc, OAM_ENTRIES * 4
    xor a
    call MemFill
    ld hl, $FF80
    ld bc, $7F
    xor a
    call MemFill

    ld hl, DmaRoutine
    ld de, hDmaRoutine
    ld bc, DmaRoutineEnd - DmaRoutine
    call MemCopy

    call LoadTiles
    ld hl, BG_MAP               ; both maps blank (space)
    ld bc, $800
    ld a, ' '
    call MemFill

    call SoundInit

    ; Seed the generator from DIV: the cycle count so far is fixed by the
    ; hardware, so the seed is the same on every power-on, but no constant.
    ldh a, [rDIV]
    ld [wSeed], a
    ld [wRng + 1], a
    ld a, $5B                   ; low byte non-zero: xorshift state is never 0
    ld [wRng], a

    ld a, 32
    ld [wBGLoadRow], a          ; no map load pending
    ld a, 1
    ld [wOptTextSpeed], a       ; MEDIUM
    call ApplyOptions
    ld a, $FF
    ld [wSong], a

    ; the title screen, drawn while the LCD is off
    call DrawTitle
    xor a
    ldh [rSCX], a
    ldh [hSCX], a
    ldh [rSCY], a
    ldh [hSCY], a
    ld a, 7
    ldh [rWX], a
    xor a
    ldh [rWY], a
    ld a, BGP_NORMAL
    ldh [hBGP], a
    ldh [rBGP], a
    ld a, OBP0_NORMAL
    ldh [hOBP0], a
    ldh [rOBP0], a
    ld a, OBP1_NORMAL
    ldh [hOBP1], a
    ldh [rOBP1], a
    ld a, LCDC_BASE
    ldh [hLCDC], a
    ldh [rLCDC], a
    xor a
    ldh [rIF], a
    ld a, IEF_VBLANK
    ldh [rIE], a
    ei
    jp TitleScreen

; ============================================================== VBlank
; DMA first (the CPU can only reach HRAM while it runs), then this frame's
; VRAM work: a map being loaded takes 4 BG rows, else an open menu takes a
; sixth of wTileMap. Then the PPU registers from their shadows, the joypad,
; and the sound driver (sound registers need no VBlank, so it runs last).
VBlankHandler:
    push af
    push bc
    push de
    push hl
    call hDmaRoutine
    ld a, [wBGLoadRow]
    cp 32
    jr nc, .noLoad
    call TransferBGRows
    jr .registers
.noLoad:
    ld a, [wOverlay]
    and a
    call nz, TransferSixth
.registers:
    ldh a, [hSCX]
    ldh [rSCX], a
    ldh a, [hSCY]
    ldh [rSCY], a
    ldh a, [hBGP]
    ldh [rBGP], a
    ldh a, [hOBP0]
    ldh [rOBP0], a
    ldh a, [hOBP1]
    ldh [rOBP1], a
    ldh a, [hLCDC]
    ldh [rLCDC], a
    call ReadJoypad
    ; Self-check: everything above must end inside VBlank (STAT mode 1; LY
    ; is no help: it reads 0 for most of line 153, still VBlank).
    ldh a, [rSTAT]
    and 3
    cp 1
    jr z, .inTime
    ld hl, wVBlankLate
    inc [hl]
.inTime:
    xor a
    ldh [hVBlankFlag], a
    call SoundUpdate
    pop hl
    pop de
    pop bc
    pop af
    reti

; OAM DMA: copied to HRAM and run from there (Pan Docs: OAM DMA Transfer).
DmaRoutine:
    ld a, high(wShadowOAM)
    ldh [rDMA], a
    ld a, 40                    ; 40 x 4 M-cycles = 160 M-cycles
.wait:
    dec a
    jr nz, .wait
    ret
DmaRoutineEnd:

; Read P1 twice: directions (P14 low) then buttons (P15 low). Result in
; joypad bit order: bit0 Right .. bit3 Down, bit4 A .. bit7 Start, 1 = down.
ReadJoypad:
    ld a, %00100000             ; select the d-pad
    ldh [rP1], a
    ldh a, [rP1]
    ldh a, [rP1]                ; read twice: let the lines settle
    cpl
    and $0F
    ld b, a
    ld a, %00010000             ; select the buttons
    ldh [rP1], a
    ldh a, [rP1]
    ldh a, [rP1]
    ldh a, [rP1]
    ldh a, [rP1]
    cpl
    and $0F
    swap a
    or b
    ld b, a
    ld a, %00110000             ; deselect both
    ldh [rP1], a
    ldh a, [hPadHeld]
    cpl
    and b
    ldh [hPadPressed], a
    ld a, b
    ldh [hPadHeld], a
    ret

; Copy BG_ROWS_PER_VBLANK rows of wBGMap to the BG map. wBGMap and BG_MAP
; are both 1 KiB aligned, so the VRAM address is the WRAM one moved by a
; constant; 4 rows of 32 = 128 bytes never cross a 256-byte page.
TransferBGRows:
    ld a, [wBGLoadRow]
    ld c, a
    add a, BG_ROWS_PER_VBLANK
    ld [wBGLoadRow], a
    ld a, c                     ; row * 32: low byte (row & 7) << 5, high row >> 3
    swap a
    add a, a
    and %11100000
    ld l, a
    ld e, a
    ld a, c
    srl a
    srl a
    srl a
    ld c, a
    add a, high(wBGMap)
    ld h, a
    ld a, c
    add a, high(BG_MAP)
    ld d, a
    rept 32 * BG_ROWS_PER_VBLANK
    ld a, [hl+]
    ld [de], a
    inc e
    endr
    ret

; Copy one sixth (3 rows of 20) of wTileMap to the window map, the next
; sixth on the next VBlank (a whole refresh every 6 frames).
TransferSixth:
    ld a, [wThird]
    ld c, a
    inc a
    cp 6
    jr c, .store
    xor a
.store:
    ld [wThird], a
    ld b, 0
    ld hl, SixthSources
    add hl, bc
    add hl, bc
    add hl, bc
    add hl, bc
    ld a, [hl+]
    ld e, a
    ld a, [hl+]
    ld d, a
    ld a, [hl+]
    ld h, [hl]
    ld l, a                     ; hl = window map, de = wTileMap
    ld b, 3
.row:
    rept 20
    ld a, [de]
    ld [hl+], a
    inc e                       ; rows of wTileMap never straddle a page:
    endr                        ; see the assert below
    ld a, l
    add a, 12
    ld l, a
    jr nc, .nc
    inc h
.nc:
    dec b
    jr nz, .row
    ret

SixthSources:                   ; (wTileMap row address, window map address)
    dw wTileMap, WIN_MAP
    dw wTileMap + 3 * 20, WIN_MAP + 3 * 32
    dw wTileMap + 6 * 20, WIN_MAP + 6 * 32
    dw wTileMap + 9 * 20, WIN_MAP + 9 * 32
    dw wTileMap + 12 * 20, WIN_MAP + 12 * 32
    dw wTileMap + 15 * 20, WIN_MAP + 15 * 32

; inc e within a row: no row of wTileMap may cross a 256-byte page, so
; wTileMap starts 16 bytes into a page (its row 12 then starts the next page).
    assert (wTileMap + 12 * 20) % 256 == 0, "a row of wTileMap crosses a page"
    assert wTileMap / 256 == (wTileMap + 11 * 20 + 19) / 256

; ============================================================== frames
; Wait for the next VBlank (one that happens after this call), then count
; the frame and stir the generator with the presses it read. Keeps bc, de, hl.
DelayFrame:
    push bc
    push hl
    ld a, 1
    ldh [hVBlankFlag], a
.halt:
    halt
    ldh a, [hVBlankFlag]
    and a
    jr nz, .halt
    ld hl, wFrameCount
    inc [hl]
    jr nz, .counted
    inc hl
    inc [hl]
.counted:
    ldh a, [hPadPressed]
    ld hl, wRng
    xor [hl]
    ld [hl], a
    call RngNext
    pop hl
    pop bc
    ret

; Wait a frames.
DelayFrames:
    and a
    ret z
.loop:
    push af
    call DelayFrame
    pop af
    dec a
    jr nz, .loop
    ret

; xorshift16 (shifts 7, 9, 8 on the 16-bit state), done byte-wise with
; rotates through carry: a = the new high byte. A state stirred to 0 (which
; xorshift never leaves) becomes 1.
RngNext:
    ld a, [wRng + 1]
    ld b, a
    ld a, [wRng]
    ld c, a
    or b
    jr nz, .go
    inc c
.go:
    ld a, b
    rra                         ; carry = high bit 0
    ld a, c
    rra                         ; a = state >> 1 (low byte), carry = low bit 0
    xor b
    ld b, a                     ; high ^= (state >> 1) low
    ld a, c
    rra
    ld a, b
    rra                         ; a = (low bit 0 << 7) | high >> 1
    xor c
    ld c, a
    xor b
    ld b, a
    ld a, c
    ld [wRng], a
    ld a, b
    ld [wRng + 1], a
    ret

; ============================================================== utilities
; Copy bc bytes from hl to de.
MemCopy:
    ld a, b
    or c
    ret z
.loop:
    ld a, [hl+]
    ld [de], a
    inc de
    dec bc
    ld a, b
    or c
    jr nz, .loop
    ret

; Fill bc bytes at hl with a.
MemFill:
    ld d, a
.loop:
    ld a, b
    or c
    ret z
    ld a, d
    ld [hl+], a
    dec bc
    jr .loop

; a = bit mask of event a (1-15) in its byte; hl = that byte of wEvents.
EventAddr:
    ld hl, wEvents
    cp 8
    jr c, .low
    inc hl
    sub 8
.low:
    ld b, a
    ld a, 1
    inc b
.shift:
    dec b
    ret z
    add a, a
    jr .shift

; Z clear (nz) if event a is set.
CheckEvent:
    call EventAddr
    and [hl]
    ret

SetEvent:
    call EventAddr
    or [hl]
    ld [hl], a
    ret

; hl = hl + a
AddHLA:
    add a, l
    ld l, a
    ret nc
    inc h
    ret

; The text delay of wOptTextSpeed, and NR51 for wOptSound.
ApplyOptions:
    ld a, [wOptTextSpeed]
    ld e, a
    ld d, 0
    ld hl, TextDelays
    add hl, de
    ld a, [hl]
    ld [wTextDelay], a
    ld a, [wOptSound]
    and a
    ld a, $FF                   ; MONO: every channel to both sides
    jr z, .nr51
    ld a, %01111011             ; STEREO: CH1, CH2 both sides, CH3 left, CH4 right
.nr51:
    ldh [rNR51], a
    ret

TextDelays:
    db 1, 3, 5                  ; FAST, MEDIUM, SLOW (frames per letter)

; ============================================================== tiles
; Font: 1bpp glyphs for ASCII $20-$5F to tiles $20-$5F as colour 3 on 0;
; then the 2bpp UI, sprite and map tiles over their slots.
LoadTiles:
    ld hl, FontGlyphs
    ld de, VRAM_TILES + $20 * 16
    ld bc, $40 * 8
.font:
    ld a, [hl+]
    ld [de], a
    inc de
    ld [de], a
    inc de
    dec bc
    ld a, b
    or c
    jr nz, .font
    ld hl, TileLoads
.next:                          ; entries: dw bytes, VRAM destination, source
    ld a, [hl+]
    ld c, a
    ld a, [hl+]
    ld b, a
    or c
    ret z
    ld a, [hl+]
    ld e, a
    ld a, [hl+]
    ld d, a
    ld a, [hl+]
    ld [wScratch], a
    ld a, [hl+]
    push hl
    ld h, a
    ld a, [wScratch]
    ld l, a
    call MemCopy
    pop hl
    jr .next

    include "hamlet_world.inc"
    include "hamlet_ui.inc"
    include "hamlet_script.inc"
    include "hamlet_music.inc"
    include "hamlet_maps.inc"
    include "hamlet_font.inc"
    include "hamlet_gfx.inc"
