/*
 * test_target.c -- src/lib/target: multi-condition target parsing (and its
 * messages for bad conditions), the 95% confidence interval against hand
 * values of Student's t, the judged end, and the Pareto front of a
 * hand-made set.
 */
#include "target.h"
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <string.h>

static const char *const names[] = { "ttft_p99_s", "tpot_p99_s", "slo_attainment", "gpus", NULL };

START_TEST(cond_parse_several)
{
	struct kv_cond c[KV_MAX_CONDS];
	char err[256];
	int n = kv_cond_parse("ttft_p99_s <= 1 and tpot_p99_s<0.1 and  slo_attainment >= 0.99", names,
			      c, KV_MAX_CONDS, err, sizeof(err));

	ck_assert_msg(n == 3, "parsed %d: %s", n, err);
	ck_assert_str_eq(c[0].metric, "ttft_p99_s");
	ck_assert_int_eq(c[0].op, KV_CMP_LE);
	ck_assert_double_eq(c[0].x, 1);
	ck_assert_str_eq(c[1].metric, "tpot_p99_s");
	ck_assert_int_eq(c[1].op, KV_CMP_LT);
	ck_assert_double_eq(c[1].x, 0.1);
	ck_assert_int_eq(c[2].op, KV_CMP_GE);
	ck_assert_double_eq(c[2].x, 0.99);
	ck_assert(kv_cond_holds(&c[0], 1) && !kv_cond_holds(&c[0], 1.01) && !kv_cond_holds(&c[1], 0.1));
	ck_assert(kv_cond_holds(&c[2], 0.99) && !kv_cond_holds(&c[2], NAN));
}
END_TEST

/* Each bad condition fails with a message naming the bad part and what was expected. */
START_TEST(cond_parse_bad)
{
	static const char *const bad[][2] = {
		{ "ttft_p99 <= 1", "unknown metric 'ttft_p99'" },
		{ "ttft_p99_s = 1", "expected <=, <, >= or > after 'ttft_p99_s'" },
		{ "ttft_p99_s <= fast", "expected a number after 'ttft_p99_s <='" },
		{ "ttft_p99_s <= 1 or gpus <= 4", "expected 'and' and another condition" },
		{ "ttft_p99_s <= 1 and", "expected a summary.csv column name" },
		{ "", "expected a summary.csv column name" },
		{ "ttft_p99_s <= 1s", "expected a number" },
	};
	struct kv_cond c[2];
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(kv_cond_parse(bad[i][0], names, c, 2, err, sizeof(err)) == -1,
			      "accepted '%s'", bad[i][0]);
		ck_assert_msg(strstr(err, bad[i][1]), "'%s': message '%s' lacks '%s'", bad[i][0], err,
			      bad[i][1]);
	}
	ck_assert_int_eq(kv_cond_parse("gpus <= 1 and gpus <= 2 and gpus <= 3", names, c, 2, err,
				       sizeof(err)), -1);
	ck_assert_msg(strstr(err, "more than 2 conditions"), "%s", err);
}
END_TEST

/*
 * {1, 2, 3}: mean 2, s = 1, t(0.975, 2) = 4.302652729749464 (tables:
 * 4.303), half-width 4.30265/sqrt(3) = 2.484138.  {0.9, 1.1}: s = 0.141421,
 * t(0.975, 1) = 12.706204736174694, half-width 1.270620.
 */
START_TEST(ci_hand_values)
{
	const double a[3] = { 1, 2, 3 }, b[2] = { 0.9, 1.1 }, one = 7;
	struct kv_ci ci;
	struct kv_cond le = { "ttft_p99_s", KV_CMP_LE, 4 }, ge = { "slo_attainment", KV_CMP_GE, 0 };

	ck_assert_int_eq(kv_ci95(a, 3, &ci), 0);
	ck_assert_double_eq_tol(ci.mean, 2, 1e-12);
	ck_assert_msg(fabs(ci.hi - (2 + 4.302652729749464 / sqrt(3))) < 1e-9 &&
			      fabs(ci.lo - (2 - 4.302652729749464 / sqrt(3))) < 1e-9,
		      "CI [%.9f, %.9f]", ci.lo, ci.hi);
	ck_assert_int_eq(kv_ci95(b, 2, &ci), 0);
	ck_assert_msg(fabs(ci.hi - 1 - 1.2706204736174694) < 1e-9, "hi %.12f", ci.hi);
	/* judged: the upper end for <=, the lower for >=, the mean on request */
	ck_assert_double_eq(kv_cond_judged(&le, &ci, 0), ci.hi);
	ck_assert_double_eq(kv_cond_judged(&ge, &ci, 0), ci.lo);
	ck_assert_double_eq_tol(kv_cond_judged(&le, &ci, 1), 1, 1e-12);
	ck_assert_int_eq(kv_ci95(&one, 1, &ci), 0);
	ck_assert(ci.lo == 7 && ci.hi == 7 && ci.n == 1);
	ck_assert_int_eq(kv_ci95(a, 0, &ci), -1);
	ck_assert(isnan(ci.mean));
}
END_TEST

/*
 * A condition with nothing to judge on is "cannot judge", never a miss:
 * no finished seed (n 0), an empty column in a finished seed (NaN, e.g.
 * ttft_p99_s of a run that completed nothing), an interval GSL could not
 * give.  {1, 2, 3} against <= 4: the upper end 4.48 fails, the mean 2 meets.
 */
