// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "json.h"
#include "probe.h"

static const char *const mech_names[PM_NR] = {
	[PM_FENTRY] = "fentry", [PM_FEXIT] = "fexit", [PM_TP_BTF] = "tp_btf",
	[PM_RAW_TP] = "raw_tp", [PM_TRACEPOINT] = "tracepoint",
	[PM_KPROBE] = "kprobe", [PM_KRETPROBE] = "kretprobe",
};

const char *probe_mech_name(enum probe_mech m)
{
	return m < PM_NR ? mech_names[m] : "?";
}

int probe_parse_mode(const char *s, unsigned int *mask)
{
	char buf[128], *tok, *save;
	unsigned int m = 0;

	if (!s || !*s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	/* strtok_r would skip empty elements: "fentry,,tp_btf", ",fentry" */
	if (s[0] == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,"))
		return -EINVAL;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "fentry") || !strcmp(tok, "fexit"))
			m |= PM_BIT(PM_FENTRY) | PM_BIT(PM_FEXIT);
		else if (!strcmp(tok, "kprobe") || !strcmp(tok, "kretprobe"))
			m |= PM_BIT(PM_KPROBE) | PM_BIT(PM_KRETPROBE);
		else if (!strcmp(tok, "tp_btf"))
			m |= PM_BIT(PM_TP_BTF);
		else if (!strcmp(tok, "raw_tp"))
			m |= PM_BIT(PM_RAW_TP);
		else if (!strcmp(tok, "tracepoint"))
			m |= PM_BIT(PM_TRACEPOINT);
		else
			return -EINVAL;
	}
	if (!m)
		return -EINVAL;
	*mask = m;
	return 0;
}

static int check_mech(const struct feat_ops *ops, const struct probe_cand *c, char *why, size_t len)
{
	switch (c->mech) {
	case PM_FENTRY:
	case PM_FEXIT:
		return ops->fentry(ops->ctx, c->target, why, len);
	case PM_TP_BTF:
		return ops->tp_btf(ops->ctx, c->target, why, len);
	case PM_RAW_TP:
		return ops->raw_tp(ops->ctx, c->target, why, len);
	case PM_TRACEPOINT:
		return ops->tracepoint(ops->ctx, c->target, why, len);
	case PM_KPROBE:
	case PM_KRETPROBE:
		return ops->kprobe(ops->ctx, c->target, why, len);
	default:
		snprintf(why, len, "unknown mechanism");
		return -EINVAL;
	}
}

/* the attach point, then what the program needs besides (a helper the
 * kernel may not have yet) */
static int check(const struct feat_ops *ops, const struct probe_cand *c, char *why, size_t len)
{
	int err = check_mech(ops, c, why, len);

	if (err || !c->needs || !ops->needs)
		return err;
	return ops->needs(ops->ctx, c->mech, c->target, c->needs, why, len);
}

/* A tp_btf or raw_tp candidate that a hook in a preemptible place leaves
 * until after its classic tracepoint, on a kernel whose tracepoint programs
 * run preemptibly (7.x): the kernel skips a run when another task enters
 * the program on a CPU where a run is preempted (recursion_misses), and
 * the classic tracepoint runs its programs with preemption off. */
static bool deferred(const struct probe_hook *h, const struct probe_cand *c,
		     const struct feat_ops *ops, int *preemptible)
{
	bool has_tp = false;

	if (!h->preemptible || (c->mech != PM_TP_BTF && c->mech != PM_RAW_TP))
		return false;
	for (int j = 0; j < PROBE_MAX_CANDS && h->cand[j].target; j++)
		has_tp |= h->cand[j].mech == PM_TRACEPOINT;
	if (!has_tp || !ops->tp_preemptible)
		return false;
	if (*preemptible < 0)
		*preemptible = ops->tp_preemptible(ops->ctx);
	return *preemptible;
}

/* The order a hook's candidates are tried in: as listed, but deferred ones
 * (above) right after the classic tracepoint. */
