// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fakeras: a stand-in for the RAS service of a NCCL job (which needs GPUs
 * to run here), speaking its client protocol as NCCL 2.28's
 * src/ras/client_support.cc does, and answering STATUS with a document
 * the test wrote in NCCL's JSON format.
 *
 *   fakeras PORTFILE DOC [text]
 *	Listens on 127.0.0.1, an ephemeral port written to PORTFILE; for
 *	each connection answers "CLIENT PROTOCOL n" with "SERVER PROTOCOL 2",
 *	"TIMEOUT s" and "SET FORMAT json|text" with "OK" ("text" as third
 *	argument: a NCCL before 2.28.7, which refuses json with "ERROR:
 *	Invalid format json"), "STATUS" with DOC's bytes (read again each
 *	time), then closes. Prints each command it got ("cmd ...") and
 *	"status N" after the Nth document sent.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static void say(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) < 0)
		perror("fakeras: write");
}

static void send_doc(int fd, const char *path)
{
	char buf[65536];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (write(fd, buf, n) != (ssize_t)n)
			break;
	fclose(f);
}

/* one client: commands until STATUS (answered, then closed) or EOF */
static int serve(int fd, const char *doc, int text_only)
{
	char line[512];
	FILE *in = fdopen(dup(fd), "r");
	int sent = 0;

	while (in && fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\r\n")] = 0;
		printf("cmd %s\n", line);
		fflush(stdout);
		if (!strncasecmp(line, "client protocol ", 16)) {
			say(fd, "SERVER PROTOCOL 2\n");
		} else if (!strncasecmp(line, "timeout ", 8)) {
			say(fd, "OK\n");
		} else if (!strcasecmp(line, "set format json")) {
			say(fd, text_only ? "ERROR: Invalid format json\n" : "OK\n");
		} else if (!strcasecmp(line, "set format text")) {
			say(fd, "OK\n");
		} else if (!strcasecmp(line, "status")) {
			send_doc(fd, doc);
			sent = 1;
			break;
		} else {
			say(fd, "ERROR: Unknown command\n");
		}
	}
	if (in)
		fclose(in);
	return sent;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int ls, one = 1, n = 0;
	FILE *pf;

	if (argc < 3) {
		fprintf(stderr, "usage: fakeras PORTFILE DOC [text]\n");
		return 2;
	}
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 8) ||
	    getsockname(ls, (struct sockaddr *)&a, &al)) {
		perror("fakeras");
		return 1;
	}
	pf = fopen(argv[1], "w");
	if (!pf)
		return 1;
	fprintf(pf, "%d\n", ntohs(a.sin_port));
	fclose(pf);
	for (;;) {
		int c = accept(ls, NULL, NULL);

		if (c < 0)
			continue;
		if (serve(c, argv[2], argc > 3 && !strcmp(argv[3], "text")))
			printf("status %d\n", ++n);
		fflush(stdout);
		close(c);
	}
}
