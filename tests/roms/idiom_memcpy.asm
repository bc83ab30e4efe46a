; idiom_memcpy.asm - long copy and decompression loops through HL (a benchmark
; idiom ROM).
;
; Games spend whole frames in byte loops: unpacking compressed maps or
; graphics, copying buffers around. Every frame here, an RLE stream (pairs
; of count, value) is unpacked from ROM into a 768-byte WRAM buffer, 384
; bytes of it are copied to a second buffer with the usual
; `ld a, [de]; ld [hl+], a; inc de; dec bc; ld a, b; or c; jr nz` loop, and
; in VBlank (HALT) 20 bytes of that go to one map row.
;
; The game: the d-pad picks which of four streams is unpacked and where in
; the buffer the copy starts; A makes the map row written jump ahead.

    title "IDIOM MEMCPY"
    include "idiom_lib.inc"

wRow        EQU $C100
wStream     EQU $C101
wUnpacked   EQU $C200           ; 768 bytes
wCopy       EQU $C500           ; 384 bytes

main:
    ld sp, STACK_TOP
    call init
    ld a, LCDC_ON
    ldh [rLCDC], a
    ld a, $01
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
.frame:
    call delay_frame
    call read_pad
    ld a, [wJoy]                ; stream = d-pad bits 4-5
    swap a
    and $03
    ld [wStream], a
    ld a, [wJoyNew]
    and PAD_A
    jr z, .no_jump
    ld a, [wRow]
    add 5
    ld [wRow], a
.no_jump:
    call unpack
    ld a, [wJoy]                ; copy from wUnpacked + 32 * (the Up/Down bits)
    and $C0
    rrca
    ld e, a
    ld d, high(wUnpacked)
    ld hl, wCopy
    ld bc, 384
    call memcpy
    ld hl, wFrame
    inc [hl]
    jr .frame

delay_frame:
    xor a
    ld [wVBlankDone], a
.halt:
    halt
    nop
    ld a, [wVBlankDone]
    or a
    jr z, .halt
    ret

; unpack: RLE stream wStream (count, value pairs; count 0 ends) -> wUnpacked,
; at most 768 bytes.
unpack:
    ld a, [wStream]
    add a
    ld c, a
    ld b, 0
    ld hl, stream_table
    add hl, bc
    ld a, [hl+]
    ld h, [hl]
    ld l, a
    ld de, wUnpacked
.pair:
    ld a, [hl+]                 ; count
    or a
    ret z
    ld b, a
    ld a, [hl+]                 ; value
.run:
    ld [de], a
    inc de
    dec b
    jr nz, .run
    jr .pair

vblank_isr:
    push af
    push bc
    push de
    push hl
    ld a, [wRow]                ; map row (wRow & 15): 20 bytes of wCopy, as tiles 0-7
    and $0F
    ld l, a
    ld h, 0
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    ld bc, BG_MAP
    add hl, bc
    ld a, [wFrame]
    and $3F
    ld e, a
    ld d, high(wCopy)
    ld b, 20
.copy:
    ld a, [de]
    and $07
    ld [hl+], a
    inc de
    dec b
    jr nz, .copy
    ld hl, wRow
    inc [hl]
    ld a, 1
    ld [wVBlankDone], a
    pop hl
    pop de
    pop bc
    pop af
    reti

stat_isr:
timer_isr:
    reti

stream_table:
    dw stream0, stream1, stream2, stream3

; Four streams of 768 bytes each: 96 runs of 8, of 3 and 13, of 1 and 15,
; of 6 and 2 (values vary by run).
stream0:
    rept 96
    db 8, (@ * 7) & $FF
    endr
    db 0
stream1:
    rept 48
    db 3, (@ * 5) & $FF
    db 13, (@ * 3) & $FF
    endr
    db 0
stream2:
    rept 48
    db 1, (@ * 11) & $FF
    db 15, (@ * 13) & $FF
    endr
    db 0
stream3:
    rept 96
    db 6, (@ * 3) & $FF
    db 2, (@ * 9) & $FF
    endr
    db 0