static int try_order(const struct probe_hook *h, const struct feat_ops *ops, int *preemptible,
		     int order[PROBE_MAX_CANDS])
{
	int n = 0, ncand = 0, late[PROBE_MAX_CANDS], nlate = 0;

	while (ncand < PROBE_MAX_CANDS && h->cand[ncand].target)
		ncand++;
	for (int j = 0; j < ncand; j++) {
		if (deferred(h, &h->cand[j], ops, preemptible)) {
			late[nlate++] = j;
			continue;
		}
		order[n++] = j;
		if (h->cand[j].mech != PM_TRACEPOINT)
			continue;
		for (int k = 0; k < nlate; k++)
			order[n++] = late[k];
		nlate = 0;
	}
	for (int k = 0; k < nlate; k++)
		order[n++] = late[k];
	return n;
}

static void try_cand(struct probe_hook *h, int j, const struct feat_ops *ops,
		     unsigned int allowed, bool late)
{
	const struct probe_cand *c = &h->cand[j];

	h->why[j][0] = 0;
	h->symbol[j][0] = 0;
	if (!(allowed & PM_BIT(c->mech))) {
		h->status[j] = PS_EXCLUDED;
		snprintf(h->why[j], PROBE_WHY_LEN, "excluded by --probe-mode");
		return;
	}
	if (check(ops, c, h->why[j], PROBE_WHY_LEN)) {
		h->status[j] = PS_UNAVAILABLE;
		if (!h->why[j][0])
			snprintf(h->why[j], PROBE_WHY_LEN, "not supported");
		return;
	}
	if ((c->mech == PM_KPROBE || c->mech == PM_KRETPROBE) && ops->kprobe_symbol) {
		const char *sym = ops->kprobe_symbol(ops->ctx, c->target);

		if (sym && strcmp(sym, c->target))
			snprintf(h->symbol[j], PROBE_SYM_LEN, "%s", sym);
	}
	if (h->chosen < 0) {
		h->chosen = j;
		h->status[j] = PS_CHOSEN;
		return;
	}
	h->status[j] = PS_AVAILABLE;
	if (late)
		snprintf(h->why[j], PROBE_WHY_LEN, "preemptible here, so the kernel can skip runs");
}

static int resolve(struct probe_hook *hooks, int n, const struct feat_ops *ops,
		   unsigned int allowed, bool all)
{
	int missing = 0, preemptible = -1, order[PROBE_MAX_CANDS];

	for (int i = 0; i < n; i++) {
		struct probe_hook *h = &hooks[i];
		int ntry = try_order(h, ops, &preemptible, order);

		h->chosen = -1;
		for (int k = 0; k < ntry; k++) {
			int j = order[k];

			if (!all && h->chosen >= 0) {
				h->why[j][0] = 0;
				h->symbol[j][0] = 0;
				h->status[j] = PS_UNTRIED;
				continue;
			}
			try_cand(h, j, ops, allowed, deferred(h, &h->cand[j], ops, &preemptible));
		}
		if (h->chosen < 0 && !h->optional)
			missing++;
	}
	return missing ? -ENOENT : 0;
}

int probe_resolve(struct probe_hook *hooks, int n, const struct feat_ops *ops,
		  unsigned int allowed)
{
	return resolve(hooks, n, ops, allowed, true);
}

int probe_resolve_first(struct probe_hook *hooks, int n, const struct feat_ops *ops,
			unsigned int allowed)
{
	return resolve(hooks, n, ops, allowed, false);
}

const struct probe_hook *probe_first_missing(const struct probe_hook *hooks, int n)
{
	for (int i = 0; i < n; i++)
		if (hooks[i].chosen < 0 && !hooks[i].optional)
			return &hooks[i];
	return NULL;
}

void probe_explain(const struct probe_hook *h, char *buf, size_t len)
{
	size_t off = 0;

	off += snprintf(buf + off, len - off, "tried");
	for (int j = 0; j < PROBE_MAX_CANDS && h->cand[j].target && off < len; j++)
		off += snprintf(buf + off, len - off, "%s %s:%s (%s)", j ? "," : "",
				probe_mech_name(h->cand[j].mech), h->cand[j].target,
				h->why[j][0] ? h->why[j] : "not tried");
}

const struct probe_cand *probe_chosen(const struct probe_hook *h)
{
	return h->chosen >= 0 ? &h->cand[h->chosen] : NULL;
}

bool probe_chosen_by(const struct probe_hook *h, unsigned int mask)
{
	const struct probe_cand *c = probe_chosen(h);

	return c && (mask & PM_BIT(c->mech));
}