START_TEST(verdict_cannot_judge)
{
	const double a[3] = { 1, 2, 3 }, gap[2] = { 0.5, NAN };
	struct kv_cond le = { "ttft_p99_s", KV_CMP_LE, 4 }, ge = { "slo_attainment", KV_CMP_GE, 0.9 };
	struct kv_ci none, empty, ok, two[2];
	char why[96];

	ck_assert_int_eq(kv_ci95(a, 0, &none), -1);
	ck_assert_int_eq(kv_cond_verdict(&le, &none, 0, why, sizeof(why)), KV_VERDICT_UNKNOWN);
	ck_assert_msg(!strcmp(why, "ttft_p99_s: no finished seed"), "why: %s", why);
	kv_ci95(gap, 2, &empty);
	ck_assert_int_eq(kv_cond_verdict(&le, &empty, 1, why, sizeof(why)), KV_VERDICT_UNKNOWN);
	ck_assert_msg(strstr(why, "empty in a finished seed"), "why: %s", why);
	empty.mean = 0.5; /* a mean with no interval (GSL failed): judged on an end it lacks */
	empty.lo = empty.hi = NAN;
	ck_assert_int_eq(kv_cond_verdict(&le, &empty, 0, why, sizeof(why)), KV_VERDICT_UNKNOWN);
	ck_assert_msg(strstr(why, "no confidence interval"), "why: %s", why);
	ck_assert_int_eq(kv_cond_verdict(&le, &empty, 1, NULL, 0), KV_VERDICT_MEETS);
	kv_ci95(a, 3, &ok);
	ck_assert_int_eq(kv_cond_verdict(&le, &ok, 0, NULL, 0), KV_VERDICT_FAILS);
	ck_assert_int_eq(kv_cond_verdict(&le, &ok, 1, NULL, 0), KV_VERDICT_MEETS);
	/* several: a definite miss stands; else one unknown makes the whole unknown */
	two[0] = ok;
	two[1] = none;
	{
		struct kv_cond c2[2] = { le, ge };

		ck_assert_int_eq(kv_conds_verdict(c2, two, 2, 0, why, sizeof(why)), KV_VERDICT_FAILS);
		ck_assert_int_eq(kv_conds_verdict(c2, two, 2, 1, why, sizeof(why)), KV_VERDICT_UNKNOWN);
		ck_assert_msg(!strcmp(why, "slo_attainment: no finished seed"), "why: %s", why);
		two[1] = ok; /* attainment 2 >= 0.9 on the mean */
		ck_assert_int_eq(kv_conds_verdict(c2, two, 2, 1, why, sizeof(why)), KV_VERDICT_MEETS);
		ck_assert_msg(!why[0], "why after meets: %s", why);
	}
	ck_assert_int_eq(kv_conds_verdict(&le, &ok, 0, 1, why, sizeof(why)), KV_VERDICT_UNKNOWN);
	ck_assert_str_eq(kv_verdict_name(KV_VERDICT_UNKNOWN), "cannot judge");
	ck_assert_str_eq(kv_verdict_name(KV_VERDICT_MEETS), "meets");
	ck_assert_str_eq(kv_verdict_name(KV_VERDICT_FAILS), "fails");
}
END_TEST

/*
 * (gpus, ttft): (1, 9) (2, 3) (2, 4) (4, 1) (8, 1) (4, 2) (3, NaN): lower is
 * better on both, so the front is (1, 9), (2, 3), (4, 1); (2, 4) and (4, 2)
 * are dominated, (8, 1) by (4, 1), the NaN point is left out.
 */
START_TEST(pareto_hand_set)
{
	const double g[7] = { 1, 2, 2, 4, 8, 4, 3 }, t[7] = { 9, 3, 4, 1, 1, 2, NAN };
	const unsigned char want[7] = { 1, 1, 0, 1, 0, 0, 0 };
	const double thr[3] = { 10, 20, 15 }, lat[3] = { 1, 2, 3 };
	unsigned char f[7];
	size_t i;

	ck_assert_uint_eq(kv_pareto(g, t, 7, 0, 0, f), 3);
	for (i = 0; i < 7; i++)
		ck_assert_msg(f[i] == want[i], "point %zu (%g, %g): front %d, expected %d", i, g[i], t[i],
			      f[i], want[i]);
	/* throughput higher is better: (20, 2) dominates (15, 3); (10, 1) stays */
	ck_assert_uint_eq(kv_pareto(thr, lat, 3, 1, 0, f), 2);
	ck_assert(f[0] && f[1] && !f[2]);
	ck_assert(kv_metric_higher_better("throughput_tok_s") && kv_metric_higher_better("goodput_req_s") &&
		  kv_metric_higher_better("slo_attainment") && !kv_metric_higher_better("gpus") &&
		  !kv_metric_higher_better("ttft_p99_s"));
}
END_TEST

int main(void)
{
	Suite *su = suite_create("target");
	TCase *tc = tcase_create("target");

	tcase_add_test(tc, cond_parse_several);
	tcase_add_test(tc, cond_parse_bad);
	tcase_add_test(tc, ci_hand_values);
	tcase_add_test(tc, verdict_cannot_judge);
	tcase_add_test(tc, pareto_hand_set);
	suite_add_tcase(su, tc);
	return kv_test_run_suite(su);
}
