// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/prom.c and lib/prom_http.c: names, escapes, the exposition text,
 * histogram buckets against a brute-force count, the cardinality cap and
 * idle eviction, the atomic file writer, and the HTTP server driven
 * through epoll with well-behaved, malformed, slow and greedy clients. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "t.h"
#include "prom.h"

static char *render(struct prom_reg *r)
{
	size_t len;
	char *s = prom_render(r, &len);

	return s ? s : strdup("");
}

static char *escaped(void (*fn)(FILE *, const char *), const char *in)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	fn(f, in);
	fclose(f);
	return buf;
}

static void test_names(void)
{
	CHECK(prom_valid_metric_name("aiscope_schedlat_runs_total"));
	CHECK(prom_valid_metric_name("a:b_c9"));
	CHECK(!prom_valid_metric_name("9abc"));
	CHECK(!prom_valid_metric_name("a-b"));
	CHECK(!prom_valid_metric_name(""));
	CHECK(!prom_valid_metric_name(NULL));
	CHECK(prom_valid_label_name("container_id"));
	CHECK(!prom_valid_label_name("a:b"));
	CHECK(!prom_valid_label_name("__name__"));
	CHECK(!prom_valid_label_name("1x"));
}

static void test_escapes(void)
{
	char *s;

	s = escaped(prom_write_label_value, "a\\b\"c\nd");
	CHECK_STR(s, "a\\\\b\\\"c\\nd");
	free(s);
	/* HELP keeps quotes as they are */
	s = escaped(prom_write_help, "say \"hi\"\\\nnext");
	CHECK_STR(s, "say \"hi\"\\\\\\nnext");
	free(s);
	/* invalid UTF-8 (a lone continuation byte, a truncated sequence) */
	s = escaped(prom_write_label_value, "x\x80y\xE2\x82");
	CHECK_STR(s, "x\xEF\xBF\xBDy\xEF\xBF\xBD\xEF\xBF\xBD");
	free(s);
	s = escaped(prom_write_label_value, "/sys/fs/cgroup/\xC3\xA9t\xC3\xA9");
	CHECK_STR(s, "/sys/fs/cgroup/\xC3\xA9t\xC3\xA9");
	free(s);
}

static void test_fmt_scaled(void)
{
	char b[48];

	prom_fmt_scaled(b, sizeof(b), 1023, 9);
	CHECK_STR(b, "0.000001023");
	prom_fmt_scaled(b, sizeof(b), 1500000000, 9);
	CHECK_STR(b, "1.5");
	prom_fmt_scaled(b, sizeof(b), 2000000000, 9);
	CHECK_STR(b, "2");
	prom_fmt_scaled(b, sizeof(b), 0, 9);
	CHECK_STR(b, "0");
	prom_fmt_scaled(b, sizeof(b), 68719476735ULL, 9);
	CHECK_STR(b, "68.719476735");
	prom_fmt_scaled(b, sizeof(b), 4096, 0);
	CHECK_STR(b, "4096");
	prom_fmt_scaled(b, sizeof(b), UINT64_MAX, 9);
	CHECK_STR(b, "18446744073.709551615");
}

static void test_registration_errors(void)
{
	struct prom_reg *r = prom_reg_new();
	static const char *const dup[] = { "a", "a", NULL };
	static const char *const le[] = { "le", NULL };
	static const char *const ovf[] = { "overflow", NULL };
	static const char *const bad[] = { "a-b", NULL };
	/* one more than PROM_MAX_LABELS */
	static const char *const many[] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k",
					     "l", "m", "n", "o", NULL };
	static const char *const most[] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k",
					     "l", "m", "n", NULL };
	uint64_t ok[] = { 1023, 2047 }, unsorted[] = { 2047, 1023 }, notmax[] = { 1000 };
	uint64_t last[] = { UINT64_MAX - 1 };

	CHECK(prom_counter(r, "x_total", "x", NULL) != NULL);
	CHECK(prom_counter(r, "x_total", "again", NULL) == NULL);	/* same name */
	CHECK(prom_counter(r, "y_total", "y", dup) == NULL);
	CHECK(prom_counter(r, "y_total", "y", le) == NULL);
	CHECK(prom_counter(r, "y_total", "y", ovf) == NULL);
	CHECK(prom_counter(r, "y_total", "y", bad) == NULL);
	CHECK(prom_counter(r, "y_total", "y", many) == NULL);
	CHECK(prom_counter(r, "most_total", "y", most) != NULL);
	CHECK(prom_gauge(r, "bad name", "y", NULL) == NULL);
	CHECK(prom_counter_scaled(r, "s_seconds_total", "s", NULL, 19) == NULL);
	CHECK(prom_histogram(r, "h_seconds", "h", NULL, ok, 2, 9) != NULL);
	CHECK(prom_histogram(r, "h2_seconds", "h", NULL, unsorted, 2, 9) == NULL);
	CHECK(prom_histogram(r, "h3_seconds", "h", NULL, notmax, 1, 9) == NULL);
	CHECK(prom_histogram(r, "h4_seconds", "h", NULL, last, 1, 9) == NULL);
	CHECK(prom_histogram(r, "h5_seconds", "h", NULL, ok, 0, 9) == NULL);
	prom_reg_free(r);
}

