/*
 * test_source.c -- the arrival stream: determinism, the moments of each
 * distribution, tenant shares, stop conditions, trace replay (time_scale,
 * length overrides, cycling length traces) and spec errors.
 */
#include "source.h"

#include "testutil.h"

#include <check.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct kv_source_spec spec; /* ~75 KiB: kept off the stack */


/* Poisson at 10/s, fixed 100/10 tokens, one tenant, 1000 requests. */
static void base_spec(void)
{
	memset(&spec, 0, sizeof(spec));
	spec.requests = 1000;
	spec.arrival = KV_ARRIVAL_POISSON;
	spec.rate_per_s = 10;
	spec.cv = 1;
	spec.time_scale = 1;
	spec.lengths.kind = KV_LEN_FIXED;
	spec.lengths.prompt = 100;
	spec.lengths.output = 10;
	spec.n_tenants = 1;
	snprintf(spec.tenants[0].name, sizeof(spec.tenants[0].name), "default");
	spec.tenants[0].share = 1;
	spec.tenants[0].weight = 1;
}

static void set_trace_lengths(struct kv_length_spec *l, const char *path)
{
	memset(l, 0, sizeof(*l));
	l->kind = KV_LEN_TRACE;
	snprintf(l->path, sizeof(l->path), "%s", path);
}

static struct kv_source *open_ok(uint64_t seed)
{
	struct kv_source *s = NULL;
	struct kv_diag d = { 0 };
	int err = kv_source_open(&spec, seed, &s, &d);

	ck_assert_msg(err == 0, "open: %d %s:%lu:%lu: %s: %s", err, d.file, d.line, d.col,
		      d.field, d.msg);
	return s;
}

static int next_ok(struct kv_source *s, struct kv_arrival *a)
{
	struct kv_diag d = { 0 };
	int r = kv_source_next(s, a, &d);

	EXPECT(r >= 0, "next: %d %s:%lu:%lu: %s: %s", r, d.file, d.line, d.col, d.field,
	       d.msg);
	return r;
}

/* Opening spec fails with err naming field. */
static void expect_open_error(int err, const char *field)
{
	struct kv_source *s = NULL;
	struct kv_diag d = { 0 };
	int r = kv_source_open(&spec, 1, &s, &d);

	ck_assert_msg(r == err, "open: got %d want %d (%s: %s)", r, err, d.field, d.msg);
	ck_assert_ptr_null(s);
	ck_assert_msg(!strcmp(d.field, field), "field '%s' want '%s' (%s)", d.field, field,
		      d.msg);
}

START_TEST(test_same_seed_same_stream)
{
	struct kv_source *s1, *s2, *s3;
	struct kv_arrival a, b;
	int i, differ = 0;

	base_spec();
	spec.requests = 5000;
	spec.arrival = KV_ARRIVAL_GAMMA;
	spec.cv = 3;
	spec.lengths.kind = KV_LEN_LOGNORMAL;
	spec.lengths.prompt_mean = 1000;
	spec.lengths.prompt_sigma = 1;
	spec.lengths.output_mean = 100;
	spec.lengths.output_sigma = 0.5;
	spec.n_tenants = 3;
	spec.tenants[1] = spec.tenants[0];
	spec.tenants[2] = spec.tenants[0];
	spec.tenants[2].has_lengths = 1;
	set_trace_lengths(&spec.tenants[2].lengths, fixture("lengths_small.csv"));
	s1 = open_ok(42);
	s2 = open_ok(42);
	s3 = open_ok(43);
	for (i = 0; i < 5000; i++) {
		EXPECT(next_ok(s1, &a) == 1, "stream ended early");
		EXPECT(next_ok(s2, &b) == 1, "stream ended early");
		EXPECT(a.id == b.id && a.t_ns == b.t_ns && a.tenant == b.tenant &&
			       a.prompt_tokens == b.prompt_tokens &&
			       a.output_tokens == b.output_tokens && a.origin_line == b.origin_line,
		       "arrival %d differs: t %llu/%llu", i, (unsigned long long)a.t_ns,
		       (unsigned long long)b.t_ns);
		EXPECT(next_ok(s3, &b) == 1, "stream ended early");
		differ += a.t_ns != b.t_ns;
	}
	ck_assert_int_eq(next_ok(s1, &a), 0);
	ck_assert_msg(differ > 4900, "seed 43 matches seed 42 in %d of 5000", 5000 - differ);
	kv_source_close(s1);
	kv_source_close(s2);
	kv_source_close(s3);
}
END_TEST

