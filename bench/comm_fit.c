/*
 * comm_fit.c -- fits the collective model of sim/comm.c to the published
 * timings of configs/comm/nccl-measured.csv and prints its held-out error
 * (docs/perf-model.md, "Collectives against measured NCCL").
 *
 * Every prediction is the simulator's own: the rows are costed by sim/comm.c
 * (kv_comm_allreduce_init_fit, kv_comm_allreduce_set_car_fit,
 * kv_comm_allreduce_ns, kv_comm_alltoall_fit_ns) under a struct kv_comm_fit,
 * so the fit varies the terms of the very arithmetic a run evaluates.
 *
 * Split: within each (collective, impl, GPU, topology, ranks) series the rows
 * are taken in size order (ties in file order) and every third one (the 2nd,
 * 5th, ...) is held out; the custom all-reduce rows off H100 (A100) are all
 * held out: fitted on H100, they check that the per-byte term scales with the
 * link's bus bandwidth.
 *
 * Fit, on the rows not held out:
 *   NCCL all-reduce: the latency scale lat[p] and bandwidth scale bw[p] of
 *     each protocol p, by coordinate descent: 4 passes over lat LL, LL128,
 *     Simple then bw LL, LL128, Simple, each set to the first minimum over the
 *     grid 0.50, 0.55, .. 2.00 of the sum of |log(predicted / measured)|, the
 *     other five held.
 *   all-to-all: the grouped latency is the median (the upper one of an even
 *     count) of the measured times up to 64 KiB; the bus-bandwidth share is
 *     the mean over the rows above 64 KiB of (n-1)/n * B / busbw / (t -
 *     latency), (n-1)/n * B / busbw being the model's time at latency 0 and
 *     share 1.
 *   custom all-reduce (vLLM, SGLang): a least-squares line t = lat + k * x
 *     per kernel, one-shot and two-shot as the model switches between them,
 *     x being the model's time at lat 0 and k 1 ((n-1) B / busbw one-shot,
 *     2(n-1)/n B / busbw two-shot).
 * Each constant is then rounded to the precision --params prints (scales and
 * the all-to-all latency 2 decimals, the rest 3): the compiled constants.
 *
 * Error = predicted / measured - 1 at the rounded constants ("after"), and
 * "before" under NCCL's own model (scales 1, all-to-all as NCCL's Simple
 * ring, the engines' custom all-reduce costed as NCCL).
 *
 * usage: comm_fit [--table | --params | --check] [-d DATA]
 *   --table   the held-out error table of docs/perf-model.md (the default)
 *   --params  the constants as the block of #defines in sim/comm.c
 *   --check   exit 1, printing both blocks, unless the constants compiled
 *             into sim/comm.c (kv_comm_fit_shipped) print as the fit's
 * DATA defaults to configs/comm/nccl-measured.csv.  Exit 2 on bad input.
 */
#include "comm.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum coll { C_ALLREDUCE, C_ALLTOALL };

/* One published timing. */
struct row {
	char coll_s[16], impl_s[16], gpu[16], topo[24]; /* as written in the file */
	enum coll coll; /* all-reduce or all-to-all */
	int car; /* KV_CAR_OFF for NCCL, else whose custom all-reduce */
	enum kv_link_type link; /* the topology as the simulator parses it */
	uint32_t ranks; /* GPUs */
	double bytes; /* per rank, bytes */
	double time_us; /* measured, us per call */
	double busbw_Bps; /* the link's bus bandwidth, bytes/s */
	int held_out; /* 1: never enters the fit */
	size_t line; /* in the data file */
};

#define MAX_ROWS 512
#define LINE_MAX_CHARS 4096
#define N_FIELDS 7 /* the ones read; source and note follow */

static struct row rows[MAX_ROWS]; /* in file order, which every sum follows */
static size_t n_rows;
static size_t order[MAX_ROWS]; /* indices of rows by series, then size, then file order */

/*
 * Bus bandwidth nccl-tests reaches per (GPU, topology), bytes/s
 * (docs/perf-model.md "Link types"): NVLink4 370 GB/s (H100, H20), NCCL's sm80
 * cap 235 GB/s (A100), an NVLink-bridged H100 PCIe pair 116 GB/s.
 */