/* a counter fed in ns is written in seconds, exactly */
static void test_counter_scaled(void)
{
	struct prom_reg *r = prom_reg_new();
	static const char *const lbl[] = { "node", NULL };
	struct prom_family *c = prom_counter_scaled(r, "aiscope_t_cpu_seconds_total", "CPU.", lbl, 9);
	char *s;

	CHECK(c != NULL);
	prom_counter_add(c, (const char *[]){ "0" }, 1500000000);
	prom_counter_add(c, (const char *[]){ "0" }, 1);
	prom_counter_add(c, (const char *[]){ "1" }, 3000000000);
	s = render(r);
	CHECK(strstr(s, "# TYPE aiscope_t_cpu_seconds_total counter\n") != NULL);
	CHECK(strstr(s, "aiscope_t_cpu_seconds_total{node=\"0\"} 1.500000001\n") != NULL);
	CHECK(strstr(s, "aiscope_t_cpu_seconds_total{node=\"1\"} 3\n") != NULL);
	free(s);
	prom_reg_free(r);
}

/* an empty label name: a slot the family leaves out, its value unread */
static void test_slots_left_out(void)
{
	struct prom_reg *r = prom_reg_new();
	static const char *const lbl[] = { "cgroup", "", "model", "", "kind", NULL };
	static const char *const dup[] = { "a", "", "a", NULL };
	struct prom_family *c = prom_counter(r, "aiscope_t_slots_total", "Slots.", lbl);
	char *s;

	CHECK(c != NULL);
	CHECK(prom_counter(r, "aiscope_t_dup_total", "Dup.", dup) == NULL);
	prom_counter_add(c, (const char *[]){ "/a", "x", "llama", "y", "hit" }, 2);
	/* other values in the slots left out: the same series */
	prom_counter_add(c, (const char *[]){ "/a", "other", "llama", NULL, "hit" }, 3);
	prom_counter_add(c, (const char *[]){ "/a", "x", "", "y", "miss" }, 1);
	s = render(r);
	CHECK_STR(s,
		"# HELP aiscope_t_slots_total Slots.\n"
		"# TYPE aiscope_t_slots_total counter\n"
		"aiscope_t_slots_total{cgroup=\"/a\",model=\"llama\",kind=\"hit\"} 5\n"
		"aiscope_t_slots_total{cgroup=\"/a\",model=\"\",kind=\"miss\"} 1\n");
	free(s);
	prom_reg_free(r);
}

static void test_exposition_text(void)
{
	struct prom_reg *r = prom_reg_new();
	static const char *const lbl[] = { "cgroup", "kind", NULL };
	struct prom_family *c, *g, *plain;
	char *s;

	c = prom_counter(r, "aiscope_t_ops_total", "Ops done.\nSecond line.", lbl);
	g = prom_gauge(r, "aiscope_t_ratio", "A \\ ratio.", NULL);
	plain = prom_counter(r, "aiscope_t_empty_total", "Nothing yet.", NULL);
	CHECK(c && g && plain);
	prom_counter_add(c, (const char *[]){ "/a\"b", "hit" }, 3);
	prom_counter_add(c, (const char *[]){ "/a\"b", "hit" }, 4);
	prom_counter_add(c, (const char *[]){ NULL, "miss" }, 1);
	prom_counter_set(c, (const char *[]){ "/z", "hit" }, 9);
	prom_gauge_set(g, NULL, 0.25);
	prom_gauge_set(g, NULL, 0.5);
	prom_gauge_set(g, (const char *[]){ "ignored" }, 0.5);	/* no labels: same series */
	s = render(r);
	CHECK_STR(s,
		"# HELP aiscope_t_ops_total Ops done.\\nSecond line.\n"
		"# TYPE aiscope_t_ops_total counter\n"
		"aiscope_t_ops_total{cgroup=\"/a\\\"b\",kind=\"hit\"} 7\n"
		"aiscope_t_ops_total{cgroup=\"\",kind=\"miss\"} 1\n"
		"aiscope_t_ops_total{cgroup=\"/z\",kind=\"hit\"} 9\n"
		"# HELP aiscope_t_ratio A \\\\ ratio.\n"
		"# TYPE aiscope_t_ratio gauge\n"
		"aiscope_t_ratio 0.5\n"
		"# HELP aiscope_t_empty_total Nothing yet.\n"
		"# TYPE aiscope_t_empty_total counter\n");
	free(s);
	/* wrong-type updates are ignored */
	prom_gauge_set(c, (const char *[]){ "/a\"b", "hit" }, 1);
	prom_counter_add(g, NULL, 1);
	CHECK_EQ(prom_series_count(c), 3);
	CHECK_EQ(prom_series_count(g), 1);
	prom_reg_free(r);
}