/* Reads n arrivals; returns the gaps' mean and coefficient of variation. */
static void gap_moments(struct kv_source *s, int n, double *mean, double *cv)
{
	struct kv_arrival a;
	double sum = 0, sum2 = 0, prev = 0, g;
	int i;

	for (i = 0; i < n; i++) {
		EXPECT(next_ok(s, &a) == 1, "stream ended early");
		g = (double)a.t_ns / 1e9 - prev;
		prev = (double)a.t_ns / 1e9;
		sum += g;
		sum2 += g * g;
	}
	*mean = sum / n;
	*cv = sqrt(sum2 / n - *mean * *mean) / *mean;
}

START_TEST(test_poisson_mean_gap)
{
	struct kv_source *s;
	double mean, cv;

	base_spec();
	spec.requests = 100000;
	spec.rate_per_s = 20;
	s = open_ok(7);
	gap_moments(s, 100000, &mean, &cv);
	ck_assert_msg(fabs(mean - 0.05) < 0.03 * 0.05, "poisson mean gap %g, want 0.05", mean);
	ck_assert_msg(fabs(cv - 1) < 0.05, "poisson gap cv %g, want 1", cv);
	kv_source_close(s);
}
END_TEST

START_TEST(test_gamma_cv)
{
	const double cvs[] = { 0.5, 2, 4 };
	struct kv_source *s;
	double mean, cv;
	int i;

	for (i = 0; i < 3; i++) {
		base_spec();
		spec.requests = 100000;
		spec.arrival = KV_ARRIVAL_GAMMA;
		spec.rate_per_s = 5;
		spec.cv = cvs[i];
		s = open_ok(11);
		gap_moments(s, 100000, &mean, &cv);
		ck_assert_msg(fabs(mean - 0.2) < 0.03 * 0.2, "gamma cv %g: mean gap %g, want 0.2",
			      cvs[i], mean);
		ck_assert_msg(fabs(cv - cvs[i]) < 0.05 * cvs[i], "gamma gap cv %g, want %g", cv,
			      cvs[i]);
		kv_source_close(s);
	}
}
END_TEST

/* cv 0: constant gaps of 0.1 s; duration 10 s keeps 0.1 .. 9.9 (10.0 is at the end). */
START_TEST(test_duration_limit)
{
	struct kv_source *s;
	struct kv_arrival a;
	int n = 0;

	base_spec();
	spec.requests = 0;
	spec.duration_ns = 10 * KV_NS_PER_S;
	spec.arrival = KV_ARRIVAL_GAMMA;
	spec.cv = 0;
	s = open_ok(1);
	while (next_ok(s, &a) == 1) {
		n++;
		EXPECT(a.t_ns == (kv_ns)n * 100 * KV_NS_PER_MS, "arrival %d at %llu ns", n,
		       (unsigned long long)a.t_ns);
	}
	ck_assert_int_eq(n, 99);
	ck_assert_int_eq(next_ok(s, &a), 0);
	kv_source_close(s);
}
END_TEST

