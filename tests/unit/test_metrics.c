// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/metrics.c: the label names --metric-label may not take come from the
 * AISCOPE_METRIC_LABELS tables themselves (a table declared here, as a tool
 * declares its own, is refused at once), and a family registers only with a
 * table declared so. */
#include <stdlib.h>
#include "t.h"
#include "t_child.h"
#include "fail.h"
#include "metrics.h"

/* as a tool's: the cgroup's labels, then one of its own */
AISCOPE_METRIC_LABELS(shard_labels, AISCOPE_CGROUP_LABEL_NAMES, "shard", NULL);
static const char *const undeclared[] = { "tool", "flavour", NULL };

static void label_of(const char *arg) { metrics_label_option(arg); }

static void test_taken(void)
{
	/* this file's table, lib's (cgroup's, lost's, build_info's), lib/prom's,
	 * a scrape's; then names no table has */
	static const char *const taken[] = {
		"shard", "cgroup", "container_id", "pod_uid", "namespace", "pod", "container",
		"tool", "kind", "version", "kernel", "le", "overflow", "instance", "job", "node",
	};
	static const char *const free_names[] = { "flavour", "model_name", "shard_", "Shard" };

	for (size_t i = 0; i < T_ROWS(taken); i++)
		CHECK_CASE(metrics_label_taken(taken[i]), "%s", taken[i]);
	for (size_t i = 0; i < T_ROWS(free_names); i++)
		CHECK_CASE(!metrics_label_taken(free_names[i]), "%s", free_names[i]);
}

static void test_option_refuses_a_table_name(void)
{
	fail_setup("t", false);
	CHECK(rejects(label_of, "ai.shard=shard",
		      "t: invalid --metric-label 'ai.shard=shard': 'shard' is a label of aiscope's own\n"));
	/* KEY's default name is the same refusal */
	CHECK(rejects(label_of, "shard",
		      "t: invalid --metric-label 'shard': 'shard' is a label of aiscope's own\n"));
	CHECK(rejects(label_of, "k=le",
		      "t: invalid --metric-label 'k=le': 'le' is a label of aiscope's own\n"));
}

/* a chosen name fills an xlabel slot of every cgroup table: the slots are
 * no name of aiscope's, so the same name again is "given twice" */
static void test_slots_are_not_taken(void)
{
	metrics_label_option("ai.model.name=model_name");
	CHECK_STR(aiscope_metric_xlabels[0], "model_name");
	CHECK(!metrics_label_taken("model_name"));
	CHECK(rejects(label_of, "x=model_name",
		      "t: invalid --metric-label 'x=model_name': label 'model_name' given twice\n"));
}

static void register_undeclared(const char *name)
{
	aiscope_metric_counter(name, "Not declared.", undeclared);
}

static void test_registration_needs_a_declared_table(void)
{
	char err[512];

	metrics_setup("t", "/dev/null", NULL);
	CHECK(aiscope_metric_counter("aiscope_t_shards_total", "Shards.", shard_labels));
	CHECK(aiscope_metric_gauge("aiscope_t_host", "No labels.", NULL));
	CHECK_EQ(child_err(register_undeclared, "aiscope_t_x_total", err, sizeof(err)), 1);
	CHECK_STR(err, "t: cannot register metric aiscope_t_x_total: its labels are not declared with AISCOPE_METRIC_LABELS\n");
}

int main(void)
{
	RUN(test_taken);
	RUN(test_option_refuses_a_table_name);
	RUN(test_slots_are_not_taken);
	RUN(test_registration_needs_a_declared_table);
	return t_done();
}