static uint64_t lcg_state = 0x9E3779B97F4A7C15ULL;

static uint64_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return lcg_state >> 11;
}

/* the value of the sample line that starts with prefix */
static long long sample(const char *text, const char *prefix)
{
	const char *p = text;
	size_t n = strlen(prefix);

	while ((p = strstr(p, prefix))) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return atoll(p + n + 1);
		p += n;
	}
	return -1;
}

/* the label of the families below: one series a cgroup */
static const char *const cgroup_lbl[] = { "cgroup", NULL };

static void test_histogram_exact(void)
{
	struct prom_reg *r = prom_reg_new();
	uint64_t bounds[PROM_MAX_BOUNDS], *vals, sum = 0;
	int nb = prom_log2_bounds(bounds, PROM_MAX_BOUNDS, 10, 36), bad = 0;
	struct prom_family *f;
	static struct hist h, h2;
	const int N = 20000;
	char *s, key[160], le[48];

	CHECK_EQ(nb, 27);
	CHECK_EQ(bounds[0], 1023);
	CHECK_EQ(bounds[26], (1ULL << 36) - 1);
	f = prom_histogram(r, "aiscope_t_wait_seconds", "Waits.", cgroup_lbl, bounds, nb, 9);
	CHECK(f != NULL);
	vals = calloc(N, sizeof(*vals));
	hist_reset(&h);
	for (int i = 0; i < N; i++) {
		/* log-uniform from 1 ns to about 2^40 ns, past the last bound */
		unsigned int e = lcg() % 41;

		vals[i] = (1ULL << e) + lcg() % (1ULL << e);
		/* the bounds themselves and one above them */
		if (i % 97 == 0)
			vals[i] = bounds[i % nb] + (i % 2);
		hist_add_value(&h, vals[i]);
		sum += vals[i];
	}
	/* fed in two parts: cumulative across intervals */
	hist_reset(&h2);
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		h2.counts[i] = h.counts[i] / 3;
		h2.total += h2.counts[i];
		h.counts[i] -= h2.counts[i];
	}
	prom_hist_add(f, (const char *[]){ "/g" }, &h2);
	h.sum = sum;
	h.total = N;
	for (unsigned int i = 0; i < HIST_BUCKETS; i++)
		h.total -= h2.counts[i];
	prom_hist_add(f, (const char *[]){ "/g" }, &h);
	s = render(r);
	for (int b = 0; b < nb; b++) {
		long long truth = 0;

		for (int i = 0; i < N; i++)
			truth += vals[i] <= bounds[b];
		prom_fmt_scaled(le, sizeof(le), bounds[b], 9);
		snprintf(key, sizeof(key), "aiscope_t_wait_seconds_bucket{cgroup=\"/g\",le=\"%s\"}", le);
		if (sample(s, key) != truth) {
			printf("# %s: %lld, expected %lld\n", key, sample(s, key), truth);
			bad++;
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(sample(s, "aiscope_t_wait_seconds_bucket{cgroup=\"/g\",le=\"+Inf\"}"), N);
	CHECK_EQ(sample(s, "aiscope_t_wait_seconds_count{cgroup=\"/g\"}"), N);
	prom_fmt_scaled(le, sizeof(le), sum, 9);
	snprintf(key, sizeof(key), "aiscope_t_wait_seconds_sum{cgroup=\"/g\"} %s\n", le);
	CHECK(strstr(s, key) != NULL);
	CHECK(strstr(s, "# TYPE aiscope_t_wait_seconds histogram\n") != NULL);
	free(s);
	free(vals);
	prom_reg_free(r);
}

static void test_cardinality_cap(void)
{
	struct prom_reg *r = prom_reg_new();
	struct prom_family *c = prom_counter(r, "aiscope_t_x_total", "X.", cgroup_lbl);
	char name[16], *s;

	prom_set_max_series(c, 3);
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "/c%d", i);
		prom_counter_add(c, (const char *[]){ name }, 10 + i);
	}
	/* an existing series still counts on its own */
	prom_counter_add(c, (const char *[]){ "/c0" }, 100);
	CHECK_EQ(prom_series_count(c), 4);
	s = render(r);
	CHECK_EQ(sample(s, "aiscope_t_x_total{cgroup=\"/c0\"}"), 110);
	CHECK_EQ(sample(s, "aiscope_t_x_total{cgroup=\"/c2\"}"), 12);
	CHECK_EQ(sample(s, "aiscope_t_x_total{cgroup=\"/c3\"}"), -1);
	CHECK_EQ(sample(s, "aiscope_t_x_total{cgroup=\"\",overflow=\"true\"}"), 13 + 14);
	free(s);
	/* counted: /c3 and /c4 went to overflow, /c0 did not */
	CHECK_EQ(prom_family_folded(c), 2);
	prom_counter_add(c, (const char *[]){ "/c4" }, 1);
	CHECK_EQ(prom_family_folded(c), 3);
	{
		struct prom_family *g = prom_gauge(r, "aiscope_t_g", "G.", cgroup_lbl);
		const char *name;

		prom_gauge_set(g, (const char *[]){ "/a" }, 1);
		CHECK_EQ(prom_family_folded(g), 0);
		CHECK_EQ(prom_reg_folded(r, &name), 3);
		CHECK_STR(name, "aiscope_t_x_total");
		prom_set_max_series(g, 1);
		prom_gauge_set(g, (const char *[]){ "/b" }, 1);
		CHECK_EQ(prom_reg_folded(r, NULL), 4);
		/* a clear drops the series, not the count */
		prom_family_clear(c);
		CHECK_EQ(prom_reg_folded(r, &name), 4);
	}
	prom_reg_free(r);
}