START_TEST(test_requests_limit)
{
	struct kv_source *s;
	struct kv_arrival a;
	uint64_t n = 0;

	base_spec();
	spec.requests = 123;
	spec.duration_ns = 1000 * KV_NS_PER_S;
	s = open_ok(3);
	while (next_ok(s, &a) == 1) {
		EXPECT(a.id == n, "id %llu, want %llu", (unsigned long long)a.id,
		       (unsigned long long)n);
		EXPECT(a.prompt_tokens == 100 && a.output_tokens == 10 && !a.origin_file &&
			       a.origin_line == 0 && a.n_hashes == 0,
		       "arrival %llu: %llu/%llu tokens", (unsigned long long)n,
		       (unsigned long long)a.prompt_tokens, (unsigned long long)a.output_tokens);
		n++;
	}
	ck_assert_uint_eq(n, 123);
	ck_assert_int_eq(next_ok(s, &a), 0);
	kv_source_close(s);
}
END_TEST

START_TEST(test_lognormal_mean)
{
	struct kv_source *s;
	struct kv_arrival a;
	double sp = 0, so = 0;
	uint64_t maxo = 0, mino = UINT64_MAX;
	int i, n = 100000;

	base_spec();
	spec.requests = (uint64_t)n;
	spec.lengths.kind = KV_LEN_LOGNORMAL;
	spec.lengths.prompt_mean = 2000;
	spec.lengths.prompt_sigma = 1;
	spec.lengths.output_mean = 3;
	spec.lengths.output_sigma = 2;
	spec.lengths.output_clip = 50;
	s = open_ok(5);
	for (i = 0; i < n; i++) {
		EXPECT(next_ok(s, &a) == 1, "stream ended early");
		sp += (double)a.prompt_tokens;
		so += (double)a.output_tokens;
		maxo = KV_MAX(maxo, a.output_tokens);
		mino = KV_MIN(mino, a.output_tokens);
		EXPECT(a.prompt_tokens >= 1, "prompt 0");
	}
	ck_assert_msg(fabs(sp / n - 2000) < 0.03 * 2000, "lognormal prompt mean %g, want 2000",
		      sp / n);
	ck_assert_msg(mino == 1 && maxo == 50, "clipped output in [%llu, %llu], want [1, 50]",
		      (unsigned long long)mino, (unsigned long long)maxo);
	(void)so;
	kv_source_close(s);
}
END_TEST

START_TEST(test_uniform_bounds)
{
	struct kv_source *s;
	struct kv_arrival a;
	int seen_p[4] = { 0 }, seen_o[3] = { 0 }, i;

	base_spec();
	spec.requests = 10000;
	spec.lengths.kind = KV_LEN_UNIFORM;
	spec.lengths.prompt_min = 5;
	spec.lengths.prompt_max = 8;
	spec.lengths.output_min = 0;
	spec.lengths.output_max = 2;
	s = open_ok(9);
	for (i = 0; i < 10000; i++) {
		EXPECT(next_ok(s, &a) == 1, "stream ended early");
		EXPECT(a.prompt_tokens >= 5 && a.prompt_tokens <= 8, "prompt %llu",
		       (unsigned long long)a.prompt_tokens);
		EXPECT(a.output_tokens <= 2, "output %llu", (unsigned long long)a.output_tokens);
		seen_p[a.prompt_tokens - 5]++;
		seen_o[a.output_tokens]++;
	}
	for (i = 0; i < 4; i++)
		ck_assert_msg(seen_p[i] > 2200, "prompt %d drawn %d times of 10000", i + 5,
			      seen_p[i]);
	for (i = 0; i < 3; i++)
		ck_assert_msg(seen_o[i] > 3000, "output %d drawn %d times", i, seen_o[i]);
	kv_source_close(s);
}
END_TEST

START_TEST(test_tenant_shares)
{
	const double share[3] = { 1, 2, 7 };
	struct kv_source *s;
	struct kv_arrival a;
	int count[3] = { 0 }, i, n = 500000;

	base_spec();
	spec.requests = (uint64_t)n;
	spec.n_tenants = 3;
	for (i = 0; i < 3; i++) {
		spec.tenants[i] = spec.tenants[0];
		spec.tenants[i].share = share[i];
	}
	s = open_ok(13);
	for (i = 0; i < n; i++) {
		EXPECT(next_ok(s, &a) == 1, "stream ended early");
		EXPECT(a.tenant < 3, "tenant %u", a.tenant);
		count[a.tenant]++;
	}
	for (i = 0; i < 3; i++) {
		double got = (double)count[i] / n, want = share[i] / 10;

		ck_assert_msg(fabs(got - want) < 0.02 * want, "tenant %d share %g, want %g", i,
			      got, want);
	}
	kv_source_close(s);
}
END_TEST