static void unload(struct bpf_object *obj, const char *prog)
{
	struct bpf_program *p = obj ? bpf_object__find_program_by_name(obj, prog) : NULL;

	if (p)
		bpf_program__set_autoload(p, false);
}

void probe_drop(struct probe_hook *h, struct bpf_object *obj)
{
	if (h->chosen < 0)
		return;
	unload(obj, h->cand[h->chosen].prog);
	h->status[h->chosen] = PS_AVAILABLE;
	h->chosen = -1;
}

void probe_exclude(struct probe_hook *h, const char *why)
{
	for (int j = 0; j < PROBE_MAX_CANDS && h->cand[j].target; j++) {
		if (h->status[j] != PS_CHOSEN && h->status[j] != PS_AVAILABLE)
			continue;
		h->status[j] = PS_EXCLUDED;
		snprintf(h->why[j], PROBE_WHY_LEN, "%s", why);
	}
	h->chosen = -1;
}

bool probe_choose_set(struct probe_hook *set, int n, struct probe_hook *alt, int m)
{
	char why[PROBE_WHY_LEN];

	for (int i = 0; i < n; i++) {
		if (set[i].chosen >= 0)
			continue;
		snprintf(why, sizeof(why), "without %s: raw syscall hooks instead", set[i].name);
		for (int j = 0; j < n; j++)
			probe_exclude(&set[j], why);
		return false;
	}
	for (int j = 0; j < m; j++)
		probe_exclude(&alt[j], "per-syscall tracepoints chosen");
	return true;
}

void probe_unload(struct bpf_object *obj, const struct probe_hook *hooks, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < PROBE_MAX_CANDS && hooks[i].cand[j].target; j++)
			unload(obj, hooks[i].cand[j].prog);
}

/* "tp_btf/sched_switch" names sched_switch */
static bool sec_names_target(const struct bpf_program *p, const char *target)
{
	const char *sec = bpf_program__section_name(p), *slash = strchr(sec, '/');

	return slash && !strcmp(slash + 1, target);
}

int probe_prepare(struct bpf_object *obj, struct probe_hook *hooks, int n)
{
	int err;

	for (int i = 0; i < n; i++) {
		struct probe_hook *h = &hooks[i];

		for (int j = 0; j < PROBE_MAX_CANDS && h->cand[j].target; j++) {
			const struct probe_cand *c = &h->cand[j];
			struct bpf_program *p = bpf_object__find_program_by_name(obj, c->prog);

			if (!p)
				return -ENOENT;
			if (j != h->chosen) {
				bpf_program__set_autoload(p, false);
				continue;
			}
			bpf_program__set_autoload(p, true);
			/* only renamed targets: retargeting makes libbpf parse the
			 * kernel's BTF once more */
			if ((c->mech == PM_FENTRY || c->mech == PM_FEXIT || c->mech == PM_TP_BTF) &&
			    !sec_names_target(p, c->target)) {
				err = bpf_program__set_attach_target(p, 0, c->target);
				if (err)
					return err;
			}
		}
	}
	return 0;
}

int probe_attach(struct bpf_object *obj, struct probe_hook *hooks, int n,
		 const struct probe_hook **err_hook)
{
	for (int i = 0; i < n; i++) {
		struct probe_hook *h = &hooks[i];
		const struct probe_cand *c;
		struct bpf_program *p;
		struct bpf_link *l = NULL;
		char cat[64];
		const char *slash;

		if (h->chosen < 0)
			continue;
		c = &h->cand[h->chosen];
		p = bpf_object__find_program_by_name(obj, c->prog);
		if (!p)
			return -ENOENT;
		switch (c->mech) {
		case PM_FENTRY:
		case PM_FEXIT:
		case PM_TP_BTF:
			l = bpf_program__attach_trace(p);
			break;
		case PM_RAW_TP:
			l = bpf_program__attach_raw_tracepoint(p, c->target);
			break;
		case PM_TRACEPOINT:
			slash = strchr(c->target, '/');
			if (!slash || (size_t)(slash - c->target) >= sizeof(cat))
				return -EINVAL;
			memcpy(cat, c->target, slash - c->target);
			cat[slash - c->target] = 0;
			l = bpf_program__attach_tracepoint(p, cat, slash + 1);
			break;
		case PM_KPROBE:
		case PM_KRETPROBE:
			l = bpf_program__attach_kprobe(p, c->mech == PM_KRETPROBE,
						       h->symbol[h->chosen][0] ? h->symbol[h->chosen]
									       : c->target);
			break;
		default:
			break;
		}
		if (!l) {
			int err = -errno;

			if (err_hook)
				*err_hook = h;
			return err ? err : -EINVAL;
		}
		h->link = l;
	}
	return 0;
}