static const struct {
	const char *gpu, *topo;
	double busbw_Bps;
} busbw_of[] = {
	{ "H20", "nvswitch", 370e9 },
	{ "H100", "nvswitch", 370e9 },
	{ "A100", "nvswitch", 235e9 },
	{ "H100-PCIe", "nvlink-bridge", 116e9 },
};

static const char *const impl_names[KV_CAR_N] = { "nccl", "vllm-custom", "sglang-custom" };

static void die_at(const char *path, size_t line, const char *field, const char *value,
		   const char *expected)
{
	fprintf(stderr, "%s:%zu: %s: bad value '%s' (expected %s)\n", path, line, field, value,
		expected);
	exit(2);
}

/*
 * Splits a CSV line in place into at most max fields ("..." quoting with ""
 * for a quote); returns the count, or -1 on an unterminated quote.
 */
static int split_csv(char *s, char **f, int max)
{
	int n = 0;
	char *w;

	while (n < max) {
		f[n++] = w = s;
		if (*s == '"') {
			for (s++;; s++) {
				if (!*s)
					return -1;
				if (*s == '"' && s[1] != '"')
					break;
				*w++ = *s == '"' ? *s++ : *s;
			}
			s++;
		}
		while (*s && *s != ',')
			*w++ = *s++;
		if (!*s) {
			*w = '\0';
			break;
		}
		*w = '\0';
		s++;
	}
	return n;
}

static void copy_field(char *dst, size_t cap, const char *s, const char *path, size_t line,
		       const char *field)
{
	if (strlen(s) >= cap || !*s)
		die_at(path, line, field, s, "a non-empty name of a few characters");
	memcpy(dst, s, strlen(s) + 1);
}

static double parse_pos(const char *s, const char *path, size_t line, const char *field)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || !isfinite(v))
		die_at(path, line, field, s, "a positive number");
	return v;
}

/* Fills r from the fields of one data line; exits 2 on a bad one. */
static void parse_row(struct row *r, char **f, const char *path, size_t line)
{
	size_t k;
	double v;
	int i;

	copy_field(r->coll_s, sizeof(r->coll_s), f[0], path, line, "collective");
	copy_field(r->impl_s, sizeof(r->impl_s), f[1], path, line, "impl");
	copy_field(r->gpu, sizeof(r->gpu), f[2], path, line, "gpu");
	copy_field(r->topo, sizeof(r->topo), f[3], path, line, "topology");
	if (!strcmp(f[0], "allreduce"))
		r->coll = C_ALLREDUCE;
	else if (!strcmp(f[0], "alltoall"))
		r->coll = C_ALLTOALL;
	else
		die_at(path, line, "collective", f[0], "allreduce or alltoall");
	for (i = 0; i < KV_CAR_N && strcmp(f[1], impl_names[i]); i++)
		;
	if (i == KV_CAR_N || (i != KV_CAR_OFF && r->coll != C_ALLREDUCE))
		die_at(path, line, "impl", f[1], "nccl, or vllm-custom or sglang-custom for an allreduce");
	r->car = i;
	if (kv_link_parse(f[3], &r->link))
		die_at(path, line, "topology", f[3], kv_link_names());
	for (k = 0; k < sizeof(busbw_of) / sizeof(busbw_of[0]); k++)
		if (!strcmp(f[2], busbw_of[k].gpu) && !strcmp(f[3], busbw_of[k].topo))
			break;
	if (k == sizeof(busbw_of) / sizeof(busbw_of[0]))
		die_at(path, line, "gpu, topology", f[2],
		       "H20/H100/A100 with nvswitch or H100-PCIe with nvlink-bridge");
	r->busbw_Bps = busbw_of[k].busbw_Bps;
	v = parse_pos(f[4], path, line, "ranks");
	if (v < 2 || v > 64 || v != floor(v))
		die_at(path, line, "ranks", f[4], "a whole number of GPUs from 2 to 64");
	r->ranks = (uint32_t)v;
	r->bytes = parse_pos(f[5], path, line, "bytes");
	r->time_us = parse_pos(f[6], path, line, "time_us");
	r->line = line;
}