/* A tenant's override; zero tenants is one implicit tenant. */
START_TEST(test_tenant_override)
{
	struct kv_source *s;
	struct kv_arrival a;
	int i;

	base_spec();
	spec.n_tenants = 2;
	spec.tenants[1] = spec.tenants[0];
	spec.tenants[1].has_lengths = 1;
	spec.tenants[1].lengths.kind = KV_LEN_FIXED;
	spec.tenants[1].lengths.prompt = 7;
	spec.tenants[1].lengths.output = 0;
	s = open_ok(17);
	for (i = 0; i < 1000; i++) {
		EXPECT(next_ok(s, &a) == 1, "stream ended early");
		EXPECT(a.prompt_tokens == (a.tenant ? 7u : 100u), "tenant %u prompt %llu", a.tenant,
		       (unsigned long long)a.prompt_tokens);
	}
	kv_source_close(s);
	spec.n_tenants = 0;
	s = open_ok(17);
	EXPECT(next_ok(s, &a) == 1, "stream ended early");
	ck_assert(a.tenant == 0 && a.prompt_tokens == 100);
	kv_source_close(s);
}
END_TEST

static const kv_ns vidur_t[4] = { 0, 8442946, 659979905, 2159979904 };
static const uint64_t vidur_prompt[4] = { 395, 1030, 9, 9 };
static const unsigned long vidur_line[4] = { 2, 3, 5, 6 };

START_TEST(test_trace_time_scale)
{
	const double scales[2] = { 1, 0.5 };
	struct kv_source *s;
	struct kv_arrival a;
	int i, k;

	for (k = 0; k < 2; k++) {
		base_spec();
		spec.arrival = KV_ARRIVAL_TRACE;
		spec.time_scale = scales[k];
		snprintf(spec.trace_path, sizeof(spec.trace_path), "%s",
			 fixture("vidur_small.csv"));
		s = open_ok(1);
		for (i = 0; i < 4; i++) {
			EXPECT(next_ok(s, &a) == 1, "stream ended early");
			ck_assert_uint_eq(a.t_ns, (kv_ns)llround((double)vidur_t[i] * scales[k]));
			ck_assert_uint_eq(a.prompt_tokens, vidur_prompt[i]);
			ck_assert_uint_eq(a.origin_line, vidur_line[i]);
			ck_assert_str_eq(a.origin_file, spec.trace_path);
		}
		ck_assert_int_eq(next_ok(s, &a), 0); /* EOF ends the stream */
		kv_source_close(s);
	}
}
END_TEST

/* lengths_set: the trace gives times, the distribution the lengths. */
START_TEST(test_trace_lengths_set)
{
	struct kv_source *s;
	struct kv_arrival a;
	int i;

	base_spec();
	spec.arrival = KV_ARRIVAL_TRACE;
	snprintf(spec.trace_path, sizeof(spec.trace_path), "%s", fixture("mooncake_small.jsonl"));
	s = open_ok(1);
	EXPECT(next_ok(s, &a) == 1, "stream ended early");
	ck_assert(a.prompt_tokens == 6758 && a.n_hashes == 3 && a.hashes[2] == 2);
	kv_source_close(s);
	spec.lengths_set = 1;
	s = open_ok(1);
	for (i = 0; i < 4; i++) {
		EXPECT(next_ok(s, &a) == 1, "stream ended early");
		ck_assert(a.prompt_tokens == 100 && a.output_tokens == 10 && a.n_hashes == 0);
		ck_assert_uint_gt(a.origin_line, 0);
	}
	ck_assert_int_eq(next_ok(s, &a), 0);
	kv_source_close(s);
}
END_TEST

