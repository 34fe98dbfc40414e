/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Names from the kernel or from other users (comm, paths, channel and
 * cgroup names, symbols) shown on a terminal: one rule for every tool.
 * Valid UTF-8 passes; a C0 control byte, DEL, a C1 control (the raw byte
 * 0x80-0x9f or its UTF-8 form U+0080-U+009F) and each byte that starts no
 * valid UTF-8 sequence (overlong, surrogate, beyond U+10FFFF, cut short)
 * become '?', one per byte. A hostile comm can then neither split a line
 * nor move the cursor nor reach the terminal as an escape, and every
 * byte shown is valid UTF-8. JSON needs none of this: lib/json escapes.
 */
#ifndef AISCOPE_TEXT_H
#define AISCOPE_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* The length (2-4) of the valid multi-byte UTF-8 sequence at s within n
 * bytes, 1 for a plain ASCII byte, 0 when the byte at s starts none. */
int text_utf8_len(const unsigned char *s, size_t n);

/* Writes the first n bytes of s to f, sanitised (one output byte or one
 * whole sequence per input byte or sequence: as many bytes as it reads). */
void text_put_safe(FILE *f, const char *s, size_t n);

/* s sanitised into buf (len bytes, NUL-terminated, cut at a sequence's
 * end when it does not fit); returns buf. */
char *text_safe(char *buf, size_t len, const char *s);

#endif