static void test_family_clear(void)
{
	struct prom_reg *r = prom_reg_new();
	struct prom_family *g = prom_gauge(r, "aiscope_t_usage_bytes", "U.", cgroup_lbl);
	struct prom_family *c = prom_counter(r, "aiscope_t_events_total", "E.", cgroup_lbl);
	char *s;

	prom_set_max_series(c, 1);
	prom_gauge_set(g, (const char *[]){ "/a" }, 1);
	prom_gauge_set(g, (const char *[]){ "/b" }, 2);
	prom_counter_set(c, (const char *[]){ "/a" }, 5);
	prom_counter_set(c, (const char *[]){ "/b" }, 7);	/* to the overflow series */
	CHECK_EQ(prom_series_count(c), 2);
	/* the next interval: /a is gone */
	prom_family_clear(g);
	prom_family_clear(c);
	CHECK_EQ(prom_series_count(g), 0);
	CHECK_EQ(prom_series_count(c), 0);
	prom_gauge_set(g, (const char *[]){ "/b" }, 3);
	prom_counter_set(c, (const char *[]){ "/b" }, 8);
	s = render(r);
	CHECK_EQ(sample(s, "aiscope_t_usage_bytes{cgroup=\"/a\"}"), -1);
	CHECK_EQ(sample(s, "aiscope_t_usage_bytes{cgroup=\"/b\"}"), 3);
	CHECK_EQ(sample(s, "aiscope_t_events_total{cgroup=\"/b\"}"), 8);
	/* the overflow series was cleared too: it does not add up over intervals */
	CHECK_EQ(sample(s, "aiscope_t_events_total{cgroup=\"\",overflow=\"true\"}"), -1);
	/* a family without series keeps its HELP and TYPE */
	CHECK(strstr(s, "# TYPE aiscope_t_usage_bytes gauge\n") != NULL);
	free(s);
	prom_family_clear(NULL);
	prom_reg_free(r);
}

