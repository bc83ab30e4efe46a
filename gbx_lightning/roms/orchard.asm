; =============================================================================
; ORCHARD - the embedded homebrew game of gbx_lightning (DMG, ROM only, 32 KiB)
; =============================================================================
; Written for this project as the default reinforcement-learning task: a new
; user needs no ROM of their own. Build:
;     python -m gbx_lightning.roms.asm gbx_lightning/roms/orchard.asm -o orchard.gb
; or gbx_lightning.roms.build_rom("orchard"). Tests: tests/test_game_rom.py;
; a scripted 1500-frame input trace and a Python model of the rules below:
; tests/_game_helpers.py.
;
; GAME
;   A maze of 20x16 tiles fills the screen above a two-row status bar. You
;   are the round black forager (an 8x8 sprite). Collect every seed (small
;   ringed dots) to clear the level; touching a beetle (grey 8x8 sprites that
;   patrol straight lines and turn back at walls) ends the game. Every so
;   often a bonus fruit (a larger diamond) appears on a random floor tile for
;   a few seconds.
;
; CONTROLS
;   D-pad  move. Movement is tile by tile: standing on a tile, the held
;          direction (first of Right, Left, Up, Down that is not blocked by
;          a wall) starts a step of 8 pixels, taken at 2 pixels per frame;
;          a started step always finishes. No direction held: stand still.
;   Start  on the game-over screen: play again (the game also restarts by
;          itself after GAMEOVER_FRAMES frames).
;   Select held at power-on: the level select (below).
;
; RULES
;   seed  +10 points; the level is cleared when no seed is left.
;   fruit +50 points; does not count toward clearing the level.
;   beetle contact (sprite boxes closer than 6 pixels on both axes): game
;          over. The screen shakes for DYING_FRAMES frames, then the
;          game-over banner shows.
;   After LEVEL CLEAR the next ladder level loads (after level 7, level 4
;   again) and the score carries over; after GAME OVER the game restarts
;   at the level it was started at (wStartLevel) with score 0.
;   Beetles move 1 pixel per frame along their row or column and reverse
;   when the next tile is a wall; they ignore seeds and fruit.
;
; LEVEL LADDER (orchard_levels.inc; gbx_lightning/roms/orchard.py mirrors it)
;   1  one small room, 4 seeds two or three tiles from the start, no beetle
;   2  a small maze, 8 seeds, no beetle
;   3  a medium maze, 12 seeds, 1 beetle
;   4-7 the full game: its four mazes (22, 20, 16, 18 seeds; 2, 3, 3, 4 beetles)
;   Levels 1-3 are training rungs for an agent learning from pixels.
;
; POWER-ON AND THE LEVEL SELECT
;   With no button held the game starts at once on level 4, the full game,
;   and plays exactly as the original four-maze game did: the status bar
;   counts levels from "LV 01" and the mazes cycle 4, 5, 6, 7, 4, ...
;   SELECT held when the VBlank handler reads the joypad in either of the
;   first SELECT_WINDOW (2) game frames after the LCD is switched on (the
;   frames that make wFrameCount 1 and 2; on VecGameBoy run_frames frames 5
;   and 6 from power-on) drops that game for the level-select screen
;   ("SELECT LEVEL" and "< n >", a blank status bar, no sprites), drawn
;   like a level in 8 frames; presses during those frames are ignored. It opens on 1. Each new press (a button
;   down now that was up the frame before) of RIGHT or UP adds one, LEFT or
;   DOWN takes one, wrapping 7 -> 1 and 1 -> 7; START or A (checked first)
;   starts the game there: score 0, the level loads as usual (8 frames),
;   then play. Such a game shows the ladder level on the status bar
;   ("LV 03" on level 3), and GAME OVER restarts it at the chosen level.
;   Select does nothing else (a new press of it, like any button's, stirs
;   the random generator).
;   gbx_lightning/roms/orchard.py: level_select_inputs(level) is the input
;   trace that starts any ladder level from power-on (and these addresses).
;
; DETERMINISM
;   Everything follows from the power-on state and the joypad inputs. The
;   only randomness (where the fruit appears) comes from a 16-bit xorshift
;   generator seeded from DIV once at start-up and stirred with each new
;   button press, so identical inputs from the post-boot state give
;   identical frames on an accurate emulator.
;
; GOAL SCREENS (a fixed region, a template for a pixel-based reward)
;   Both banners cover BG tile rows 6-9 across the full width: screen lines
;   48-79, columns 0-159 (obs rows 24-39 of the 72x80 observation). All
;   sprites are hidden while a banner shows, SCX = SCY = 0, BGP = $E4.
;   LEVEL CLEAR: rows 6 and 9 solid black; rows 7-8 white text on black:
;                "    LEVEL  CLEAR    " / "     WELL  DONE     ".
;   GAME OVER:   rows 6 and 9 a black/white checkerboard of 4x4-pixel squares;
;                rows 7-8 white text on black:
;                "     GAME  OVER     " / "    PRESS  START    ".
;   The banner is drawn over the two VBlanks after the event (two rows
;   each); the flags below rise on the frame of the event itself. A level
;   (re)loads in 8 frames, two map rows per VBlank, sprites hidden. The
;   banners are the same on every level: they do not depend on the maze.
;
; MEMORY MAP (WRAM; RL environments may read these)
;   $C000-$C09F  shadow OAM (copied to OAM by DMA every VBlank)
;   $C100  wGameState    0 play, 1 dying (shake), 2 game over, 3 level clear,
;                        4 loading a level, 5 level select (drawing it too)
;   $C101  wGameOver     1 from the frame a beetle is touched until the restart
;   $C102  wLevelClear   1 from the frame the last seed is taken until the
;                        next level starts loading
;   $C103  wLevel        the status bar's level number - 1: from power-on
;                        0, 1, 2, ... (one more per LEVEL CLEAR, 0 after
;                        GAME OVER); from the level select wLadderLevel - 1
;   $C104  wScore        2 bytes, BCD, little endian, in units of 10 points
;                        ($C104 holds the two lowest digits)
;   $C106  wSeedsLeft    seeds left in this level (binary; 0 on the select screen)
;   $C107  wPlayerX      player sprite's left edge in screen pixels (0-152)
;   $C108  wPlayerY      player sprite's top edge in screen pixels (0-120)
;   $C109  wPlayerDir    step in progress: 0 none, or a DIR_* bit below
;   $C10A  wFacing       last direction moved (DIR_*), for the sprite
;   $C10B  wFrameCount   2 bytes, little endian, frames since power-on
;   $C10D  wRng          2 bytes, xorshift16 state
;   $C10F  wSeedsEaten   seeds eaten since power-on (binary, wraps at 256)
;   $C110  wBonusX       fruit tile column (0: no fruit on the field)
;   $C111  wBonusY       fruit tile row
;   $C112  wBonusTimer   frames until the fruit appears / disappears
;   $C113  wStateTimer   frames left in the dying / banner states
;   $C114  wNumHazards   beetles in this level (0-4)
;   $C115  wVblankLate   VBlank handlers that finished outside VBlank (stays 0)
;   $C116  wLoadRow      next map row the VBlank loader copies to VRAM
;   $C117  wLoadEnd      row where the loader stops
;   $C118  wSeed         the DIV value read at start-up (the generator's seed)
;   $C119  wLadderLevel  ladder level (1-7) of the maze in wMap: selects it in
;                        LevelTable; 4 at power-on
;   $C11A  wStartLevel   ladder level a game starts and restarts at (4 from
;                        power-on); on the select screen, the level shown
;   $C11B  wFromSelect   1 once the level select has opened (the status bar
;                        then shows wLadderLevel), else 0
;   $C120  wHazards      4 x (x, y, dir, unused), same coordinates as the player
;   $C130  wTileQueue    count, then up to 4 x (VRAM address lo, hi, tile)
;   $C140  wStatus       2 x 20 status-bar tiles, copied to the window map
;   $C200-$C3FF wMap     the maze, 16 rows x 32 bytes (columns 0-19 used),
;                        the same layout as the BG map at $9800; tile codes
;                        are characters: '#' wall, '.' floor, '*' seed,
;                        '$' fruit
;   Directions (joypad bit order): DIR_RIGHT 1, DIR_LEFT 2, DIR_UP 4, DIR_DOWN 8.
;   Player tile = (wPlayerX / 8, wPlayerY / 8) when both are multiples of 8.
;
; HARDWARE USE (so the game exercises an emulator the way real games do)
;   VBlank-interrupt main loop (HALT), OAM DMA from an HRAM routine, joypad
;   read through P1 with both select lines, DIV-seeded PRNG, window layer for
;   the status bar (WX = 7, WY = 128), SCX/SCY screen shake, BGP flashing,
;   OBP0 (player) and OBP1 (beetles), sprite X and Y flips, VRAM written only
;   in VBlank (and with the LCD off at start-up).
; =============================================================================

    title "ORCHARD"

; ----------------------------------------------------------------- hardware
rP1     EQU $FF00
rDIV    EQU $FF04
rIF     EQU $FF0F
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

IEF_VBLANK  EQU %00000001
; LCD on, window map $9C00, window on, tile data $8000, BG map $9800,
; 8x8 sprites, sprites on, BG on
LCDC_GAME   EQU %11110011

VRAM_TILES  EQU $8000
BG_MAP      EQU $9800
WIN_MAP     EQU $9C00
OAM_ENTRIES EQU 40

; ----------------------------------------------------------------- constants
DIR_RIGHT   EQU 1
DIR_LEFT    EQU 2
DIR_UP      EQU 4
DIR_DOWN    EQU 8
BTN_A       EQU $10
BTN_SELECT  EQU $40
BTN_START   EQU $80

STATE_PLAY      EQU 0
STATE_DYING     EQU 1
STATE_GAMEOVER  EQU 2
STATE_CLEAR     EQU 3
STATE_LOADING   EQU 4
STATE_SELECT    EQU 5

NUM_LEVELS      EQU 7       ; ladder levels 1-7
FULL_GAME_LEVEL EQU 4       ; ladder level of the full game's first maze
SELECT_WINDOW   EQU 2       ; game frames after power-on that look for SELECT

MAP_COLS    EQU 20
MAP_ROWS    EQU 16
MAP_STRIDE  EQU 32
MAX_HAZARDS EQU 4
PLAYER_SPEED EQU 2          ; pixels per frame; divides 8, so steps end on tiles
HIT_DISTANCE EQU 6          ; sprite boxes closer than this on both axes touch
LOAD_ROWS_PER_VBLANK EQU 2  ; 2 rows x 20 tiles: the handler then ends by LY 149 (of 153)

DYING_FRAMES    EQU 32
GAMEOVER_FRAMES EQU 180
START_LOCKOUT   EQU 30      ; Start is ignored for the banner's first frames
CLEAR_FRAMES    EQU 90
BONUS_FIRST     EQU 180     ; frames into a level before the first fruit
BONUS_LIFE      EQU 240
BONUS_GAP       EQU 200
SEED_POINTS     EQU $01     ; BCD, in tens
BONUS_POINTS    EQU $05

BANNER_ROW      EQU 6       ; banners cover map rows 6-9
TILE_FLOOR      EQU '.'
TILE_WALL       EQU '#'
TILE_SEED       EQU '*'
TILE_BONUS      EQU '$'
TILE_CHECKER    EQU '%'
TILE_SOLID      EQU ' ' + $80   ; inverted space: a black tile
INVERSE         EQU $80         ; tile offset of the inverted font

T_PLAYER_SIDE_A EQU 1       ; sprite tiles (tile numbers 1-6)
T_PLAYER_SIDE_B EQU 2
T_PLAYER_UP_A   EQU 3
T_PLAYER_UP_B   EQU 4
T_BEETLE_A      EQU 5
T_BEETLE_B      EQU 6

OAM_YFLIP   EQU $40
OAM_XFLIP   EQU $20
OAM_PAL1    EQU $10

BGP_NORMAL  EQU %11100100   ; 0 white, 1 light, 2 dark, 3 black
BGP_FLASH   EQU %00011011   ; inverted, flashed while dying
OBP0_PLAYER EQU %11100100
OBP1_BEETLE EQU %11100000   ; colour 1 (eyes) shows white

; ----------------------------------------------------------------- WRAM
wShadowOAM  EQU $C000
wGameState  EQU $C100
wGameOver   EQU $C101
wLevelClear EQU $C102
wLevel      EQU $C103
wScore      EQU $C104
wSeedsLeft  EQU $C106
wPlayerX    EQU $C107
wPlayerY    EQU $C108
wPlayerDir  EQU $C109
wFacing     EQU $C10A
wFrameCount EQU $C10B
wRng        EQU $C10D
wSeedsEaten EQU $C10F
wBonusX     EQU $C110
wBonusY     EQU $C111
wBonusTimer EQU $C112
wStateTimer EQU $C113
wNumHazards EQU $C114
wVblankLate EQU $C115
wLoadRow    EQU $C116
wLoadEnd    EQU $C117
wSeed       EQU $C118
wLadderLevel EQU $C119
wStartLevel EQU $C11A
wFromSelect EQU $C11B
wHazards    EQU $C120
wTileQueue  EQU $C130
TILE_QUEUE_MAX EQU 4
wStatus     EQU $C140
wStatus1    EQU wStatus + MAP_COLS
wMap        EQU $C200
SELECT_DIGIT EQU wMap + 5 * MAP_STRIDE + 10   ; the level digit on the select screen
STACK_TOP   EQU $E000

; ----------------------------------------------------------------- HRAM
hDmaRoutine EQU $FF80
hPadHeld    EQU $FF90       ; buttons down this frame (joypad bit order)
hPadPressed EQU $FF91       ; buttons that went down this frame
hVblankDone EQU $FF92
hSCX        EQU $FF93       ; register shadows, written to the PPU in VBlank
hSCY        EQU $FF94
hBGP        EQU $FF95

; ----------------------------------------------------------------- macros
; hl = wMap + \2 * MAP_STRIDE + \1 for tile column/row held in registers.
; Rows are 32 bytes, so row * 32 is a shift and the column just ORs in.
MACRO map_addr      ; map_addr col_reg, row_reg   (e.g. map_addr b, c)
    ld a, \2
    swap a
    rlca                ; a = row * 32 (low byte); bit 0 holds row bit 3
    and %11100000
    or \1
    ld l, a
    ld a, \2
    srl a
    srl a
    srl a               ; a = row / 8
    add a, high(wMap)
    ld h, a
ENDM

; Copy `\1` bytes from [hl] to [de], both advancing; de must not cross a
; 256-byte boundary inside the run (true for any map row).
MACRO copy_row_unrolled
    rept \1
    ld a, [hl+]
    ld [de], a
    inc e
    endr
ENDM

; ============================================================== vectors
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

    ; Clear the WRAM the game uses (shadow OAM, state, map), OAM (reachable
    ; while the LCD is off) and HRAM.
    ld hl, $C000
    ld b, 4                     ; $C000-$C3FF
    xor a
    call FillPages
    ld hl, $FE00
    ld c, OAM_ENTRIES * 4
    call FillBytes
    ld hl, $FF80
    ld c, $7F
    call FillBytes

    ld hl, DmaRoutine
    ld de, hDmaRoutine
    ld bc, DmaRoutineEnd - DmaRoutine
    call MemCopy

    call LoadTiles

    ; Whole BG map = wall (what a screen shake uncovers), window map = blank.
    ld hl, BG_MAP
    ld b, 4
    ld a, TILE_WALL
    call FillPages
    ld hl, WIN_MAP
    ld b, 4
    ld a, ' '
    call FillPages
    ; Static status-bar text; digits are filled in every frame.
    ld hl, StatusTemplate
    ld de, wStatus
    ld bc, 2 * MAP_COLS
    call MemCopy

    ; Palettes and the window position.
    ld a, BGP_NORMAL
    ldh [hBGP], a
    ldh [rBGP], a
    ld a, OBP0_PLAYER
    ldh [rOBP0], a
    ld a, OBP1_BEETLE
    ldh [rOBP1], a
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, 128                   ; status bar = the last 16 lines
    ldh [rWY], a
    ld a, 7                     ; WX = 7: window starts at the left edge
    ldh [rWX], a

    ; Seed the generator from DIV: the cycle count so far is fixed by the
    ; hardware, so the seed is the same on every power-on (deterministic),
    ; but it is not a constant written in the source.
    ldh a, [rDIV]
    ld [wSeed], a
    ld [wRng + 1], a
    ld a, $A5                   ; low byte non-zero: xorshift state is never 0
    ld [wRng], a

    ; The full game's first maze, drawn all at once while the LCD is off.
    ; (SELECT held in the first frames swaps it for the level select.)
    xor a
    ld [wLevel], a
    ld a, FULL_GAME_LEVEL
    ld [wLadderLevel], a
    ld [wStartLevel], a
    call StartLevel
.drawAll:
    call LoadMapRows
    ld a, [wLoadRow]
    ld hl, wLoadEnd
    cp [hl]
    jr c, .drawAll
    ld a, STATE_PLAY
    ld [wGameState], a
    call BuildStatus
    call CopyStatus
    call BuildSprites

    ld a, LCDC_GAME
    ldh [rLCDC], a
    xor a
    ldh [rIF], a
    ld a, IEF_VBLANK
    ldh [rIE], a
    ei

; ============================================================== main loop
; Sleep until the VBlank handler has run, then compute the next frame. All
; VRAM/OAM traffic happens in the handler; the game logic only writes WRAM.
MainLoop:
    halt
    ldh a, [hVblankDone]
    and a
    jr z, MainLoop
    xor a
    ldh [hVblankDone], a
    call UpdateGame
    jr MainLoop

; ============================================================== VBlank
VBlankHandler:
    push af
    push bc
    push de
    push hl
    call hDmaRoutine            ; sprites first: OAM DMA is 160 M-cycles
    call FlushTileQueue
    ; A level or banner being drawn takes this VBlank's time; otherwise
    ; refresh the status bar.
    ld a, [wLoadRow]
    ld hl, wLoadEnd
    cp [hl]
    jr nc, .status
    call LoadMapRows
    jr .registers
.status:
    call CopyStatus
.registers:
    ldh a, [hSCX]
    ldh [rSCX], a
    ldh a, [hSCY]
    ldh [rSCY], a
    ldh a, [hBGP]
    ldh [rBGP], a
    call ReadJoypad
    ; Self-check: everything above must end inside VBlank (LY 144-152).
    ldh a, [rLY]
    cp 144
    jr c, .late
    cp 153
    jr c, .inTime
.late:
    ld hl, wVblankLate
    inc [hl]
.inTime:
    ld a, 1
    ldh [hVblankDone], a
    pop hl
    pop de
    pop bc
    pop af
    reti

; OAM DMA: the CPU may only touch HRAM while it runs, so this routine is
; copied to HRAM and waits there (Pan Docs: OAM DMA Transfer).
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

; Write queued single tiles (eaten seeds, fruit) to the BG map.
FlushTileQueue:
    ld hl, wTileQueue
    ld a, [hl]
    and a
    ret z
    ld b, a
    xor a
    ld [hl+], a
.next:
    ld e, [hl]
    inc hl
    ld d, [hl]
    inc hl
    ld a, [hl+]
    ld [de], a
    dec b
    jr nz, .next
    ret

; Copy the two status rows (WRAM) to the window map.
CopyStatus:
    ld hl, wStatus
    ld de, WIN_MAP
    copy_row_unrolled MAP_COLS
    ld de, WIN_MAP + MAP_STRIDE
    copy_row_unrolled MAP_COLS
    ret

; Copy up to LOAD_ROWS_PER_VBLANK map rows [wLoadRow, wLoadEnd) to the BG map.
LoadMapRows:
    ld b, LOAD_ROWS_PER_VBLANK
.row:
    ld a, [wLoadEnd]
    ld c, a
    ld a, [wLoadRow]
    cp c
    ret nc
    ld c, a
    inc a
    ld [wLoadRow], a
    map_addr 0, c               ; hl = wMap + row * 32
    ld d, h
    ld e, l
    ld a, d
    sub high(wMap) - high(BG_MAP)
    ld d, a                     ; de = BG_MAP + row * 32
    copy_row_unrolled MAP_COLS
    dec b
    jr nz, .row
    ret

; ============================================================== game logic
UpdateGame:
    ; frame counter and generator tick every frame, whatever the state
    ld hl, wFrameCount
    inc [hl]
    jr nz, .counted
    inc hl
    inc [hl]
.counted:
    ldh a, [hPadPressed]
    ld hl, wRng
    xor [hl]
    ld [hl], a                  ; stir new presses into the state
    call RngNext

    ; SELECT held in the first SELECT_WINDOW frames after power-on: the game
    ; has not been touched yet, so it can give way to the level select.
    ld a, [wFrameCount + 1]
    and a
    jr nz, .dispatch
    ld a, [wFrameCount]
    cp SELECT_WINDOW + 1
    jr nc, .dispatch
    ldh a, [hPadHeld]
    and BTN_SELECT
    jr z, .dispatch
    ld a, [wGameState]
    cp STATE_PLAY
    jp z, EnterSelect

.dispatch:
    ld a, [wGameState]
    cp STATE_PLAY
    jp z, UpdatePlay
    cp STATE_DYING
    jp z, UpdateDying
    cp STATE_GAMEOVER
    jp z, UpdateGameOver
    cp STATE_CLEAR
    jp z, UpdateClear
    cp STATE_SELECT
    jp z, UpdateSelect
    ; STATE_LOADING: the VBlank handler is drawing the maze
    ld a, [wLoadRow]
    ld hl, wLoadEnd
    cp [hl]
    ret c
    ld a, STATE_PLAY
    ld [wGameState], a
    call BuildSprites
    jp BuildStatus

UpdatePlay:
    call MovePlayer
    call CheckPickup
    ld a, [wSeedsLeft]
    and a
    jp z, EnterClear
    call MoveHazards
    call CheckHit
    jp c, EnterDying
    call UpdateBonus
    call BuildSprites
    jp BuildStatus

UpdateDying:
    ; shake the screen and flash the palette, then show the banner
    ld hl, wStateTimer
    dec [hl]
    jr z, .over
    ld a, [hl]
    and 7
    add a, a
    ld e, a
    ld d, 0
    ld hl, ShakeTable
    add hl, de
    ld a, [hl+]
    ldh [hSCX], a
    ld a, [hl]
    ldh [hSCY], a
    ld a, [wStateTimer]
    and 4
    ld a, BGP_NORMAL
    jr z, .pal
    ld a, BGP_FLASH
.pal:
    ldh [hBGP], a
    ret
.over:
    call CalmScreen
    call HideSprites
    ld a, STATE_GAMEOVER
    ld [wGameState], a
    ld a, GAMEOVER_FRAMES
    ld [wStateTimer], a
    ld hl, BannerGameOver
    ld b, TILE_CHECKER
    jp ShowBanner

UpdateGameOver:
    ld hl, wStateTimer
    dec [hl]
    jr z, .restart
    ld a, [hl]
    cp GAMEOVER_FRAMES - START_LOCKOUT
    ret nc
    ldh a, [hPadPressed]
    and BTN_START
    ret z
.restart:                       ; fall through

; Score 0, the maze of wStartLevel, wLevel 0 (StartLevel renumbers a game
; begun at the level select).
RestartGame:
    xor a
    ld [wLevel], a
    ld [wScore], a
    ld [wScore + 1], a
    ld a, [wStartLevel]
    ld [wLadderLevel], a
    jp StartLevel

; The next ladder level; after the last, the full game's first maze again.
UpdateClear:
    ld hl, wStateTimer
    dec [hl]
    ret nz
    ld hl, wLevel
    inc [hl]
    ld a, [wLadderLevel]
    inc a
    cp NUM_LEVELS + 1
    jr c, .next
    ld a, FULL_GAME_LEVEL
.next:
    ld [wLadderLevel], a
    jp StartLevel

; Level select: wait for the screen to be drawn, then step wStartLevel
; (wrapping 7 <-> 1) or start the game there.
UpdateSelect:
    ld a, [wLoadRow]
    ld hl, wLoadEnd
    cp [hl]
    ret c
    ldh a, [hPadPressed]
    ld b, a
    and BTN_START | BTN_A
    jr nz, .play
    ld a, b
    and DIR_RIGHT | DIR_UP
    jr nz, .up
    ld a, b
    and DIR_LEFT | DIR_DOWN
    ret z
    ld a, [wStartLevel]
    dec a
    jr nz, .show
    ld a, NUM_LEVELS
    jr .show
.up:
    ld a, [wStartLevel]
    cp NUM_LEVELS
    jr c, .inc
    xor a
.inc:
    inc a
.show:
    ld [wStartLevel], a
    jp ShowSelectedLevel
.play:
    ld hl, StatusTemplate       ; the status bar was blanked for the menu
    ld de, wStatus
    ld bc, 2 * MAP_COLS
    call MemCopy
    jp RestartGame

; ---- state entries
EnterClear:
    ld a, 1
    ld [wLevelClear], a
    ld a, STATE_CLEAR
    ld [wGameState], a
    ld a, CLEAR_FRAMES
    ld [wStateTimer], a
    call HideSprites
    call BuildStatus
    ld hl, BannerClear
    ld b, TILE_SOLID
    jp ShowBanner

; Replace the game just started at power-on by the level-select screen.
EnterSelect:
    ld a, STATE_SELECT
    ld [wGameState], a
    ld a, 1
    ld [wStartLevel], a
    ld [wFromSelect], a
    xor a
    ld [wTileQueue], a          ; drop tiles queued for the maze being replaced
    call HideSprites
    ld hl, wStatus
    ld c, 2 * MAP_COLS
    ld a, ' '
    call FillBytes
    ld hl, SelectScreen
    call LoadScreen
    ; fall through: the digit of the selection

; Write wStartLevel's digit into the select screen (map and BG).
ShowSelectedLevel:
    ld a, [wStartLevel]
    add a, '0'
    ld hl, SELECT_DIGIT
    ld [hl], a
    jp QueueTile

EnterDying:
    ld a, 1
    ld [wGameOver], a
    ld a, STATE_DYING
    ld [wGameState], a
    ld a, DYING_FRAMES
    ld [wStateTimer], a
    jp BuildSprites             ; the sprites freeze where they met

; Load the maze of wLadderLevel into wMap and queue it for drawing; the
; game resumes (STATE_PLAY) once the VBlank handler has drawn every row.
StartLevel:
    xor a
    ld [wGameOver], a
    ld [wLevelClear], a
    ld [wPlayerDir], a
    ld [wBonusX], a
    ld [wTileQueue], a
    ld a, DIR_RIGHT
    ld [wFacing], a
    ld a, BONUS_FIRST
    ld [wBonusTimer], a
    ld a, STATE_LOADING
    ld [wGameState], a
    call CalmScreen
    call HideSprites
    ; a game begun at the level select numbers its levels by the ladder
    ld a, [wFromSelect]
    and a
    jr z, .numbered
    ld a, [wLadderLevel]
    dec a
    ld [wLevel], a
.numbered:
    ; hl = LevelTable[wLadderLevel - 1]
    ld a, [wLadderLevel]
    dec a
    add a, a
    ld e, a
    ld d, 0
    ld hl, LevelTable
    add hl, de
    ld a, [hl+]
    ld h, [hl]
    ld l, a
    ; player start tile -> pixels
    ld a, [hl+]
    call TileToPixel
    ld [wPlayerX], a
    ld a, [hl+]
    call TileToPixel
    ld [wPlayerY], a
    ; hazards: count, then (x, y, dir) each
    ld a, [hl+]
    ld [wNumHazards], a
    and a
    jr z, LoadScreen
    ld b, a
    ld de, wHazards
.hazard:
    ld a, [hl+]
    call TileToPixel
    ld [de], a
    inc de
    ld a, [hl+]
    call TileToPixel
    ld [de], a
    inc de
    ld a, [hl+]
    ld [de], a
    inc de
    inc de
    dec b
    jr nz, .hazard
    ; fall through: the rows

; Copy 16 rows of 20 tiles from hl (ROM) to wMap's 32-byte rows, count the
; seeds into wSeedsLeft and queue every row for the VBlank loader.
LoadScreen:
    xor a
    ld [wSeedsLeft], a
    ld de, wMap
    ld b, MAP_ROWS
.row:
    ld c, MAP_COLS
.col:
    ld a, [hl+]
    ld [de], a
    inc de
    cp TILE_SEED
    jr nz, .notSeed
    push hl
    ld hl, wSeedsLeft
    inc [hl]
    pop hl
.notSeed:
    dec c
    jr nz, .col
    ld a, e
    add a, MAP_STRIDE - MAP_COLS
    ld e, a
    jr nc, .noCarry
    inc d
.noCarry:
    dec b
    jr nz, .row
    xor a
    ld [wLoadRow], a
    ld a, MAP_ROWS
    ld [wLoadEnd], a
    ret

TileToPixel:                    ; a = a * 8
    add a, a
    add a, a
    add a, a
    ret

; Write a banner into map rows 6-9 and queue those rows for drawing.
; hl = two 20-character text rows, b = tile for the edge rows 6 and 9.
ShowBanner:
    push hl
    ld hl, wMap + BANNER_ROW * MAP_STRIDE
    call .edge
    pop de
    ld hl, wMap + (BANNER_ROW + 1) * MAP_STRIDE
    call .text
    ld hl, wMap + (BANNER_ROW + 2) * MAP_STRIDE
    call .text
    ld hl, wMap + (BANNER_ROW + 3) * MAP_STRIDE
    call .edge
    ld a, BANNER_ROW
    ld [wLoadRow], a
    ld a, BANNER_ROW + 4
    ld [wLoadEnd], a
    ret
.edge:
    ld c, MAP_COLS
.edgeLoop:
    ld a, b
    ld [hl+], a
    dec c
    jr nz, .edgeLoop
    ret
.text:                          ; de = text, advanced past 20 characters
    ld c, MAP_COLS
.textLoop:
    ld a, [de]
    inc de
    or INVERSE                  ; white-on-black copy of the font
    ld [hl+], a
    dec c
    jr nz, .textLoop
    ret

CalmScreen:
    xor a
    ldh [hSCX], a
    ldh [hSCY], a
    ld a, BGP_NORMAL
    ldh [hBGP], a
    ret

; ---- player
; Standing on a tile: pick the first held direction whose next tile is not
; a wall. Between tiles: keep going. Then advance PLAYER_SPEED pixels.
MovePlayer:
    ld a, [wPlayerX]
    ld b, a
    ld a, [wPlayerY]
    or b
    and 7
    jr nz, .step
    xor a
    ld [wPlayerDir], a
    ldh a, [hPadHeld]
    and $0F
    ret z
    ld e, a                     ; held directions
    ld d, DIR_RIGHT
.try:
    ld a, e
    and d
    jr z, .nextDir
    ld a, [wPlayerX]
    ld b, a
    ld a, [wPlayerY]
    ld c, a
    ld a, d
    call TileAhead
    cp TILE_WALL
    jr nz, .go
.nextDir:
    sla d
    bit 4, d
    jr z, .try
    ret                         ; every held direction is blocked
.go:
    ld a, d
    ld [wPlayerDir], a
    ld [wFacing], a
.step:
    ld a, [wPlayerDir]
    ld hl, wPlayerX
    ld b, PLAYER_SPEED
    jp MoveActor

; If the player stands exactly on a seed or the fruit, take it.
CheckPickup:
    ld a, [wPlayerX]
    ld b, a
    ld a, [wPlayerY]
    ld c, a
    or b
    and 7
    ret nz
    srl b
    srl b
    srl b
    srl c
    srl c
    srl c
    push bc
    map_addr b, c
    pop bc
    ld a, [hl]
    cp TILE_SEED
    jr z, .seed
    cp TILE_BONUS
    ret nz
    xor a
    ld [wBonusX], a
    ld a, BONUS_GAP
    ld [wBonusTimer], a
    ld a, BONUS_POINTS
    jr .take
.seed:
    ld a, [wSeedsLeft]
    dec a
    ld [wSeedsLeft], a
    ld a, [wSeedsEaten]
    inc a
    ld [wSeedsEaten], a
    ld a, SEED_POINTS
.take:
    call AddScore
    ld [hl], TILE_FLOOR
    ld a, TILE_FLOOR
    jp QueueTile

; a = BCD points (tens) added to wScore
AddScore:
    push hl
    ld hl, wScore
    add a, [hl]
    daa
    ld [hl+], a
    ld a, [hl]
    adc a, 0
    daa
    ld [hl], a
    pop hl
    ret

; Queue tile a for the BG map at the map address hl (wMap-relative).
QueueTile:
    push hl
    ld c, a
    ld a, h
    sub high(wMap) - high(BG_MAP)
    ld d, a
    ld e, l                     ; de = VRAM address
    ld hl, wTileQueue
    ld a, [hl]
    cp TILE_QUEUE_MAX
    jr nc, .full                ; cannot happen: at most 2 tiles per frame
    inc [hl]
    inc hl
    ld b, a
    add a, a
    add a, b                    ; 3 bytes per entry
    add a, l
    ld l, a
    ld [hl], e
    inc hl
    ld [hl], d
    inc hl
    ld [hl], c
.full:
    pop hl
    ret

; Map tile one step from the actor at pixel (b, c) in direction a.
TileAhead:
    srl b
    srl b
    srl b
    srl c
    srl c
    srl c
    bit 0, a
    jr z, .notRight
    inc b
.notRight:
    bit 1, a
    jr z, .notLeft
    dec b
.notLeft:
    bit 2, a
    jr z, .notUp
    dec c
.notUp:
    bit 3, a
    jr z, .notDown
    inc c
.notDown:
    map_addr b, c
    ld a, [hl]
    ret

; Move the actor whose (x, y) are at hl by b pixels in direction a.
MoveActor:
    bit 0, a
    jr z, .notRight
    push af
    ld a, [hl]
    add a, b
    ld [hl], a
    pop af
.notRight:
    bit 1, a
    jr z, .notLeft
    push af
    ld a, [hl]
    sub b
    ld [hl], a
    pop af
.notLeft:
    inc hl
    bit 2, a
    jr z, .notUp
    push af
    ld a, [hl]
    sub b
    ld [hl], a
    pop af
.notUp:
    bit 3, a
    ret z
    ld a, [hl]
    add a, b
    ld [hl], a
    ret

; ---- beetles
; Each beetle walks 1 pixel per frame; on a tile boundary it turns back if
; the next tile is a wall (and stays put if walled in both ways).
MoveHazards:
    ld a, [wNumHazards]
    and a
    ret z
    ld b, a
    ld hl, wHazards
.next:
    push bc
    push hl
    ld a, [hl+]
    ld b, a
    ld a, [hl+]
    ld c, a
    or b
    and 7
    jr nz, .walk
    ld a, [hl]                  ; dir
    push hl
    call TileAhead
    pop hl
    cp TILE_WALL
    jr nz, .walk
    ld a, [hl]
    ld c, %00000011
    and c
    jr nz, .flip
    ld c, %00001100
.flip:
    ld a, [hl]
    xor c
    ld [hl], a
    ; the reverse way blocked too? then stand still this frame
    push hl
    dec hl
    ld c, [hl]
    dec hl
    ld b, [hl]
    call TileAhead
    pop hl
    cp TILE_WALL
    jr z, .done
.walk:
    pop hl
    push hl
    inc hl
    inc hl
    ld a, [hl-]
    dec hl
    ld b, 1
    call MoveActor
.done:
    pop hl
    ld de, 4
    add hl, de
    pop bc
    dec b
    jr nz, .next
    ret

; Carry set if any beetle touches the player.
CheckHit:
    ld a, [wNumHazards]
    and a                       ; no beetles: carry clear
    ret z
    ld b, a
    ld hl, wHazards
.next:
    ld a, [wPlayerX]
    sub [hl]
    jr nc, .absX
    cpl
    inc a
.absX:
    cp HIT_DISTANCE
    jr nc, .miss
    inc hl
    ld a, [wPlayerY]
    sub [hl]
    dec hl
    jr nc, .absY
    cpl
    inc a
.absY:
    cp HIT_DISTANCE
    ret c
.miss:
    ld de, 4
    add hl, de
    dec b
    jr nz, .next
    and a                       ; clear carry
    ret

; ---- fruit
; No fruit: count down, then try one random tile per frame until a floor
; tile (not the player's) is found. Fruit out: count down and remove it.
UpdateBonus:
    ld a, [wBonusX]
    and a
    jr nz, .present
    ld hl, wBonusTimer
    ld a, [hl]
    and a
    jr z, .try
    dec [hl]
    ret
.try:
    ld a, [wRng]
    and 31
    cp MAP_COLS
    ret nc
    ld b, a
    ld a, [wRng + 1]
    and 15
    ld c, a
    ; not under the player
    ld a, [wPlayerX]
    srl a
    srl a
    srl a
    cp b
    jr nz, .free
    ld a, [wPlayerY]
    srl a
    srl a
    srl a
    cp c
    ret z
.free:
    push bc
    map_addr b, c
    pop bc
    ld a, [hl]
    cp TILE_FLOOR
    ret nz
    ld [hl], TILE_BONUS
    ld a, b
    ld [wBonusX], a
    ld a, c
    ld [wBonusY], a
    ld a, BONUS_LIFE
    ld [wBonusTimer], a
    ld a, TILE_BONUS
    jp QueueTile
.present:
    ld hl, wBonusTimer
    dec [hl]
    ret nz
    ld a, BONUS_GAP
    ld [hl], a
    ld a, [wBonusX]
    ld b, a
    ld a, [wBonusY]
    ld c, a
    xor a
    ld [wBonusX], a
    map_addr b, c
    ld [hl], TILE_FLOOR
    ld a, TILE_FLOOR
    jp QueueTile

; ---- drawing (WRAM side)
; Shadow OAM: slot 0 the player, slots 1-4 the beetles, the rest hidden.
BuildSprites:
    ld hl, wShadowOAM
    ; player
    ld a, [wPlayerY]
    add a, 16
    ld [hl+], a
    ld a, [wPlayerX]
    add a, 8
    ld [hl+], a
    ; tile: side or up view, mouth open/closed every 4 frames while moving
    ld a, [wPlayerDir]
    and a
    ld c, 0                     ; animation phase
    jr z, .still
    ld a, [wFrameCount]
    and 4
    jr z, .still
    ld c, 1
.still:
    ld a, [wFacing]
    and DIR_UP | DIR_DOWN
    ld a, T_PLAYER_SIDE_A
    jr z, .side
    ld a, T_PLAYER_UP_A
.side:
    add a, c
    ld [hl+], a
    ; flips: left = X flip of the right view, down = Y flip of the up view
    ld a, [wFacing]
    ld b, 0
    cp DIR_LEFT
    jr nz, .notLeft
    ld b, OAM_XFLIP
.notLeft:
    cp DIR_DOWN
    jr nz, .notDown
    ld b, OAM_YFLIP
.notDown:
    ld a, b
    ld [hl+], a
    ; beetles
    ld a, [wNumHazards]
    and a
    jr z, .hideRest
    ld b, a
    ld de, wHazards
.beetle:
    ld a, [de]                  ; x
    inc de
    ld c, a
    ld a, [de]                  ; y
    inc de
    add a, 16
    ld [hl+], a
    ld a, c
    add a, 8
    ld [hl+], a
    ld a, [wFrameCount]
    and 8
    ld a, T_BEETLE_A
    jr z, .legs
    inc a
.legs:
    ld [hl+], a
    ld a, [de]                  ; dir -> flips
    inc de
    inc de
    ld c, OAM_PAL1
    cp DIR_LEFT
    jr nz, .bNotLeft
    ld c, OAM_PAL1 | OAM_XFLIP
.bNotLeft:
    cp DIR_UP
    jr nz, .bNotUp
    ld c, OAM_PAL1 | OAM_YFLIP
.bNotUp:
    ld a, c
    ld [hl+], a
    dec b
    jr nz, .beetle
.hideRest:                      ; hide the rest (Y = 0 is above the screen)
    ld a, l
.hide:
    cp OAM_ENTRIES * 4
    ret nc
    ld [hl], 0
    add a, 4
    ld l, a
    jr .hide

HideSprites:
    ld hl, wShadowOAM
    ld b, OAM_ENTRIES
    xor a
.loop:
    ld [hl+], a
    inc l
    inc l
    inc l
    dec b
    jr nz, .loop
    ret

; Fill the digits of the status rows from the game state.
BuildStatus:
    ; score: 4 BCD digits + a constant 0 (units of 10 points)
    ld hl, wStatus + 7
    ld a, [wScore + 1]
    call PutBcd
    ld a, [wScore]
    call PutBcd
    ; level (1-based), two decimal digits
    ld a, [wLevel]
    inc a
    ld hl, wStatus + 17
    call PutDecimal
    ld a, [wSeedsLeft]
    ld hl, wStatus1 + 12
    jp PutDecimal

PutBcd:                         ; two digits of BCD a at [hl+]
    ld b, a
    swap a
    and $0F
    add a, '0'
    ld [hl+], a
    ld a, b
    and $0F
    add a, '0'
    ld [hl+], a
    ret

PutDecimal:                     ; a (0-99) as two digits at [hl+]
    ld b, '0'
.tens:
    cp 10
    jr c, .ones
    sub 10
    inc b
    jr .tens
.ones:
    add a, '0'
    ld [hl], b
    inc hl
    ld [hl+], a
    ret

; ---- pseudo-random numbers
; xorshift16 with shifts (7, 9, 8): x ^= x << 7; x ^= x >> 9; x ^= x << 8.
RngNext:
    ld a, [wRng]
    ld l, a
    ld a, [wRng + 1]
    ld h, a
    ; x ^= x << 7: high gets (h << 7) | (l >> 1), low gets l << 7
    ld a, h
    rrca
    and $80
    ld b, a
    ld a, l
    srl a
    or b
    xor h
    ld h, a
    ld a, l
    rrca
    and $80
    xor l
    ld l, a
    ; x ^= x >> 9: low gets h >> 1
    ld a, h
    srl a
    xor l
    ld l, a
    ; x ^= x << 8: high gets l
    xor h
    ld h, a
    ld a, l
    ld [wRng], a
    ld a, h
    ld [wRng + 1], a
    or l
    ret nz
    inc a                       ; the all-zero state would repeat forever
    ld [wRng], a
    ret

; ============================================================== utilities
FillPages:                      ; b * 256 bytes at hl = a
    ld c, 0
.loop:
    call FillBytes
    dec b
    jr nz, .loop
    ret

FillBytes:                      ; c bytes at hl = a (c = 0: 256)
    ld [hl+], a
    dec c
    jr nz, FillBytes
    ret

MemCopy:                        ; bc bytes from hl to de
    ld a, [hl+]
    ld [de], a
    inc de
    dec bc
    ld a, b
    or c
    jr nz, MemCopy
    ret

; Font (ASCII $20-$5F) twice: tile = code (black on white) and code + $80
; (white on black), then the game tiles over their character codes.
LoadTiles:
    ld hl, FontGlyphs
    ld de, VRAM_TILES + $20 * 16
    ld bc, $40 * 8
.normal:
    ld a, [hl+]
    ld [de], a
    inc de
    ld [de], a                  ; both planes: colour 3
    inc de
    dec bc
    ld a, b
    or c
    jr nz, .normal
    ld hl, FontGlyphs
    ld de, VRAM_TILES + ($20 + INVERSE) * 16
    ld bc, $40 * 8
.inverse:
    ld a, [hl+]
    cpl
    ld [de], a
    inc de
    ld [de], a
    inc de
    dec bc
    ld a, b
    or c
    jr nz, .inverse
    ; sprite tiles 1-6 are stored in order
    ld hl, GfxPlayerSideA
    ld de, VRAM_TILES + T_PLAYER_SIDE_A * 16
    ld bc, 6 * 16
    call MemCopy
    ld hl, GfxWall
    ld de, VRAM_TILES + TILE_WALL * 16
    ld bc, 3 * 16               ; '#', '$', '%' are consecutive codes
    call MemCopy
    ld hl, GfxSeed
    ld de, VRAM_TILES + TILE_SEED * 16
    ld bc, 16
    call MemCopy
    ld hl, GfxFloor
    ld de, VRAM_TILES + TILE_FLOOR * 16
    ld bc, 16
    jp MemCopy

; ============================================================== data
; Screen shake offsets (SCX, SCY), indexed by the dying timer & 7.
ShakeTable:
    db 2, 0,   0, 2,   254, 0,   0, 254
    db 3, 1,   253, 255,   1, 3,   255, 253

;                  "01234567890123456789"
StatusTemplate:
    db " SCORE 00000  LV 01 "
    db " SEEDS LEFT 00      "

BannerClear:
    db "    LEVEL  CLEAR    "
    db "     WELL  DONE     "
BannerGameOver:
    db "     GAME  OVER     "
    db "    PRESS  START    "

; The level-select screen (format of a level's rows; the digit at
; SELECT_DIGIT is rewritten with the selection).
SelectScreen:
    db "####################"
    db "#                  #"
    db "#                  #"
    db "#   SELECT LEVEL   #"
    db "#                  #"
    db "#       < 1 >      #"
    db "#                  #"
    db "#  1-3  TRAINING   #"
    db "#  4-7  FULL GAME  #"
    db "#                  #"
    db "# RIGHT/UP    NEXT #"
    db "# LEFT/DOWN   BACK #"
    db "# START/A     PLAY #"
    db "#                  #"
    db "#                  #"
    db "####################"

    include "orchard_gfx.inc"
    include "orchard_levels.inc"