static const uint64_t len_prompt[3] = { 74, 290, 1 };

/* A 3-row length file cycles; two tenants each cycle their own copy. */
START_TEST(test_length_trace_cycles)
{
	struct kv_source *s;
	struct kv_arrival a;
	int seen[2] = { 0 }, i;

	base_spec();
	spec.requests = 10;
	set_trace_lengths(&spec.lengths, fixture("lengths_small.csv"));
	s = open_ok(1);
	for (i = 0; i < 10; i++) {
		EXPECT(next_ok(s, &a) == 1, "stream ended early");
		ck_assert_uint_eq(a.prompt_tokens, len_prompt[i % 3]);
		ck_assert_uint_eq(a.origin_line, (unsigned long)(i % 3) + 2);
	}
	kv_source_close(s);
	spec.requests = 100;
	spec.n_tenants = 2;
	spec.tenants[1] = spec.tenants[0];
	for (i = 0; i < 2; i++) {
		spec.tenants[i].has_lengths = 1;
		set_trace_lengths(&spec.tenants[i].lengths, fixture("lengths_small.csv"));
	}
	memset(&spec.lengths, 0, sizeof(spec.lengths)); /* unused: not checked */
	s = open_ok(1);
	for (i = 0; i < 100; i++) {
		EXPECT(next_ok(s, &a) == 1, "stream ended early");
		EXPECT(a.prompt_tokens == len_prompt[seen[a.tenant] % 3], "tenant %u row %d: %llu",
		       a.tenant, seen[a.tenant], (unsigned long long)a.prompt_tokens);
		seen[a.tenant]++;
	}
	ck_assert(seen[0] > 20 && seen[1] > 20);
	kv_source_close(s);
}
END_TEST

START_TEST(test_bad_specs)
{
	char empty[] = "/tmp/kvsim_src_XXXXXX";
	int fd;

	base_spec();
	spec.rate_per_s = 0;
	expect_open_error(KV_EINVAL, "rate_per_s");
	base_spec();
	spec.requests = 0;
	expect_open_error(KV_EINVAL, "requests");
	base_spec();
	spec.lengths.prompt = 0;
	expect_open_error(KV_EINVAL, "lengths.prompt");
	base_spec();
	spec.tenants[0].share = -1;
	expect_open_error(KV_EINVAL, "tenants[0].share");
	base_spec();
	spec.lengths.kind = KV_LEN_UNIFORM;
	spec.lengths.prompt_min = 9;
	spec.lengths.prompt_max = 8;
	expect_open_error(KV_EINVAL, "lengths.prompt_min");
	base_spec();
	spec.lengths.kind = KV_LEN_LOGNORMAL;
	spec.lengths.prompt_mean = 0;
	expect_open_error(KV_EINVAL, "lengths.prompt_mean");
	base_spec();
	spec.arrival = KV_ARRIVAL_GAMMA;
	spec.cv = -1;
	expect_open_error(KV_EINVAL, "cv");
	base_spec();
	set_trace_lengths(&spec.lengths, "/nonexistent/lengths.csv");
	expect_open_error(KV_ENOENT, "");
	base_spec();
	spec.arrival = KV_ARRIVAL_TRACE;
	snprintf(spec.trace_path, sizeof(spec.trace_path), "%s", fixture("lengths_small.csv"));
	expect_open_error(KV_EINVAL, "trace_path");
	spec.time_scale = 0;
	expect_open_error(KV_EINVAL, "time_scale");
	fd = mkstemp(empty);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "num_prefill_tokens,num_decode_tokens\n", 37), 37);
	close(fd);
	base_spec();
	set_trace_lengths(&spec.lengths, empty);
	expect_open_error(KV_EINVAL, "");
	unlink(empty);
}
END_TEST

/* Writes text to a fresh temporary file named into path (a mkstemp template). */
static void write_temp(char *path, const char *text)
{
	int fd = mkstemp(path);
	size_t n = strlen(text);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
	close(fd);
}

