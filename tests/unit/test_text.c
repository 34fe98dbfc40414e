// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/text.c: names sanitised for a terminal, one rule for every tool. */
#include <stdlib.h>
#include "t.h"
#include "text.h"

/* text_put_safe of all of s, as a string */
static const char *put(const char *s, size_t n)
{
	struct t_mem m;

	text_put_safe(t_mem_open(&m), s, n);
	return t_mem_str(&m);
}

static const char *safe(const char *s)
{
	static char buf[64];

	return text_safe(buf, sizeof(buf), s);
}

static void test_utf8_len(void)
{
	CHECK_EQ(text_utf8_len((const unsigned char *)"a", 1), 1);
	CHECK_EQ(text_utf8_len((const unsigned char *)"\xc3\xa9", 2), 2);
	CHECK_EQ(text_utf8_len((const unsigned char *)"\xe2\x82\xac", 3), 3);
	CHECK_EQ(text_utf8_len((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
	CHECK_EQ(text_utf8_len((const unsigned char *)"\xe2\x82\xac", 2), 0);	/* cut short */
	CHECK_EQ(text_utf8_len((const unsigned char *)"\xc0\xaf", 2), 0);	/* overlong */
	CHECK_EQ(text_utf8_len((const unsigned char *)"\xe0\x80\xaf", 3), 0);	/* overlong */
	CHECK_EQ(text_utf8_len((const unsigned char *)"\xed\xa0\x80", 3), 0);	/* surrogate */
	CHECK_EQ(text_utf8_len((const unsigned char *)"\xf4\x90\x80\x80", 4), 0); /* > U+10FFFF */
	CHECK_EQ(text_utf8_len((const unsigned char *)"\x9b", 1), 0);		/* lone C1 byte */
	CHECK_EQ(text_utf8_len((const unsigned char *)"\xc3(", 2), 0);
}

static void test_controls(void)
{
	CHECK_STR(put("a\nb\tc\rd\x1b[2J\x7f", 12), "a?b?c?d?[2J?");
	/* raw C1 bytes (CSI, NEL) and their UTF-8 forms U+009B, U+0085 */
	CHECK_STR(put("x\x9b" "1m\x85y", 6), "x?1m?y");
	CHECK_STR(put("x\xc2\x9b" "1m\xc2\x85y", 8), "x??1m??y");
	/* U+00A0 and above are text */
	CHECK_STR(put("\xc2\xa0\xc3\xa9", 4), "\xc2\xa0\xc3\xa9");
}

static void test_invalid_utf8(void)
{
	/* one '?' per byte that starts no sequence */
	CHECK_STR(put("a\xff\xfe" "b", 4), "a??b");
	CHECK_STR(put("\xc0\xaf", 2), "??");
	CHECK_STR(put("\xed\xa0\x80", 3), "???");
	CHECK_STR(put("\xe2\x82" "a", 3), "??a");
	/* a valid sequence cut by n is not shown in part */
	CHECK_STR(put("ab\xe2\x82\xac", 4), "ab??");
	CHECK_STR(put("caf\xc3\xa9 \xf0\x9f\x98\x80", 10), "caf\xc3\xa9 \xf0\x9f\x98\x80");
}

static void test_same_length(void)
{
	const char *s = "\x01\xc3\xa9\xff\xc2\x9b\xe2\x82\xac\n";

	/* widths are counted in bytes: the output has as many as the input */
	CHECK_EQ(strlen(put(s, strlen(s))), strlen(s));
}

static void test_safe_copy(void)
{
	char small[5];

	CHECK_STR(safe("evil\ncomm\x1b]0;x\x07"), "evil?comm?]0;x?");
	CHECK_STR(safe(""), "");
	/* cut at a sequence's end: "ab" + the 2-byte e-acute fits 4 + NUL,
	 * the euro sign after it does not */
	CHECK_STR(text_safe(small, sizeof(small), "ab\xc3\xa9\xe2\x82\xac"), "ab\xc3\xa9");
	CHECK_STR(text_safe(small, sizeof(small), "abc\xe2\x82\xac"), "abc");
	CHECK_STR(text_safe(small, sizeof(small), "\n\n\n\n\n\n"), "????");
}

int main(void)
{
	RUN(test_utf8_len);
	RUN(test_controls);
	RUN(test_invalid_utf8);
	RUN(test_same_length);
	RUN(test_safe_copy);
	return t_done();
}