static void test_idle_eviction(void)
{
	struct prom_reg *r = prom_reg_new();
	struct prom_family *c = prom_counter(r, "aiscope_t_y_total", "Y.", cgroup_lbl);
	char *s;

	prom_set_max_series(c, 2);
	prom_reg_set_idle(r, 100);
	prom_reg_set_time(r, 1000);
	prom_counter_add(c, (const char *[]){ "/old" }, 1);
	prom_reg_set_time(r, 1050);
	prom_counter_add(c, (const char *[]){ "/busy" }, 1);
	/* /old idle for 60 < 100: no room yet */
	prom_reg_set_time(r, 1060);
	prom_counter_add(c, (const char *[]){ "/new" }, 5);
	s = render(r);
	CHECK_EQ(sample(s, "aiscope_t_y_total{cgroup=\"\",overflow=\"true\"}"), 5);
	free(s);
	/* /old idle for 150: /new2 takes its place, /busy stays */
	prom_reg_set_time(r, 1150);
	prom_counter_add(c, (const char *[]){ "/new2" }, 7);
	s = render(r);
	CHECK_EQ(sample(s, "aiscope_t_y_total{cgroup=\"/old\"}"), -1);
	CHECK_EQ(sample(s, "aiscope_t_y_total{cgroup=\"/busy\"}"), 1);
	CHECK_EQ(sample(s, "aiscope_t_y_total{cgroup=\"/new2\"}"), 7);
	free(s);
	prom_reg_free(r);
}

/* Thousands of label sets through the hash index: each found again (not
 * duplicated), after growth, an eviction that shifts the list, and a clear. */
