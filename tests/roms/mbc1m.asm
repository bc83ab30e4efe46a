; mbc1m.asm - MBC1M: a 1 MiB MBC1 multi-game cart, four 256 KiB sub-ROMs
; (Pan Docs: MBC1, "MBC1M 1 MiB Multi-Game Compilation Carts").  Bank N holds
; the tag N at offset $3FF0; banks $10, $20 and $30 start the other sub-ROMs
; with the Nintendo logo at $0104, which is how emulators tell the wiring
; apart ("a Nintendo copyright header in bank $10").
;   The 2-bit register ($4000-$5FFF, BANK2) drives ROM bank bits 4-5, not 5-6,
;   and only the low 4 bits of the 5-bit register ($2000-$3FFF, BANK1) are
;   wired, though its 0 -> 1 rule still looks at all 5 bits:
;     $4000-$7FFF = bank BANK2 << 4 | (BANK1 or 1 if BANK1 = 0) & $0F, in both modes;
;     BANK1 = $10 therefore maps bank BANK2 << 4 there.
;   Mode 1 ($6000 = 1) maps bank BANK2 << 4 at $0000-$3FFF (the game select);
;   mode 0 keeps bank 0 there.
; Each case runs from HRAM, since mode 1 can map bank 0 out.  A failed case
; prints e.g. "FAIL 4000 bank2 01 bank1 02 mode 00 got 22 exp 12" (the tag
; read at $4000 or $0000 after writing those registers).

    title "MBC1M"
    cart_type $01               ; MBC1
    rom_size $05                ; 1 MiB
    ram_size $00
    include "testlib.asm"

PROBE     EQU $FF80             ; HRAM copy of `probe`
NAMEBUF   EQU $C180             ; the case's name, built for the FAIL line
EXPECTED  EQU $C1C0             ; $4000 tag, $0000 tag the current case expects
GOT       EQU $C1C2             ; ... and what the probe read
RES_PTR   EQU $C1C4             ; next slot in RESULTS
RESULTS   EQU $C200             ; every case's ($4000 tag, $0000 tag), for oracles without serial

main:
    ld sp, STACK_TOP
    call lib_init
    di
    ld de, probe
    ld hl, PROBE
    ld c, probe_end - probe
    call copy
    ld a, low(RESULTS)
    ld [RES_PTR], a
    ld a, high(RESULTS)
    ld [RES_PTR + 1], a
    ld hl, cases
.next:
    ld a, [hl+]
    cp $FF
    jp z, finish
    ld b, a                     ; BANK2
    ld a, [hl+]
    ld c, a                     ; BANK1
    ld a, [hl+]
    ld d, a                     ; mode
    ld a, [hl+]
    ld [EXPECTED], a
    ld a, [hl+]
    ld [EXPECTED + 1], a
    push hl
    call PROBE                  ; -> A = [$7FF0], E = [$3FF0]; B, C, D kept
    ld [GOT], a
    ld a, e
    ld [GOT + 1], a
    ld a, [RES_PTR]
    ld l, a
    ld a, [RES_PTR + 1]
    ld h, a
    ld a, [GOT]
    ld [hl+], a
    ld [hl], e
    inc hl
    ld a, l
    ld [RES_PTR], a
    ld a, h
    ld [RES_PTR + 1], a
    ld a, '4'
    call case_name
    push bc
    ld a, [EXPECTED]
    ld b, a
    ld a, [GOT]
    ld hl, NAMEBUF
    call expect
    pop bc
    ld a, '0'
    call case_name
    ld a, [EXPECTED + 1]
    ld b, a
    ld a, [GOT + 1]
    ld hl, NAMEBUF
    call expect
    pop hl
    jr .next

; probe (runs in HRAM): BANK2 := B, BANK1 := C, mode := D; returns A = [$7FF0]
; and E = [$3FF0], then restores mode 0, BANK2 0, BANK1 1.
probe:
    ld a, b
    ld [$4000], a
    ld a, c
    ld [$2000], a
    ld a, d
    ld [$6000], a
    ld a, [$3FF0]
    ld e, a
    ld a, [$7FF0]
    ld l, a
    xor a
    ld [$6000], a
    ld [$4000], a
    inc a
    ld [$2000], a
    ld a, l
    ret
probe_end:

; case_name: NAMEBUF := "<A>000 bank2 B bank1 CC mode D" (A = "4" or "0").
; Preserves B, C, D.
case_name:
    ld hl, NAMEBUF
    ld [hl+], a
    ld a, '0'
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
    push de
    ld de, s_bank2
    call put_str
    ld a, b
    call put_hex
    ld de, s_bank1
    call put_str
    ld a, c
    call put_hex
    ld de, s_mode
    call put_str
    pop de
    ld a, d
    call put_hex
    xor a
    ld [hl], a
    ret

; put_str: copy the NUL-terminated string at DE to HL (without the NUL).
put_str:
    ld a, [de]
    inc de
    or a
    ret z
    ld [hl+], a
    jr put_str

; put_hex: write A as two hex digits at HL.
put_hex:
    push af
    swap a
    call .nibble
    pop af
.nibble:
    and $0F
    cp 10
    jr c, .digit
    add 'A' - '0' - 10
.digit:
    add '0'
    ld [hl+], a
    ret

s_bank2: db " bank2 ", 0
s_bank1: db " bank1 ", 0
s_mode:  db " mode ", 0

; BANK2, BANK1 (as written), mode, expected tag at $4000, at $0000
cases:
    db 0, $00, 0, $01, $00      ; 0 -> 1
    db 0, $05, 0, $05, $00
    db 0, $0F, 0, $0F, $00
    db 0, $1F, 0, $0F, $00      ; BANK1 bit 4 is not wired
    db 0, $10, 0, $00, $00      ; ... yet it stops the 0 -> 1 rule: bank 0 at $4000
    db 1, $02, 0, $12, $00      ; BANK2 on bits 4-5, in mode 0 too
    db 1, $00, 0, $11, $00
    db 1, $10, 0, $10, $00
    db 2, $1F, 0, $2F, $00
    db 3, $E5, 0, $35, $00      ; only 5 bits of BANK1 are kept
    db 0, $03, 1, $03, $00      ; mode 1: $0000 = bank BANK2 << 4 (the game select)
    db 1, $03, 1, $13, $10
    db 2, $1F, 1, $2F, $20
    db 3, $04, 1, $34, $30
    db 1, $10, 1, $10, $10
    db 2, $00, 1, $21, $20
    db 1, $00, 1, $11, $10
    db 3, $00, 1, $31, $30
    db $FF

    org $3FF0
    db 0

; The Nintendo logo at $0104 of each sub-ROM (bank $10, $20, $30).
MACRO logo
    bank \1
    org $4104
    db $CE, $ED, $66, $66, $CC, $0D, $00, $0B, $03, $73, $00, $83, $00, $0C, $00, $0D
    db $00, $08, $11, $1F, $88, $89, $00, $0E, $DC, $CC, $6E, $E6, $DD, $DD, $D9, $99
    db $BB, $BB, $67, $63, $6E, $0E, $EC, $CC, $DD, $DC, $99, $9F, $BB, $B9, $33, $3E
ENDM
    logo $10
    logo $20
    logo $30

N = 1
    rept 63
    bank N
    org $7FF0
    db N
N = N + 1
    endr
