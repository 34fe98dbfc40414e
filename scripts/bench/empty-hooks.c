// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor of a tool's hook set: a BPF object of empty programs (each
 * returns 0 at once), one per hook the tool chose, attached as libbpf
 * attaches the tool's own (by section name: tracepoint/CAT/NAME,
 * tp_btf/NAME, raw_tp/NAME), until SIGINT or SIGTERM. What a syscall pays
 * with it attached is what the mechanisms cost before any program body.
 *
 * Usage: empty-hooks OBJECT   (prints "Tracing N hooks" on stderr once attached)
 * Built and run by scripts/bench/syscall-overhead.sh, which writes OBJECT.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#define MAX_LINKS 64

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct bpf_link *links[MAX_LINKS];
	struct bpf_object *obj;
	struct bpf_program *p;
	sigset_t block, old;
	int n = 0, rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: empty-hooks OBJECT\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "empty-hooks: cannot load %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(p, obj) {
		if (n == MAX_LINKS) {
			fprintf(stderr, "empty-hooks: more than %d programs\n", MAX_LINKS);
			goto out;
		}
		links[n] = bpf_program__attach(p);
		if (!links[n]) {
			fprintf(stderr, "empty-hooks: cannot attach %s: %s\n",
				bpf_program__section_name(p), strerror(errno));
			goto out;
		}
		n++;
	}
	/* blocked but while sigsuspend waits: a signal cannot slip in
	 * between the test and the wait */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "Tracing %d hooks\n", n);
	while (!stop)
		sigsuspend(&old);
	rc = 0;
out:
	while (n--)
		bpf_link__destroy(links[n]);
	bpf_object__close(obj);
	return rc;
}
