// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <string.h>
#include "text.h"

int text_utf8_len(const unsigned char *s, size_t n)
{
	int len = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 :
		  s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;

	if ((size_t)len > n)
		return 0;	/* cut short */
	for (int i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((len == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (len == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
	    (len == 4 && s[0] == 0xf0 && s[1] < 0x90) || (len == 4 && s[0] == 0xf4 && s[1] >= 0x90))
		return 0;	/* overlong, surrogate, beyond U+10FFFF */
	return len;
}

/* A control character: C0, DEL, or C1 in its UTF-8 form (U+0080-U+009F,
 * which terminals may act on like the raw bytes 0x80-0x9f). */
static bool is_control(const unsigned char *s, int len)
{
	if (len == 1)
		return s[0] < 0x20 || s[0] == 0x7f;
	return len == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

/* The bytes to show for the sequence at s: its own (*len of them), or
 * "?" for each byte when it is a control or not UTF-8. */
static const char *shown(const char *s, size_t n, int *len)
{
	const unsigned char *u = (const unsigned char *)s;
	int l = text_utf8_len(u, n);

	if (!l || is_control(u, l)) {
		*len = l ? l : 1;
		return NULL;
	}
	*len = l;
	return s;
}

void text_put_safe(FILE *f, const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		int len;
		const char *p = shown(s + i, n - i, &len);

		if (p)
			fwrite(p, 1, len, f);
		else
			for (int k = 0; k < len; k++)
				fputc('?', f);
		i += len;
	}
}

char *text_safe(char *buf, size_t len, const char *s)
{
	size_t n = strlen(s), i = 0, o = 0;

	if (!len)
		return buf;
	while (i < n) {
		int l;
		const char *p = shown(s + i, n - i, &l);

		if (o + l >= len)
			break;
		if (p)
			memcpy(buf + o, p, l);
		else
			memset(buf + o, '?', l);
		o += l;
		i += l;
	}
	buf[o] = '\0';
	return buf;
}