static void test_many_series(void)
{
	struct prom_reg *r = prom_reg_new();
	static const char *const lbl[] = { "cgroup", "kind", NULL };
	struct prom_family *c = prom_counter(r, "aiscope_t_many_total", "M.", lbl);
	char name[32], *s;
	bool all = true;

	prom_set_max_series(c, 5000);
	prom_reg_set_idle(r, 100);
	prom_reg_set_time(r, 1000);
	for (int round = 1; round <= 3; round++)
		for (int i = 0; i < 5000; i++) {
			snprintf(name, sizeof(name), "/c%d", i);
			prom_counter_add(c, (const char *[]){ name, i & 1 ? "a" : "b" }, i);
		}
	CHECK_EQ(prom_series_count(c), 5000);
	/* same cgroup, other kind: a series of its own, to the overflow one */
	prom_counter_add(c, (const char *[]){ "/c0", "a" }, 1);
	CHECK_EQ(prom_series_count(c), 5001);
	/* /c7 idle, the others touched: a new label set evicts /c7 alone */
	prom_reg_set_time(r, 1200);
	for (int i = 0; i < 5000; i++) {
		if (i == 7)
			continue;
		snprintf(name, sizeof(name), "/c%d", i);
		prom_counter_add(c, (const char *[]){ name, i & 1 ? "a" : "b" }, 0);
	}
	prom_counter_add(c, (const char *[]){ "/new", "a" }, 9);
	s = render(r);
	CHECK_EQ(sample(s, "aiscope_t_many_total{cgroup=\"/c7\",kind=\"a\"}"), -1);
	CHECK_EQ(sample(s, "aiscope_t_many_total{cgroup=\"/new\",kind=\"a\"}"), 9);
	CHECK_EQ(sample(s, "aiscope_t_many_total{cgroup=\"\",kind=\"\",overflow=\"true\"}"), 1);
	for (int i = 0; i < 5000; i++) {
		char key[96];

		if (i == 7)
			continue;
		snprintf(key, sizeof(key), "aiscope_t_many_total{cgroup=\"/c%d\",kind=\"%s\"}", i,
			 i & 1 ? "a" : "b");
		all &= sample(s, key) == 3L * i;
	}
	CHECK(all);
	free(s);
	/* after the eviction shifted the list, later series are still found */
	prom_counter_add(c, (const char *[]){ "/c4999", "a" }, 1);
	CHECK_EQ(prom_series_count(c), 5001);
	prom_family_clear(c);
	prom_counter_add(c, (const char *[]){ "/c1", "a" }, 2);
	prom_counter_add(c, (const char *[]){ "/c1", "a" }, 3);
	CHECK_EQ(prom_series_count(c), 1);
	s = render(r);
	CHECK_EQ(sample(s, "aiscope_t_many_total{cgroup=\"/c1\",kind=\"a\"}"), 5);
	free(s);
	prom_reg_free(r);
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static const char *slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, size - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static void test_write_file(void)
{
	char dir[] = "/tmp/test_prom.XXXXXX", path[128], tmp[160], target[160], buf[64];
	mode_t old_umask = umask(077);
	struct stat st;
	int fd;
	ssize_t n;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/x.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	CHECK_EQ(prom_write_file(path, "a 1\n", 4), 0);
	CHECK_EQ(prom_write_file(path, "b 22\n", 5), 0);
	fd = open(path, O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	CHECK_STR(buf, "b 22\n");
	CHECK(stat(tmp, &st) != 0);		/* renamed away */
	CHECK(!stat(path, &st) && (st.st_mode & 0777) == 0644);
	CHECK_EQ(entries(dir), 1);		/* no temporary file left */
	unlink(path);
	/* links planted at the old fixed temporary name and at FILE: neither
	 * target is written, FILE becomes a file of its own */
	snprintf(target, sizeof(target), "%s/victim", dir);
	fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && write(fd, "precious\n", 9) == 9);
	close(fd);
	CHECK_EQ(symlink(target, tmp), 0);
	CHECK_EQ(prom_write_file(path, "c 3\n", 4), 0);
	CHECK_STR(slurp(target, buf, sizeof(buf)), "precious\n");
	CHECK_STR(slurp(path, buf, sizeof(buf)), "c 3\n");
	unlink(path);
	CHECK_EQ(symlink(target, path), 0);
	CHECK_EQ(prom_write_file(path, "d 4\n", 4), 0);
	CHECK_STR(slurp(target, buf, sizeof(buf)), "precious\n");
	CHECK(!lstat(path, &st) && S_ISREG(st.st_mode));
	CHECK_STR(slurp(path, buf, sizeof(buf)), "d 4\n");
	CHECK_EQ(entries(dir), 3);		/* victim, the link at tmp, path */
	unlink(tmp);
	unlink(target);
	unlink(path);
	/* a directory at FILE: an error, nothing left behind */
	CHECK_EQ(mkdir(path, 0755), 0);
	CHECK(prom_write_file(path, "e 5\n", 4) < 0);
	CHECK_EQ(entries(dir), 1);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/no/such/x.prom", dir);
	CHECK_EQ(prom_write_file(path, "a 1\n", 4), -ENOENT);
	rmdir(dir);
	umask(old_umask);
}

/* ---- HTTP ---- */

static struct prom_http srv;
static int ep = -1;
static uint64_t fake_now = 1000000000ULL;

static void pump(int rounds)
{
	struct epoll_event evs[32];

	for (int r = 0; r < rounds; r++) {
		int n = epoll_wait(ep, evs, 32, 5);

		for (int i = 0; i < n; i++)
			if (prom_http_owns(&srv, evs[i].data.u64))
				prom_http_event(&srv, evs[i].data.u64, evs[i].events, fake_now);
	}
}

static int client(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	const char *colon = strrchr(srv.addr, ':');

	a.sin_port = htons(atoi(colon + 1));
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A client that sent the first byte of a request and nothing more. */
static int slow_client(void)
{
	int fd = client();

	CHECK(fd >= 0 && send(fd, "G", 1, MSG_NOSIGNAL) == 1);
	pump(1);
	return fd;
}

/* Sends req (may be NULL), then reads the whole answer while pumping the
 * server; returns it (malloc'd). */
static char *exchange(int fd, const char *req, size_t reqlen)
{
	char *out = calloc(1, 1 << 20), buf[4096];
	size_t len = 0;

	if (req)
		CHECK_EQ(send(fd, req, reqlen, MSG_NOSIGNAL), (long long)reqlen);
	for (int i = 0; i < 400; i++) {
		ssize_t n;

		pump(1);
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || len > (64 << 10))
			break;
		if (n > 0 && len + n < (1 << 20) - 1) {
			memcpy(out + len, buf, n);
			len += n;
		}
	}
	out[len] = 0;
	return out;
}

static char *request(const char *req)
{
	int fd = client();
	char *r;

	CHECK(fd >= 0);
	r = exchange(fd, req, strlen(req));
	close(fd);
	pump(2);
	return r;
}

static void test_http_spec(void)
{
	struct prom_http s;
	char err[256];

	CHECK_EQ(prom_http_listen(&s, "abc", err, sizeof(err)), -EINVAL);
	CHECK_EQ(prom_http_listen(&s, "127.0.0.1:70000", err, sizeof(err)), -EINVAL);
	CHECK_EQ(prom_http_listen(&s, "127.0.0.1:", err, sizeof(err)), -EINVAL);
	CHECK_EQ(prom_http_listen(&s, "::1:80", err, sizeof(err)), -EINVAL);
	CHECK_EQ(prom_http_listen(&s, "[::1:80", err, sizeof(err)), -EINVAL);
	CHECK_EQ(prom_http_listen(&s, "no.such.host.invalid:80", err, sizeof(err)), -EINVAL);
	CHECK_EQ(prom_http_listen(&s, "localhost:0", err, sizeof(err)), 0);
	CHECK(!strncmp(s.addr, "127.0.0.1:", 10));
	prom_http_close(&s);
	/* IPv6 loopback where the host has it */
	if (prom_http_listen(&s, "[::1]:0", err, sizeof(err)) == 0) {
		CHECK(!strncmp(s.addr, "[::1]:", 6));
		prom_http_close(&s);
	}
	CHECK_EQ(prom_http_listen(&s, "0", err, sizeof(err)), 0);
	CHECK(!strncmp(s.addr, "127.0.0.1:", 10));
	prom_http_close(&s);
	CHECK_EQ(prom_http_listen(&s, ":0", err, sizeof(err)), 0);
	CHECK(!strncmp(s.addr, "127.0.0.1:", 10));
	prom_http_close(&s);
}

static void test_http_requests(void)
{
	char err[256], *r, big[PROM_HTTP_REQ_MAX + 100];
	const char *body = "# HELP x X.\n# TYPE x counter\nx 1\n";

	CHECK_EQ(prom_http_listen(&srv, "127.0.0.1:0", err, sizeof(err)), 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK_EQ(prom_http_attach(&srv, ep, 0x100), 0);
	CHECK(prom_http_set_body(&srv, body, strlen(body)) == 0);

	r = request("GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n");
	CHECK(!strncmp(r, "HTTP/1.1 200 OK\r\n", 17));
	CHECK(strstr(r, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n") != NULL);
	CHECK(strstr(r, "Content-Length: 33\r\n") != NULL);
	CHECK(strstr(r, "\r\n\r\n# HELP x X.\n# TYPE x counter\nx 1\n") != NULL);
	free(r);
	/* a query string, HTTP/1.0, bare newlines */
	r = request("GET /metrics?name[]=x HTTP/1.0\n\n");
	CHECK(!strncmp(r, "HTTP/1.1 200 OK\r\n", 17));
	free(r);
	r = request("HEAD /metrics HTTP/1.1\r\n\r\n");
	CHECK(!strncmp(r, "HTTP/1.1 200 OK\r\n", 17));
	CHECK(strstr(r, "Content-Length: 33\r\n") != NULL);
	CHECK(strstr(r, "# HELP") == NULL);
	free(r);
	r = request("GET / HTTP/1.1\r\n\r\n");
	CHECK(!strncmp(r, "HTTP/1.1 404 Not Found\r\n", 24));
	free(r);
	r = request("GET /metricsx HTTP/1.1\r\n\r\n");
	CHECK(!strncmp(r, "HTTP/1.1 404 ", 13));
	free(r);
	r = request("POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
	CHECK(!strncmp(r, "HTTP/1.1 405 ", 13));
	CHECK(strstr(r, "Allow: GET, HEAD\r\n") != NULL);
	free(r);
	r = request("\x16\x03\x01\x02\x01\x01\xfc\x03\x03\r\n\r\n");	/* TLS hello */
	CHECK(!strncmp(r, "HTTP/1.1 400 ", 13));
	free(r);
	r = request("GET /metrics SPDY/9\r\n\r\n");
	CHECK(!strncmp(r, "HTTP/1.1 400 ", 13));
	free(r);
	r = request("GET metrics HTTP/1.1\r\n\r\n");
	CHECK(!strncmp(r, "HTTP/1.1 400 ", 13));
	free(r);
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	big[sizeof(big) - 1] = 0;
	r = request(big);
	CHECK(!strncmp(r, "HTTP/1.1 431 ", 13));
	free(r);
	CHECK_EQ(prom_http_nconns(&srv), 0);
	CHECK(srv.served >= 3);
}

static void test_http_slow_and_greedy(void)
{
	int fds[PROM_HTTP_MAX_CONNS + 1], fd, silent;
	uint64_t t0;
	char *r, *big;
	size_t blen = 8 << 20;

	/* a client that connects and says nothing is held by the kernel
	 * (TCP_DEFER_ACCEPT): it takes no slot; one that sent half a line
	 * holds one until its request deadline, and the others are still
	 * served meanwhile */
	t0 = fake_now;
	silent = client();
	pump(3);
	CHECK_EQ(prom_http_nconns(&srv), 0);
	fd = client();
	CHECK(send(fd, "GET /met", 8, MSG_NOSIGNAL) == 8);	/* slow: half a line */
	pump(3);
	CHECK_EQ(prom_http_nconns(&srv), 1);
	r = request("GET /metrics HTTP/1.1\r\n\r\n");
	CHECK(!strncmp(r, "HTTP/1.1 200 ", 13));
	free(r);
	prom_http_sweep(&srv, t0 + PROM_HTTP_REQ_TIMEOUT_NS - 1);
	CHECK_EQ(prom_http_nconns(&srv), 1);
	fake_now = t0 + PROM_HTTP_REQ_TIMEOUT_NS;
	prom_http_sweep(&srv, fake_now);
	CHECK_EQ(prom_http_nconns(&srv), 0);
	CHECK_EQ(srv.timed_out, 1);
	r = exchange(fd, NULL, 0);			/* closed without an answer */
	CHECK_STR(r, "");
	free(r);
	close(fd);
	close(silent);

	/* all slots taken by slow clients: the next one is answered at
	 * once, in the slot of the oldest slow one, which is closed */
	for (int i = 0; i < PROM_HTTP_MAX_CONNS; i++) {
		fds[i] = slow_client();
		fake_now += 1000;		/* each accepted later than the last */
	}
	pump(3);
	CHECK_EQ(prom_http_nconns(&srv), PROM_HTTP_MAX_CONNS);
	fds[PROM_HTTP_MAX_CONNS] = client();
	r = exchange(fds[PROM_HTTP_MAX_CONNS], "GET /metrics HTTP/1.1\r\n\r\n", 25);
	CHECK(!strncmp(r, "HTTP/1.1 200 ", 13));
	free(r);
	CHECK_EQ(srv.evicted, 1);
	r = exchange(fds[0], NULL, 0);			/* the oldest: closed */
	CHECK_STR(r, "");
	free(r);
	/* a slot its client closed is taken without eviction; when full
	 * again, the next oldest slow one goes */
	close(fds[PROM_HTTP_MAX_CONNS]);
	fds[PROM_HTTP_MAX_CONNS] = -1;
	pump(3);
	CHECK_EQ(prom_http_nconns(&srv), PROM_HTTP_MAX_CONNS - 1);
	fd = slow_client();
	pump(2);
	CHECK_EQ(prom_http_nconns(&srv), PROM_HTTP_MAX_CONNS);
	CHECK_EQ(srv.evicted, 1);			/* a free slot was there */
	r = request("GET /metrics HTTP/1.1\r\n\r\n");
	CHECK(!strncmp(r, "HTTP/1.1 200 ", 13));
	free(r);
	CHECK_EQ(srv.evicted, 2);
	r = exchange(fds[1], NULL, 0);			/* the next oldest: closed */
	CHECK_STR(r, "");
	free(r);
	close(fd);
	for (int i = 0; i <= PROM_HTTP_MAX_CONNS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	pump(5);
	CHECK_EQ(prom_http_nconns(&srv), 0);

	/* a client that asks for a large body and never reads: the server
	 * does not block, its answer has the longer deadline */
	big = malloc(blen);
	memset(big, '#', blen);
	big[blen - 1] = '\n';
	prom_http_set_body(&srv, big, blen);
	free(big);
	t0 = fake_now;
	fd = client();
	CHECK(send(fd, "GET /metrics HTTP/1.1\r\n\r\n", 25, MSG_NOSIGNAL) == 25);
	pump(10);					/* returns: nothing blocks */
	CHECK_EQ(prom_http_nconns(&srv), 1);
	prom_http_sweep(&srv, t0 + PROM_HTTP_REQ_TIMEOUT_NS);
	CHECK_EQ(prom_http_nconns(&srv), 1);
	fake_now = t0 + PROM_HTTP_TIMEOUT_NS;
	prom_http_sweep(&srv, fake_now);
	CHECK_EQ(prom_http_nconns(&srv), 0);
	close(fd);
	/* and a reader gets all of it */
	r = request("GET /metrics HTTP/1.1\r\n\r\n");
	CHECK(!strncmp(r, "HTTP/1.1 200 ", 13));
	CHECK(strstr(r, "Content-Length: 8388608\r\n") != NULL);
	free(r);
	prom_http_close(&srv);
	close(ep);
}

int main(void)
{
	RUN(test_names);
	RUN(test_escapes);
	RUN(test_fmt_scaled);
	RUN(test_registration_errors);
	RUN(test_exposition_text);
	RUN(test_counter_scaled);
	RUN(test_slots_left_out);
	RUN(test_histogram_exact);
	RUN(test_cardinality_cap);
	RUN(test_family_clear);
	RUN(test_idle_eviction);
	RUN(test_many_series);
	RUN(test_write_file);
	RUN(test_http_spec);
	RUN(test_http_requests);
	RUN(test_http_slow_and_greedy);
	return t_done();
}