/*
 * A trace with a header and no rows is the same error for arrivals as for
 * lengths (not a zero-request run for one and an error for the other).
 */
START_TEST(test_empty_trace_both_ways)
{
	char path[] = "/tmp/kvsim_src_XXXXXX";
	struct kv_source *s = NULL;
	struct kv_diag d = { 0 };

	write_temp(path, "arrived_at,num_prefill_tokens,num_decode_tokens\n");
	base_spec();
	spec.arrival = KV_ARRIVAL_TRACE;
	snprintf(spec.trace_path, sizeof(spec.trace_path), "%s", path);
	ck_assert_int_eq(kv_source_open(&spec, 1, &s, &d), KV_EINVAL);
	ck_assert_msg(!strcmp(d.file, path) && strstr(d.msg, "no rows: expected at least one"),
		      "arrivals: %s: %s", d.file, d.msg);
	base_spec();
	set_trace_lengths(&spec.lengths, path);
	ck_assert_int_eq(kv_source_open(&spec, 1, &s, &d), KV_EINVAL);
	ck_assert_msg(!strcmp(d.file, path) && strstr(d.msg, "no rows: expected at least one"),
		      "lengths: %s: %s", d.file, d.msg);
	ck_assert_ptr_null(s);
	unlink(path);
}
END_TEST

/*
 * horizon_ns: a trace row at or past it is an error naming the row (a stray
 * far-future timestamp must not make a run sample an idle cluster for
 * centuries); rows before it, and duration_ns ending the stream first, are fine.
 */
/*
 * A request's priority (source.h): its arrival row's, else its lengths
 * row's, else its tenant's request_priority; no draw, so the stream's other
 * fields do not change.
 */
START_TEST(test_priority_precedence)
{
	char arr[] = "/tmp/kvsim_prio_arr_XXXXXX", len[] = "/tmp/kvsim_prio_len_XXXXXX";
	char plain[] = "/tmp/kvsim_prio_plain_XXXXXX";
	struct kv_source *s;
	struct kv_arrival a;

	write_temp(arr, "arrived_at,num_prefill_tokens,num_decode_tokens,priority\n0,5,1,7\n1,5,1,-3\n");
	write_temp(plain, "arrived_at,num_prefill_tokens,num_decode_tokens\n0,5,1\n1,5,1\n");
	write_temp(len, "num_prefill_tokens,num_decode_tokens,priority\n9,2,4\n");
	base_spec();
	spec.tenants[0].request_priority = 11;
	s = open_ok(1); /* generated: the tenant's */
	ck_assert_int_eq(next_ok(s, &a), 1);
	ck_assert_int_eq(a.priority, 11);
	kv_source_close(s);
	spec.arrival = KV_ARRIVAL_TRACE;
	snprintf(spec.trace_path, sizeof(spec.trace_path), "%s", arr);
	s = open_ok(1); /* the arrival row's, its lengths too */
	ck_assert(next_ok(s, &a) == 1 && a.priority == 7);
	ck_assert(next_ok(s, &a) == 1 && a.priority == -3);
	kv_source_close(s);
	spec.lengths_set = 1;
	set_trace_lengths(&spec.lengths, len);
	s = open_ok(1); /* both rows have one: the arrival row's */
	ck_assert(next_ok(s, &a) == 1 && a.priority == 7 && a.prompt_tokens == 9);
	kv_source_close(s);
	snprintf(spec.trace_path, sizeof(spec.trace_path), "%s", plain);
	s = open_ok(1); /* the arrival row has none: the lengths row's */
	ck_assert(next_ok(s, &a) == 1 && a.priority == 4);
	kv_source_close(s);
	spec.lengths.kind = KV_LEN_FIXED;
	spec.lengths.prompt = 100;
	spec.lengths.output = 10;
	s = open_ok(1); /* no row has one: the tenant's */
	ck_assert(next_ok(s, &a) == 1 && a.priority == 11);
	kv_source_close(s);
	unlink(arr);
	unlink(len);
	unlink(plain);
}
END_TEST