void probe_detach(struct probe_hook *hooks, int n)
{
	for (int i = 0; i < n; i++) {
		bpf_link__destroy(hooks[i].link);
		hooks[i].link = NULL;
	}
}

static const char *status_name(enum probe_status s)
{
	switch (s) {
	case PS_CHOSEN: return "chosen";
	case PS_AVAILABLE: return "available";
	case PS_UNAVAILABLE: return "unavailable";
	case PS_EXCLUDED: return "excluded";
	default: return "not needed";
	}
}

/* The last row of a hook none of whose candidates runs. A hook that a
 * choice between sets left out (probe_choose_set: every candidate excluded
 * for the same reason, the set that replaces it chosen) is not missing:
 * another hook answers, and the row says which. */
static const char *none_status(const struct probe_hook *h)
{
	static char buf[PROBE_WHY_LEN + 32];
	int j;

	for (j = 0; j < PROBE_MAX_CANDS && h->cand[j].target; j++)
		if (h->status[j] != PS_EXCLUDED || strcmp(h->why[j], h->why[0]) ||
		    !strcmp(h->why[j], "excluded by --probe-mode"))
			break;
	if (j && (j == PROBE_MAX_CANDS || !h->cand[j].target)) {
		snprintf(buf, sizeof(buf), "none: not needed, %s", h->why[0]);
		return buf;
	}
	return h->optional ? "none: optional, output without it" : "none: cannot run";
}

void probe_print_plan(FILE *f, const struct probe_hook *hooks, int n, struct jw *jw,
		      const char *tool, unsigned long long realtime_ns)
{
	if (!jw)
		fprintf(f, "%-22s %-11s %-34s %s\n", "HOOK", "MECHANISM", "TARGET", "STATUS");
	for (int i = 0; i < n; i++) {
		const struct probe_hook *h = &hooks[i];

		for (int j = 0; j < PROBE_MAX_CANDS && h->cand[j].target; j++) {
			const struct probe_cand *c = &h->cand[j];
			/* an available or chosen one may say why it is not
			 * first (runs preemptibly here) */
			bool why = h->why[j][0] && h->status[j] != PS_UNTRIED;

			if (jw) {
				jw_record_begin(jw, "probe", tool, realtime_ns);
				jw_kstr(jw, "hook", h->name);
				jw_kbool(jw, "optional", h->optional);
				jw_kstr(jw, "mechanism", probe_mech_name(c->mech));
				jw_kstr(jw, "target", c->target);
				jw_kstr(jw, "status", status_name(h->status[j]));
				jw_kstr(jw, "reason", why ? h->why[j] : NULL);
				jw_kstr(jw, "symbol", h->symbol[j][0] ? h->symbol[j] : NULL);
				jw_record_end(jw);
				continue;
			}
			fprintf(f, "%-22s %-11s %-34s %s%s%s%s%s\n", j ? "" : h->name,
				probe_mech_name(c->mech), c->target, status_name(h->status[j]),
				why ? ": " : "", why ? h->why[j] : "",
				h->symbol[j][0] ? " as " : "", h->symbol[j]);
		}
		if (!jw && h->chosen < 0)
			fprintf(f, "%-22s %-11s %-34s %s\n", "", "-", "-", none_status(h));
	}
}

const char *probe_summary(const struct probe_hook *hooks, int n)
{
	int mech = -1;

	for (int i = 0; i < n; i++) {
		int m;

		if (hooks[i].chosen < 0)
			continue;
		m = hooks[i].cand[hooks[i].chosen].mech;
		if (mech >= 0 && m != mech)
			return "mixed";
		mech = m;
	}
	return mech < 0 ? "none" : probe_mech_name(mech);
}