/* Reads path's rows (after its '#' comments and header); exits 2 on bad input. */
static void load(const char *path)
{
	static const char header[] = "collective,impl,gpu,topology,ranks,bytes,time_us,";
	char buf[LINE_MAX_CHARS], *f[N_FIELDS];
	FILE *fp = fopen(path, "r");
	size_t line = 0;
	int seen_header = 0;

	if (!fp) {
		fprintf(stderr, "comm_fit: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while (fgets(buf, sizeof(buf), fp)) {
		line++;
		if (!strchr(buf, '\n') && !feof(fp))
			die_at(path, line, "line", "...", "a line under 4096 characters");
		buf[strcspn(buf, "\r\n")] = '\0';
		if (buf[0] == '#' || !buf[0])
			continue;
		if (!seen_header) {
			if (strncmp(buf, header, sizeof(header) - 1))
				die_at(path, line, "header", buf, header);
			seen_header = 1;
			continue;
		}
		if (n_rows == MAX_ROWS)
			die_at(path, line, "rows", "too many", "at most 512 rows");
		if (split_csv(buf, f, N_FIELDS) < N_FIELDS)
			die_at(path, line, "line", buf, "collective,impl,gpu,topology,ranks,bytes,time_us,...");
		parse_row(&rows[n_rows++], f, path, line);
	}
	if (ferror(fp) || fclose(fp) || !n_rows) {
		fprintf(stderr, "comm_fit: %s: no rows read\n", path);
		exit(2);
	}
}

/* Orders indices of rows by series (collective, impl, GPU, topology, ranks), size, file order. */
static int by_series(const void *a, const void *b)
{
	const struct row *x = &rows[*(const size_t *)a], *y = &rows[*(const size_t *)b];
	int c;

	if ((c = strcmp(x->coll_s, y->coll_s)) || (c = strcmp(x->impl_s, y->impl_s)) ||
	    (c = strcmp(x->gpu, y->gpu)) || (c = strcmp(x->topo, y->topo)))
		return c;
	if (x->ranks != y->ranks)
		return x->ranks < y->ranks ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int same_series(const struct row *x, const struct row *y)
{
	return !strcmp(x->coll_s, y->coll_s) && !strcmp(x->impl_s, y->impl_s) &&
	       !strcmp(x->gpu, y->gpu) && !strcmp(x->topo, y->topo) && x->ranks == y->ranks;
}

/*
 * Fills order (series by series, each by size) and marks the held-out rows.
 * The table's groups (collective, impl, "GPU, topology", ranks) are the same
 * series in the same order: ',' sorts before every character of a GPU name.
 */
static void split(void)
{
	struct row *r;
	size_t i, k = 0;

	for (i = 0; i < n_rows; i++)
		order[i] = i;
	qsort(order, n_rows, sizeof(order[0]), by_series);
	for (i = 0; i < n_rows; i++) {
		r = &rows[order[i]];
		k = i && same_series(&rows[order[i - 1]], r) ? k + 1 : 0;
		r->held_out = k % 3 == 1 || (r->car != KV_CAR_OFF && strcmp(r->gpu, "H100"));
	}
}

/*
 * sim/comm.c's time for r under fit, us: an all-to-all, else an all-reduce
 * with impl's custom kernels (KV_CAR_OFF: NCCL only); *shot, when given, is
 * the custom kernel the model picks (0 one-shot, 1 two-shot).
 */
static double predict_us(const struct row *r, const struct kv_comm_fit *fit, int impl, int *shot)
{
	struct kv_link l = { .type = r->link, .busbw_Bps = r->busbw_Bps };
	struct kv_comm_car car = { .impl = impl, .max_bytes = DBL_MAX };
	struct kv_comm_allreduce ar;

	if (r->coll == C_ALLTOALL)
		return kv_comm_alltoall_fit_ns(&l, r->bytes, r->ranks, fit) / 1e3;
	kv_comm_allreduce_init_fit(&ar, &l, r->ranks, fit);
	if (impl != KV_CAR_OFF && !kv_comm_allreduce_set_car_fit(&ar, &l, &car, fit)) {
		fprintf(stderr, "comm_fit: line %zu: no %s over %u GPUs of %s\n", r->line,
			impl_names[impl], r->ranks, r->topo);
		exit(2);
	}
	if (shot)
		*shot = r->bytes < ar.car_switch_bytes ? 0 : 1;
	return kv_comm_allreduce_ns(&ar, r->bytes) / 1e3;
}

static int is_nccl_allreduce_fit(const struct row *r)
{
	return r->coll == C_ALLREDUCE && r->car == KV_CAR_OFF && !r->held_out;
}

/* The NCCL all-reduce objective: sum over the fit rows of |log(predicted / measured)|. */
static double nccl_loss(const struct kv_comm_fit *fit)
{
	double s = 0.0;
	size_t i;

	for (i = 0; i < n_rows; i++)
		if (is_nccl_allreduce_fit(&rows[i]))
			s += fabs(log(predict_us(&rows[i], fit, KV_CAR_OFF, NULL) / rows[i].time_us));
	return s;
}

/* Coordinate descent of fit->lat and fit->bw from all 1 (see the header). */
static void fit_nccl(struct kv_comm_fit *fit)
{
	double *coord[2 * KV_COMM_N_PROTOS], best_g, best, loss, g;
	int pass, c, i;

	for (c = 0; c < KV_COMM_N_PROTOS; c++) {
		coord[c] = &fit->lat[c];
		coord[KV_COMM_N_PROTOS + c] = &fit->bw[c];
		fit->lat[c] = fit->bw[c] = 1.0;
	}
	for (pass = 0; pass < 4; pass++) {
		for (c = 0; c < 2 * KV_COMM_N_PROTOS; c++) {
			best = best_g = 0.0;
			for (i = 0; i <= 30; i++) {
				*coord[c] = g = 0.5 + 0.05 * i;
				loss = nccl_loss(fit);
				if (i == 0 || loss < best) {
					best = loss;
					best_g = g;
				}
			}
			*coord[c] = best_g;
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The all-to-all latency and bus-bandwidth share (see the header). */
static void fit_alltoall(struct kv_comm_fit *fit)
{
	struct kv_comm_fit unit = *fit;
	double small[MAX_ROWS], lat_us, eff = 0.0;
	size_t i, n_small = 0, n_big = 0;

	for (i = 0; i < n_rows; i++)
		if (rows[i].coll == C_ALLTOALL && !rows[i].held_out && rows[i].bytes <= 65536)
			small[n_small++] = rows[i].time_us;
	if (!n_small) {
		fprintf(stderr, "comm_fit: no all-to-all row of 64 KiB or less to fit\n");
		exit(2);
	}
	qsort(small, n_small, sizeof(small[0]), cmp_double);
	lat_us = small[n_small / 2];
	unit.grouped = 1;
	unit.a2a_lat_us = 0.0;
	unit.a2a_eff = 1.0;
	for (i = 0; i < n_rows; i++) {
		if (rows[i].coll != C_ALLTOALL || rows[i].held_out || rows[i].bytes <= 65536)
			continue;
		eff += predict_us(&rows[i], &unit, KV_CAR_OFF, NULL) / (rows[i].time_us - lat_us);
		n_big++;
	}
	if (!n_big) {
		fprintf(stderr, "comm_fit: no all-to-all row over 64 KiB to fit\n");
		exit(2);
	}
	fit->grouped = 1;
	fit->a2a_lat_us = lat_us;
	fit->a2a_eff = eff / (double)n_big;
}

/* Least-squares line y = *a + *k * x through n points (x not all equal). */
static void lsq(const double *x, const double *y, size_t n, double *a, double *k)
{
	double mx = 0.0, my = 0.0, sxx = 0.0, sxy = 0.0;
	size_t i;

	for (i = 0; i < n; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= (double)n;
	my /= (double)n;
	for (i = 0; i < n; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		sxy += (x[i] - mx) * (y[i] - my);
	}
	*k = sxy / sxx;
	*a = my - *k * mx;
}

/* impl's one-shot and two-shot lines, fit->car[impl] = { lat1, k1, lat2, k2 }. */
static void fit_car(struct kv_comm_fit *fit, int impl)
{
	static double x[2][MAX_ROWS], y[2][MAX_ROWS];
	struct kv_comm_fit unit = *fit;
	size_t i, n[2] = { 0, 0 };
	double t;
	int s;

	unit.car[impl][0] = unit.car[impl][2] = 0.0;
	unit.car[impl][1] = unit.car[impl][3] = 1.0;
	for (i = 0; i < n_rows; i++) {
		if (rows[i].car != impl || rows[i].held_out)
			continue;
		t = predict_us(&rows[i], &unit, impl, &s);
		x[s][n[s]] = t;
		y[s][n[s]++] = rows[i].time_us;
	}
	for (s = 0; s < 2; s++) {
		if (n[s] < 2) {
			fprintf(stderr, "comm_fit: %s: fewer than 2 %s rows to fit\n", impl_names[impl],
				s ? "two-shot" : "one-shot");
			exit(2);
		}
		lsq(x[s], y[s], n[s], &fit->car[impl][2 * s], &fit->car[impl][2 * s + 1]);
	}
}

/* v rounded to `decimals` as printf prints it (what the compiled constant holds). */
static double rounded(double v, int decimals)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return strtod(buf, NULL);
}

/* The whole fit, each constant rounded to its printed precision. */
static void fit_all(struct kv_comm_fit *fit)
{
	int p, c, i;

	memset(fit, 0, sizeof(*fit));
	fit_nccl(fit);
	fit_alltoall(fit);
	fit_car(fit, KV_CAR_VLLM);
	fit_car(fit, KV_CAR_SGLANG);
	for (p = 0; p < KV_COMM_N_PROTOS; p++) {
		fit->lat[p] = rounded(fit->lat[p], 2);
		fit->bw[p] = rounded(fit->bw[p], 2);
	}
	fit->a2a_lat_us = rounded(fit->a2a_lat_us, 2);
	fit->a2a_eff = rounded(fit->a2a_eff, 3);
	for (c = KV_CAR_VLLM; c < KV_CAR_N; c++)
		for (i = 0; i < 4; i++)
			fit->car[c][i] = rounded(fit->car[c][i], 3);
}

/* The #define block of sim/comm.c for fit, into out (cap bytes). */
static void params_block(const struct kv_comm_fit *f, char *out, size_t cap)
{
	snprintf(out, cap,
		 "/* bench/comm_fit --params: begin */\n"
		 "#define COMM_FIT_LAT { %.2f, %.2f, %.2f } /* NCCL latency scale, LL LL128 Simple */\n"
		 "#define COMM_FIT_BW { %.2f, %.2f, %.2f } /* NCCL bandwidth scale, LL LL128 Simple */\n"
		 "#define COMM_FIT_A2A_LAT_US %.2f /* all-to-all and send/recv latency, us */\n"
		 "#define COMM_FIT_A2A_EFF %.3f /* all-to-all share of the bus bandwidth */\n"
		 "#define COMM_FIT_VLLM_CAR { %.3f, %.3f, %.3f, %.3f } /* lat1 us, k1, lat2 us, k2 */\n"
		 "#define COMM_FIT_SGLANG_CAR { %.3f, %.3f, %.3f, %.3f } /* lat1 us, k1, lat2 us, k2 */\n"
		 "/* bench/comm_fit --params: end */\n",
		 f->lat[0], f->lat[1], f->lat[2], f->bw[0], f->bw[1], f->bw[2], f->a2a_lat_us,
		 f->a2a_eff, f->car[KV_CAR_VLLM][0], f->car[KV_CAR_VLLM][1], f->car[KV_CAR_VLLM][2],
		 f->car[KV_CAR_VLLM][3], f->car[KV_CAR_SGLANG][0], f->car[KV_CAR_SGLANG][1],
		 f->car[KV_CAR_SGLANG][2], f->car[KV_CAR_SGLANG][3]);
}

/* The first of the largest |v| among sorted v[0..n). */
static double worst(const double *v, size_t n)
{
	double w = v[0];
	size_t i;

	for (i = 1; i < n; i++)
		if (fabs(v[i]) > fabs(w))
			w = v[i];
	return w;
}

/*
 * One table line for the series order[from..to) when it has held-out rows;
 * appends their |errors| to all_b and all_a (counted by *n_all).
 */
static void table_group(size_t from, size_t to, const struct kv_comm_fit *fit,
			const struct kv_comm_fit *nccl, double *all_b, double *all_a, size_t *n_all)
{
	double eb[MAX_ROWS], ea[MAX_ROWS];
	const struct row *r = &rows[order[from]], *h;
	size_t i, n = 0;

	for (i = from; i < to; i++) {
		h = &rows[order[i]];
		if (!h->held_out)
			continue;
		eb[n] = predict_us(h, nccl, KV_CAR_OFF, NULL) / h->time_us - 1.0;
		ea[n] = predict_us(h, fit, h->car, NULL) / h->time_us - 1.0;
		all_b[*n_all] = fabs(eb[n]);
		all_a[(*n_all)++] = fabs(ea[n]);
		n++;
	}
	if (!n)
		return;
	qsort(eb, n, sizeof(eb[0]), cmp_double);
	qsort(ea, n, sizeof(ea[0]), cmp_double);
	printf("| %s | %s | %s, %s | %u | %zu (%zu) | %+.0f%% | %+.0f%% | %+.0f%% |\n", r->coll_s,
	       r->impl_s, r->gpu, r->topo, r->ranks, to - from, n, 100.0 * eb[n / 2],
	       100.0 * ea[n / 2], 100.0 * worst(ea, n));
}

/* The held-out error table of docs/perf-model.md at fit. */
static void table(const struct kv_comm_fit *fit)
{
	static const struct kv_comm_fit nccl = { .lat = { 1, 1, 1 }, .bw = { 1, 1, 1 } };
	double all_b[MAX_ROWS], all_a[MAX_ROWS], hop[MAX_ROWS];
	size_t i, from = 0, n_all = 0, n_hop = 0;

	printf("| collective | implementation | GPU, topology | ranks | rows (held out) | "
	       "median error before | median error after | worst held-out after |\n"
	       "|---|---|---|---|---|---|---|---|\n");
	for (i = 1; i <= n_rows; i++) {
		if (i < n_rows && same_series(&rows[order[i - 1]], &rows[order[i]]))
			continue;
		table_group(from, i, fit, &nccl, all_b, all_a, &n_all);
		from = i;
	}
	for (i = 0; i < n_rows; i++)
		if (rows[i].held_out && rows[i].car == KV_CAR_OFF && rows[i].coll == C_ALLREDUCE &&
		    (!strcmp(rows[i].gpu, "H100") || !strcmp(rows[i].gpu, "H20")))
			hop[n_hop++] = predict_us(&rows[i], fit, KV_CAR_OFF, NULL) / rows[i].time_us - 1.0;
	if (!n_all || !n_hop) {
		fprintf(stderr, "comm_fit: no held-out rows\n");
		exit(2);
	}
	qsort(all_b, n_all, sizeof(all_b[0]), cmp_double);
	qsort(all_a, n_all, sizeof(all_a[0]), cmp_double);
	qsort(hop, n_hop, sizeof(hop[0]), cmp_double);
	printf("\nHeld-out rows: %zu; median |error| %.0f%% before, %.0f%% after.\n", n_all,
	       100.0 * all_b[n_all / 2], 100.0 * all_a[n_all / 2]);
	printf("Hopper NCCL all-reduce, held out: %zu rows, median error %+.0f%%, middle half "
	       "%+.0f%% to %+.0f%%.\n",
	       n_hop, 100.0 * hop[n_hop / 2], 100.0 * hop[n_hop / 4], 100.0 * hop[3 * n_hop / 4]);
}

static int usage(void)
{
	fprintf(stderr, "usage: comm_fit [--table | --params | --check] [-d DATA]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *data = "configs/comm/nccl-measured.csv", *mode = "--table";
	char got[2048], shipped[2048];
	struct kv_comm_fit fit;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-d") && i + 1 < argc)
			data = argv[++i];
		else if (!strcmp(argv[i], "--table") || !strcmp(argv[i], "--params") ||
			 !strcmp(argv[i], "--check"))
			mode = argv[i];
		else
			return usage();
	}
	load(data);
	split();
	fit_all(&fit);
	params_block(&fit, got, sizeof(got));
	if (!strcmp(mode, "--params")) {
		fputs(got, stdout);
	} else if (!strcmp(mode, "--table")) {
		table(&fit);
	} else {
		params_block(&kv_comm_fit_shipped, shipped, sizeof(shipped));
		if (strcmp(got, shipped)) {
			fprintf(stderr, "comm_fit: the constants compiled into sim/comm.c differ from "
					"the fit of %s\nsim/comm.c:\n%sthe fit (paste it there):\n%s",
				data, shipped, got);
			return 1;
		}
	}
	if (fflush(stdout) || ferror(stdout)) {
		perror("comm_fit: stdout");
		return 1;
	}
	return 0;
}