START_TEST(test_trace_horizon)
{
	char path[] = "/tmp/kvsim_src_XXXXXX";
	struct kv_source *s;
	struct kv_arrival a;
	struct kv_diag d = { 0 };

	write_temp(path, "TIMESTAMP,ContextTokens,GeneratedTokens\n"
			 "2023-11-16 18:17:03,10,1\n2023-11-16 18:17:04,10,1\n"
			 "2200-01-01 00:00:00,10,1\n");
	base_spec();
	spec.arrival = KV_ARRIVAL_TRACE;
	spec.requests = 0;
	spec.horizon_ns = KV_NS_PER_S * KV_MAX_SAMPLES; /* a 1 s sample interval */
	snprintf(spec.trace_path, sizeof(spec.trace_path), "%s", path);
	s = open_ok(1);
	ck_assert_int_eq(next_ok(s, &a), 1);
	ck_assert_int_eq(next_ok(s, &a), 1);
	ck_assert_int_eq(kv_source_next(s, &a, &d), KV_ERANGE);
	ck_assert_msg(!strcmp(d.file, path) && d.line == 4 && strstr(d.msg, "beyond the horizon"),
		      "%s:%lu: %s", d.file, d.line, d.msg);
	kv_source_close(s);
	spec.duration_ns = 10 * KV_NS_PER_S; /* the duration ends it before the stray row */
	s = open_ok(1);
	ck_assert_int_eq(next_ok(s, &a), 1);
	ck_assert_int_eq(next_ok(s, &a), 1);
	ck_assert_int_eq(next_ok(s, &a), 0);
	kv_source_close(s);
	unlink(path);
}
END_TEST

/* The real Mooncake and Azure traces replay to their last row. */
START_TEST(test_real_trace_replay)
{
	const char *names[2] = { "conversation_trace.jsonl", "AzureLLMInferenceTrace_code.csv" };
	const uint64_t rows[2] = { 12031, 8819 };
	struct kv_source *s;
	struct kv_arrival a;
	uint64_t n;
	kv_ns prev;
	int k;

	for (k = 0; k < 2; k++) {
		const char *path = real_trace(names[k]);

		if (!path)
			return; /* KVSIM_TRACES absent */
		base_spec();
		spec.requests = 0;
		spec.arrival = KV_ARRIVAL_TRACE;
		spec.time_scale = 0.25;
		snprintf(spec.trace_path, sizeof(spec.trace_path), "%s", path);
		s = open_ok(1);
		for (n = 0, prev = 0; next_ok(s, &a) == 1; n++, prev = a.t_ns)
			EXPECT(a.t_ns >= prev, "time went back at arrival %llu",
			       (unsigned long long)n);
		ck_assert_uint_eq(n, rows[k]);
		kv_source_close(s);
	}
}
END_TEST

static Suite *source_suite(void)
{
	Suite *s = suite_create("source");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_same_seed_same_stream);
	tcase_add_test(tc, test_poisson_mean_gap);
	tcase_add_test(tc, test_gamma_cv);
	tcase_add_test(tc, test_duration_limit);
	tcase_add_test(tc, test_requests_limit);
	tcase_add_test(tc, test_lognormal_mean);
	tcase_add_test(tc, test_uniform_bounds);
	tcase_add_test(tc, test_tenant_shares);
	tcase_add_test(tc, test_tenant_override);
	tcase_add_test(tc, test_trace_time_scale);
	tcase_add_test(tc, test_trace_lengths_set);
	tcase_add_test(tc, test_length_trace_cycles);
	tcase_add_test(tc, test_bad_specs);
	tcase_add_test(tc, test_real_trace_replay);
	tcase_add_test(tc, test_empty_trace_both_ways);
	tcase_add_test(tc, test_trace_horizon);
	tcase_add_test(tc, test_priority_precedence);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(source_suite());
	int failures;

	gsl_set_error_handler_off();
	srunner_run_all(sr, CK_NORMAL);
	failures = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failures ? 1 : 0;
}
