/*
 * test_chart.c -- the words charts put on their axes and titles: the setup
 * line merged over a sweep's points (a differing word shown as its values,
 * setups of other shapes marked), axis labels that do not repeat a unit
 * the label names, and sweep axes named with their unit and sense.
 */
#include "testutil.h"

#include <check.h>
#include <string.h>

#include "chart.h"
#include "metric_doc.h"

static const char *merge(const char *const *s, size_t n)
{
	static char buf[256];

	kv_chart_merge_setups(s, n, buf, sizeof(buf));
	return buf;
}

START_TEST(test_merge_setups)
{
	const char *same[] = { "m on 1 x d, scheduler fifo, cache full, engine e",
			       "m on 1 x d, scheduler fifo, cache full, engine e" };
	const char *vary[] = { "m on 1 x d, scheduler fifo, cache full, engine e",
			       "m on 2 x d, scheduler drf, cache full, engine e",
			       "m on 4 x d, scheduler fifo, cache full, engine e" };
	const char *shape[] = { "m on 1 x d, scheduler fifo, cache full, engine e",
				"m on 2 x d (tensor parallel), scheduler fifo, cache full, engine e" };
	const char *empty[] = { "" };

	ck_assert_str_eq(merge(same, 2), same[0]);
	ck_assert_str_eq(merge(vary, 3), "m on 1/2/4 x d, scheduler fifo/drf, cache full, engine e");
	ck_assert_str_eq(merge(shape, 2), "m on 1 x d, scheduler fifo, cache full, engine e "
					  "(first point; the axes vary it)");
	ck_assert_str_eq(merge(empty, 1), "");
	ck_assert_str_eq(merge(empty, 0), "");
}
END_TEST

START_TEST(test_merge_truncates)
{
	const char *s[] = { "a b c d e f g h i j k l m n o p q r s t u v w x y z" };
	char buf[8];

	kv_chart_merge_setups(s, 1, buf, sizeof(buf));
	ck_assert_str_eq(buf, "a b c d");
}
END_TEST

START_TEST(test_axis_labels)
{
	char buf[128];

	ck_assert_str_eq(kv_metric_axis_label("summary.csv", "gpus", buf, sizeof(buf)), "GPUs used");
	ck_assert_str_eq(kv_metric_axis_label("summary.csv", "ttft_p99_s", buf, sizeof(buf)),
			 "TTFT p99 (s)");
	ck_assert_str_eq(kv_metric_axis_label("summary.csv", "completed", buf, sizeof(buf)),
			 "completed requests");
	ck_assert_str_eq(kv_metric_axis_label("summary.csv", "no_such", buf, sizeof(buf)), "no_such");
	ck_assert_ptr_nonnull(strstr(kv_sweep_axis_label("workload.arrival.time_scale"),
				     "lower = more load"));
	ck_assert_str_eq(kv_sweep_axis_label("workload.arrival.rate"), "arrival rate (requests/s)");
	ck_assert_str_eq(kv_sweep_axis_label("some.other.key"), "some.other.key");
}
END_TEST

static Suite *chart_suite(void)
{
	Suite *s = suite_create("chart");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_merge_setups);
	tcase_add_test(tc, test_merge_truncates);
	tcase_add_test(tc, test_axis_labels);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(chart_suite());
}
