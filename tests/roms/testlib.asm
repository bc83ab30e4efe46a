; testlib.asm - shared code for the project's subsystem test ROMs.
;
; Include it once, after the header directives.  It places the interrupt
; vectors ($40-$60, each jumping through a patchable hook in WRAM), `ret` at
; RST $38, the entry point at $0100 (`nop; jp main`), and the library at $0150;
; the including file continues after the library and must define `main`.
;
; Verdict convention (CONTRACTS.md): each failed check prints a line
; "FAIL <what> got XX exp YY\n" over serial (internal clock); `finish` prints
; "PASS\n" when nothing failed, writes $A5 (pass) / $5A (fail) to $C000 and
; stops with `ld b, b` then halt with IE=0.  Every byte sent is also appended
; to a WRAM log at $C010 (NUL-terminated) for oracles that cannot see serial.
;
; Timing harness (`timed_build` / `timed_run` / `measure`): the code under test
; is copied to WRAM behind a sled of NOPs; each run resets the system counter
; (DIV write), zeroes TIMA, enters the sled p NOPs early and reads a register
; (TIMA by default) right after the code.  With TAC=$05 TIMA counts every
; 4 M-cycles, so reading(p) = floor((X + p) / 4) for the unknown exact count X;
; the sum of readings for p = 0..3 is X itself (Hermite's identity), which
; gives exact M-cycle counts from a 4-M-cycle timer.

rP1     EQU $FF00
rSB     EQU $FF01
rSC     EQU $FF02
rDIV    EQU $FF04
rTIMA   EQU $FF05
rTMA    EQU $FF06
rTAC    EQU $FF07
rIF     EQU $FF0F
rNR50   EQU $FF24
rNR51   EQU $FF25
rNR52   EQU $FF26
rLCDC   EQU $FF40
rSTAT   EQU $FF41
rSCY    EQU $FF42
rSCX    EQU $FF43
rLY     EQU $FF44
rLYC    EQU $FF45
rDMA    EQU $FF46
rBGP    EQU $FF47
rOBP0   EQU $FF48
rOBP1   EQU $FF49
rWY     EQU $FF4A
rWX     EQU $FF4B
rIE     EQU $FFFF

RESULT      EQU $C000   ; $A5 pass / $5A fail
FAILS       EQU $C001   ; number of failed checks
LOG_PTR     EQU $C002   ; low byte of the next log slot ($C0xx)
SERIAL_LOG  EQU $C010   ; serial bytes, NUL-terminated, up to $C0FE
SCRATCH     EQU $C100   ; free for tests ($C100-$CFFF)
TIMED_BUF   EQU $D000   ; pre-code + prologue of the timed code
TIMED_SLED  EQU $D040   ; 8 NOPs
TIMED_INSTR EQU $D048   ; the code under test
READINGS    EQU $D100   ; timed_run results, one byte per run
TIMED_JP    EQU $D110   ; address of the prologue's jp operand (2 bytes)
IRQ_COUNT   EQU $D120   ; number of logged interrupts
IRQ_LOG     EQU $D121   ; vector index (0..4) of each logged interrupt
HOOKS       EQU $D1E0   ; 5 x 4 bytes: jp handler (VBlank, STAT, Timer, Serial, Joypad)
HOOK_VBLANK EQU HOOKS
HOOK_STAT   EQU HOOKS + 4
HOOK_TIMER  EQU HOOKS + 8
HOOK_SERIAL EQU HOOKS + 12
HOOK_JOYPAD EQU HOOKS + 16
STACK_TOP   EQU $E000

    org $0038
    ret                         ; rst $38 returns at once (instr_timing measures rst+ret)

    org $0040
    jp HOOK_VBLANK
    org $0048
    jp HOOK_STAT
    org $0050
    jp HOOK_TIMER
    org $0058
    jp HOOK_SERIAL
    org $0060
    jp HOOK_JOYPAD

    org $0100
    nop
    jp main

    org $0150

; lib_init: clear the verdict, the log and the interrupt log; point every hook
; at the default handler.  Call once after setting SP.  Clobbers all.
lib_init:
    xor a
    ld [RESULT], a
    ld [FAILS], a
    ld [IRQ_COUNT], a
    ld hl, SERIAL_LOG
    ld b, $F0
.clear:
    ld [hl+], a
    dec b
    jr nz, .clear
    ld a, low(SERIAL_LOG)
    ld [LOG_PTR], a
    ld hl, default_handlers
    ld de, HOOKS
    ld b, 5
.hook:
    ld a, $C3                   ; jp nn
    ld [de], a
    inc de
    ld a, l
    ld [de], a
    inc de
    ld a, h
    ld [de], a
    inc de
    inc de
    push bc
    ld bc, 5                    ; each default handler is 5 bytes
    add hl, bc
    pop bc
    dec b
    jr nz, .hook
    ret

; Default interrupt handlers: log the vector index and return with reti.
default_handlers:
    push af
    ld a, 0
    jr irq_record
    push af
    ld a, 1
    jr irq_record
    push af
    ld a, 2
    jr irq_record
    push af
    ld a, 3
    jr irq_record
    push af
    ld a, 4
    jr irq_record
; irq_record: append A to IRQ_LOG, then reti.  Expects AF pushed.
irq_record:
    push hl
    push af
    ld a, [IRQ_COUNT]
    ld l, a
    inc a
    ld [IRQ_COUNT], a
    ld h, high(IRQ_LOG)
    ld a, l
    add low(IRQ_LOG)
    ld l, a
    pop af
    ld [hl], a
    pop hl
    pop af
    reti

; set_hook: install `jp DE` in hook HL (HOOK_xxx).  Clobbers A, HL.
set_hook:
    ld a, $C3
    ld [hl+], a
    ld a, e
    ld [hl+], a
    ld [hl], d
    ret

; print_char: send A over serial (internal clock) and log it.  Waits for the
; transfer to finish (with a timeout, so a broken serial port cannot hang the
; ROM).  Preserves all registers except F.
print_char:
    push hl
    push bc
    ld c, a
    ld a, [LOG_PTR]
    cp $FE
    jr nc, .nolog
    ld l, a
    ld h, high(SERIAL_LOG)
    ld [hl], c
    inc a
    ld [LOG_PTR], a
.nolog:
    ld a, c
    ldh [rSB], a
    ld a, $81
    ldh [rSC], a
    ld b, 0                     ; 256 polls x 11 M-cycles > the 1024 of a transfer
.wait:
    ldh a, [rSC]
    bit 7, a
    jr z, .done
    dec b
    jr nz, .wait
.done:
    ld a, c
    pop bc
    pop hl
    ret

; print_str: send the NUL-terminated string at HL.  HL ends after the NUL.
print_str:
    ld a, [hl+]
    or a
    ret z
    call print_char
    jr print_str

; print_hex: send A as two upper-case hex digits.  Preserves A.
print_hex:
    push af
    swap a
    call .nibble
    pop af
    push af
    call .nibble
    pop af
    ret
.nibble:
    and $0F
    cp 10
    jr c, .digit
    add 'A' - '0' - 10
.digit:
    add '0'
    jp print_char

; expect: check A (got) == B (expected); else print "FAIL <HL string> got A
; exp B" and count the failure.  Preserves B, C, D, E.  Returns Z on success.
expect:
    cp b
    ret z
    push af
    push hl
    ld hl, str_fail
    call print_str
    pop hl
    call print_str
    ld hl, str_got
    call print_str
    pop af
    call print_hex
    ld hl, str_exp
    call print_str
    ld a, b
    call print_hex
    ld a, 10
    call print_char
    ld hl, FAILS
    inc [hl]
    or 1                        ; NZ
    ret

; fail_msg: print "FAIL <HL string>\n" and count the failure.
fail_msg:
    push hl
    ld hl, str_fail
    call print_str
    pop hl
    call print_str
    ld a, 10
    call print_char
    ld hl, FAILS
    inc [hl]
    ret

; finish: print PASS if nothing failed, set the $C000 marker, stop for good.
finish:
    di
    ld a, [FAILS]
    or a
    jr nz, .failed
    ld hl, str_pass
    call print_str
    ld a, $A5
    jr .mark
.failed:
    ld a, $5A
.mark:
    ld [RESULT], a
    xor a
    ldh [rIE], a
    ld b, b
.forever:
    halt
    nop
    jr .forever

; copy: copy C bytes from DE to HL (C may be 0).  DE, HL end after the data.
copy:
    ld a, c
    or a
    ret z
.loop:
    ld a, [de]
    inc de
    ld [hl+], a
    dec c
    jr nz, .loop
    ret

; lcd_off: wait for VBlank (LY >= 144), then switch the LCD off.  With the
; LCD already off it returns at once.
lcd_off:
    ldh a, [rLCDC]
    bit 7, a
    ret z
.wait:
    ldh a, [rLY]
    cp 144
    jr c, .wait
    xor a
    ldh [rLCDC], a
    ret

; timed_build: build the timed code from the template at DE:
;   db pre_len, pre...          ; run before the prologue (not timed)
;   db tima0, reg               ; TIMA start value, low byte of the register read
;   db len, code...             ; the code under test, placed at TIMED_INSTR
;   db post_len, post...        ; after the read (A holds the reading)
; Layout: TIMED_BUF: pre; ld a, tima0; ldh [DIV], a; ldh [TIMA], a; xor a;
; jp <entry>;  TIMED_SLED: 8 x nop;  TIMED_INSTR: code; ldh a, [reg]; post; ret.
; After the prologue A=0 and the flags are Z=1 N=0 H=0 C=0.
timed_build:
    ld hl, TIMED_SLED
    ld b, 8
    xor a
.sled:
    ld [hl+], a
    dec b
    jr nz, .sled
    ld hl, TIMED_BUF
    ld a, [de]
    inc de
    ld c, a
    call copy                   ; pre
    ld a, $3E                   ; ld a, tima0
    ld [hl+], a
    ld a, [de]
    inc de
    ld [hl+], a
    ld a, $E0                   ; ldh [DIV], a
    ld [hl+], a
    ld a, low(rDIV)
    ld [hl+], a
    ld a, $E0                   ; ldh [TIMA], a
    ld [hl+], a
    ld a, low(rTIMA)
    ld [hl+], a
    ld a, $AF                   ; xor a
    ld [hl+], a
    ld a, $C3                   ; jp TIMED_INSTR (patched per run)
    ld [hl+], a
    ld a, l
    ld [TIMED_JP], a
    ld a, h
    ld [TIMED_JP + 1], a
    ld a, low(TIMED_INSTR)
    ld [hl+], a
    ld a, high(TIMED_INSTR)
    ld [hl+], a
    ld a, [de]                  ; reg
    inc de
    ld b, a
    ld hl, TIMED_INSTR
    ld a, [de]
    inc de
    ld c, a
    call copy                   ; code under test
    ld a, $F0                   ; ldh a, [reg]
    ld [hl+], a
    ld a, b
    ld [hl+], a
    ld a, [de]
    inc de
    ld c, a
    call copy                   ; post
    ld a, $C9                   ; ret
    ld [hl], a
    ret

; timed_run: run the built code B times (1..8), entering p = 0..B-1 NOPs
; before the code; reading p goes to READINGS+p.  Returns HL = sum.
timed_run:
    ld c, 0
.run:
    ld a, [TIMED_JP]
    ld l, a
    ld a, [TIMED_JP + 1]
    ld h, a
    ld a, low(TIMED_INSTR)
    sub c
    ld [hl+], a
    ld a, high(TIMED_INSTR)
    sbc 0
    ld [hl], a
    push bc
    call TIMED_BUF
    pop bc
    ld hl, READINGS
    ld e, c
    ld d, 0
    add hl, de
    ld [hl], a
    inc c
    ld a, c
    cp b
    jr nz, .run
    ld hl, 0
    ld de, READINGS
.sum:
    ld a, [de]
    inc de
    add l
    ld l, a
    jr nc, .nc
    inc h
.nc:
    dec b
    jr nz, .sum
    ret

; measure: exact M-cycles from the DIV write to the read for template DE
; (TAC must be $05, interrupts off).  Returns HL.
measure:
    call timed_build
    ld b, 4
    jp timed_run

; wait_sixteenths: wait A/16 s of emulated time (A >= 1) with HALT on timer
; overflows (TAC=$04: 4096 Hz, TIMA wraps every 1/16 s).  IME must be 0;
; leaves IE=0, IF bit 2 clear, the timer stopped.
wait_sixteenths:
    ld c, a
    xor a
    ldh [rTMA], a
    ldh [rTIMA], a
    ldh [rDIV], a
    ld a, $04
    ldh [rTAC], a
    ldh [rIE], a
.tick:
    xor a
    ldh [rIF], a
    halt
    nop
    dec c
    jr nz, .tick
    xor a
    ldh [rIE], a
    ldh [rIF], a
    ldh [rTAC], a
    ret

str_pass: db "PASS\n", 0
str_fail: db "FAIL ", 0
str_got:  db " got ", 0
str_exp:  db " exp ", 0
