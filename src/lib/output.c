/*
 * output.c -- CSV writers, the printed summary, atomic commit, progress; the
 * figures themselves come from sim/metrics.
 */
#include "output.h"
#include "chart.h"
#include "csv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { F_REQ, F_TS, F_SUM, F_TEN, F_TSER, F_PNG, F_HEALTH };
static const char *const file_names[KV_OUT_FILES] = { "requests.csv", "timeseries.csv",
						      "summary.csv", "tenants.csv",
						      "tenant_timeseries.csv", "run.png",
						      "health.csv" };

/* The CSV headers (kvsim list metrics documents every column: metric_doc.h). */
const char kv_csv_header_requests[] =
	"id,tenant,replica,status,arrival_s,first_token_s,finish_s,prompt_tokens,"
	"output_tokens,ttft_s,tpot_s,e2e_s,preemptions,cost_byte_steps,memtime_byte_s\n";
const char kv_csv_header_timeseries[] =
	"t_s,replica,waiting,running,kv_used_bytes,kv_reserved_bytes,kv_internal_waste_bytes,"
	"largest_free_bytes,ext_frag,alloc_fail_frag\n";
const char kv_csv_header_tenant_timeseries[] = "t_s,tenant,waiting,service,virtual_service\n";
const char kv_csv_header_tenants[] =
	"tenant,weight,priority,arrived,completed,rejected,prompt_tokens,output_tokens,"
	"service,service_share,weight_share,cost_byte_steps,ttft_p50_s,ttft_p99_s,"
	"e2e_p50_s,e2e_p99_s\n";

/* --- fast formatting (1M rows must not cost seconds) ------------------- */

/* "00" .. "99": two digits per table read */
static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Writes the two digits of v < 100 at p. */
static inline void put_2(char *p, uint32_t v)
{
	memcpy(p, &digits2[2 * v], 2);
}

/* Writes v < 10^8 as exactly 8 digits (leading zeros) at p: independent halves, pairs. */
static inline void put_8(char *p, uint32_t v)
{
	uint32_t hi = v / 10000, lo = v % 10000;

	put_2(p, hi / 100);
	put_2(p + 2, hi % 100);
	put_2(p + 4, lo / 100);
	put_2(p + 6, lo % 100);
}

/* Writes v in decimal at p; returns the end.  Two digits per step, from the right. */
static char *put_u64(char *p, uint64_t v)
{
	static const uint64_t pow10[19] = {
		1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
		100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
		1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
		1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
		1000000000000000000ULL
	};
	int n = 1; /* digits: most values written are small */
	char *e;

	while (n < 20 && v >= pow10[n - 1] * 10)
		n++;
	e = p + n;
	while (v >= 100) {
		e -= 2;
		put_2(e, (uint32_t)(v % 100));
		v /= 100;
	}
	if (v >= 10)
		put_2(e - 2, (uint32_t)v);
	else
		e[-1] = (char)('0' + v);
	return p + n;
}

/* Copies a NUL-terminated string (bounded by its source: tenant names are < 32 bytes). */
static char *put_str(char *p, const char *str)
{
	while (*str)
		*p++ = *str++;
	return p;
}

/*
 * Writes str as one CSV field (quoted when it holds a comma or a quote);
 * room for 2 * strlen(str) + 3 bytes at p (tenant names are under 32).
 */
static char *put_csv(char *p, const char *str)
{
	return p + kv_csv_escape(p, 2 * strlen(str) + 3, str);
}

/* Writes ns as seconds with 9 exact decimals. */
static char *put_sec(char *p, kv_ns t)
{
	uint32_t frac = (uint32_t)(t % KV_NS_PER_S); /* < 10^9: its first digit, then 8 */

	p = put_u64(p, t / KV_NS_PER_S);
	*p++ = '.';
	*p++ = (char)('0' + frac / 100000000);
	put_8(p, frac % 100000000);
	return p + 8;
}

/* Writes a non-negative value with 3 exact decimals (rounded to the nearest thousandth). */
static char *put_milli(char *p, double v)
{
	uint64_t m = (uint64_t)llround(v * 1000.0);

	p = put_u64(p, m / 1000);
	*p++ = '.';
	*p++ = (char)('0' + m / 100 % 10);
	*p++ = (char)('0' + m / 10 % 10);
	*p++ = (char)('0' + m % 10);
	return p;
}

/* --- failures ------------------------------------------------------------------ */

/* Records the first failed write: which file (F_*, or -1 for the scratch file) and errno. */
static void out_failed(struct kv_out *o, int idx)
{
	if (o->failed)
		return;
	o->failed = 1;
	o->fail_idx = idx;
	o->fail_errno = errno ? errno : EIO;
}

void kv_out_error(const struct kv_out *o, struct kv_diag *d)
{
	const char *file = o->fail_idx < 0 ? "the scratch file (tmpfile)" : o->final[o->fail_idx];

	kv_diag_set(d, KV_EIO, file, 0, 0, "", "write failed: %s; no output written",
		    strerror(o->fail_errno ? o->fail_errno : EIO));
}

/* --- the fault hook on output files (KVSIM_FAIL_WRITE) -------------------------- */

/* fopencookie write: one write(2) of a stdio buffer, or an injected ENOSPC. */
static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
	int fd = (int)(intptr_t)c;
	size_t off = 0;
	ssize_t w;

	if (kv_fault_write())
		return -1;
	while (off < n) {
		w = write(fd, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return off ? (ssize_t)off : -1;
		off += (size_t)w;
	}
	return (ssize_t)n;
}

static int cookie_close(void *c)
{
	int fd = (int)(intptr_t)c;

	if (kv_fault_write()) {
		close(fd);
		errno = ENOSPC;
		return -1;
	}
	return close(fd);
}

FILE *kv_out_fdopen(int fd)
{
	cookie_io_functions_t io = { .read = NULL, .write = cookie_write, .seek = NULL,
				     .close = cookie_close };

	if (!kv_fault_write_armed())
		return fdopen(fd, "w");
	return fopencookie((void *)(intptr_t)fd, "w", io);
}

int kv_out_rename(const char *from, const char *to)
{
	return kv_fault_write() ? -1 : rename(from, to);
}

/* --- sinks -------------------------------------------------------------------- */

static int write_request(void *ctx, const struct kv_sim *s, const struct kv_req *q,
			 enum kv_end e)
{
	struct kv_out *o = ctx;
	char line[512], *p = line;
	int done = e == KV_END_COMPLETED;

	if (done && o->done.lat && kv_done_log_add(&o->done, q))
		out_failed(o, -1);
	if (!o->req)
		return o->failed;
	p = put_u64(p, q->id);
	*p++ = ',';
	p = put_csv(p, s->cfg->source.tenants[q->tenant].name);
	*p++ = ',';
	p = put_u64(p, q->replica);
	*p++ = ',';
	p = put_str(p, done ? "completed" : e == KV_END_REJECTED_CONTEXT ? "rejected_context" :
		    "rejected_pool");
	*p++ = ',';
	p = put_sec(p, q->arrival_ns);
	*p++ = ',';
	if (done)
		p = put_sec(p, q->first_token_ns);
	*p++ = ',';
	p = put_sec(p, q->finish_ns);
	*p++ = ',';
	p = put_u64(p, q->prompt_tokens);
	*p++ = ',';
	p = put_u64(p, q->output_tokens);
	*p++ = ',';
	if (done) {
		p = put_sec(p, q->first_token_ns - q->arrival_ns);
		*p++ = ',';
		if (q->output_tokens > 1)
			p = put_sec(p, (q->finish_ns - q->first_token_ns) / (q->output_tokens - 1));
		*p++ = ',';
		p = put_sec(p, q->finish_ns - q->arrival_ns);
	} else {
		*p++ = ',';
	}
	*p++ = ',';
	p = put_u64(p, q->preemptions);
	*p++ = ',';
	p = put_u64(p, (uint64_t)llround(q->cost));
	*p++ = ',';
	p = put_milli(p, q->memtime_Bs);
	*p++ = '\n';
	/* the stream is this thread's alone: no lock per row */
	if (fwrite_unlocked(line, 1, (size_t)(p - line), o->req) != (size_t)(p - line))
		out_failed(o, F_REQ);
	return o->failed;
}

static int write_sample(void *ctx, const struct kv_sim *s, kv_ns t)
{
	struct kv_out *o = ctx;
	double sum_res = 0, sum_used = 0, sum_run = 0, sum_wait = 0, arrived = 0, cached = 0;
	uint32_t i;

	for (i = 0; i < s->n_rep; i++) {
		const struct kv_replica *r = &s->rep[i];
		char line[256], *p = put_sec(line, t);

		uint64_t used = (uint64_t)kv_replica_live_bytes(r);
		uint64_t reserved = r->pool.size_bytes - r->pool.free_bytes;
		uint64_t waiting = r->sched->waiting(r->sched_priv);

		sum_res += (double)reserved;
		sum_used += (double)used;
		sum_run += r->n_running;
		sum_wait += (double)waiting;
		if (r->cache->evictable_bytes)
			cached += (double)r->cache->evictable_bytes(r->cache_priv);

		p += sprintf(p, ",%u,%llu,%u,%llu,%llu,%llu,%llu,%.4f,%llu\n", i,
			     (unsigned long long)waiting, r->n_running,
			     (unsigned long long)used, (unsigned long long)reserved,
			     (unsigned long long)(reserved > used ? reserved - used : 0),
			     (unsigned long long)kv_pool_largest_free(&r->pool),
			     kv_pool_ext_frag(&r->pool),
			     (unsigned long long)r->pool.alloc_fail_frag);
		if (fwrite(line, 1, (size_t)(p - line), o->ts) != (size_t)(p - line))
			out_failed(o, F_TS);
	}
	for (i = 0; i < s->cfg->source.n_tenants; i++)
		arrived += (double)s->tenant[i].arrived;
	kv_mem_trend_add(&o->trend, (double)t / KV_NS_PER_S, sum_res, sum_used, sum_run, sum_wait,
			 arrived, cached);
	for (i = 0; i < s->cfg->source.n_tenants; i++) {
		const struct kv_tenant_stats *ts = &s->tenant[i];
		char line[256], *p = put_sec(line, t);

		*p++ = ',';
		p = put_csv(p, s->cfg->source.tenants[i].name);
		p += sprintf(p, ",%llu,%.0f,%.0f\n", (unsigned long long)ts->waiting, ts->service,
			     ts->vservice);
		if (fwrite(line, 1, (size_t)(p - line), o->tser) != (size_t)(p - line))
			out_failed(o, F_TSER);
	}
	return o->failed;
}

struct kv_sink kv_out_sink(struct kv_out *o)
{
	struct kv_sink k = { .ctx = o, .request = write_request, .sample = write_sample,
			     .progress = kv_progress_cb };

	return k;
}

/* --- opening and committing ---------------------------------------------------- */

/*
 * Creates file idx in the staging directory and opens it for writing.
 * Returns the stream, or NULL with d filled and nothing left on disk.
 * ENOMEM from fdopen is out of memory (kv_oom), after the file is removed.
 */
static FILE *open_tmp(struct kv_out *o, int idx, struct kv_diag *d)
{
	char *path = kv_outdir_stage_path(&o->od, file_names[idx]);
	FILE *f = NULL;
	int fd = -1, e;

	free(o->final[idx]);
	o->final[idx] = kv_outdir_final_path(&o->od, file_names[idx]);
	if (!kv_fault_write())
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd >= 0)
		f = kv_out_fdopen(fd);
	e = errno ? errno : ENOSPC;
	if (!f && fd >= 0) {
		close(fd);
		unlink(path);
	}
	free(path);
	if (f)
		return f;
	if (e == ENOMEM)
		kv_oom(0);
	kv_diag_set(d, KV_EIO, o->final[idx], 0, 0, "", "cannot create: %s", strerror(e));
	return NULL;
}

/* The kv_out with a staging directory on disk, removed at exit (kv_oom's exit(3)) if still set. */
static struct kv_out *open_out;

static void out_atexit(void)
{
	if (open_out)
		kv_out_abort(open_out);
}

/* Writes a header line into file idx, recording a failure. */
static void put_header(struct kv_out *o, FILE *f, int idx, const char *text)
{
	if (fputs(text, f) == EOF)
		out_failed(o, idx);
}

int kv_out_open(struct kv_out *o, const char *dir, const struct kv_workload *w, unsigned flags,
		struct kv_diag *d)
{
	static char buf_req[1 << 16], buf_ts[1 << 16];
	static int registered;
	int rc;

	memset(o, 0, sizeof(*o));
	o->w = w;
	o->od.lock_fd = -1;
	o->opened = 1;
	if (!registered) {
		atexit(out_atexit);
		registered = 1;
	}
	open_out = o;
	if ((rc = kv_outdir_open(&o->od, dir, flags, d)))
		return rc;
	if (w->requests_csv) {
		if (!(o->req = open_tmp(o, F_REQ, d)))
			return KV_EIO;
		setvbuf(o->req, buf_req, _IOFBF, sizeof(buf_req));
		put_header(o, o->req, F_REQ,
			   kv_csv_header_requests);
	}
	if (!(o->ts = open_tmp(o, F_TS, d)))
		return KV_EIO;
	if ((rc = kv_done_log_init(&o->done, w->cfg.model.max_ctx_tokens, &w->slo, d)))
		return rc;
	setvbuf(o->ts, buf_ts, _IOFBF, sizeof(buf_ts));
	if (!(o->tser = open_tmp(o, F_TSER, d)))
		return KV_EIO;
	put_header(o, o->tser, F_TSER, kv_csv_header_tenant_timeseries);
	put_header(o, o->ts, F_TS,
		   kv_csv_header_timeseries);
	return 0;
}

/*
 * Flushes and closes *f (file idx), recording the first failure in o.
 * Returns nonzero when any write to it failed.
 */
static int close_checked(struct kv_out *o, FILE **f, int idx)
{
	int bad;

	if (!*f)
		return 0;
	errno = 0;
	bad = fflush(*f) != 0 || ferror(*f);
	if (bad)
		out_failed(o, idx);
	if (fclose(*f) != 0) {
		out_failed(o, idx);
		bad = 1;
	}
	*f = NULL;
	return bad;
}

/*
 * A formatted write that failed (printf's return < 0).  glibc's printf
 * allocates for some conversions (long %e/%g) and then fails with ENOMEM
 * without setting the stream's error flag, so ferror() alone would let a
 * row go missing: out of memory exits 3, anything else fails the output.
 */
static void printf_failed(struct kv_out *o, int idx)
{
	if (errno == ENOMEM)
		kv_oom(0);
	out_failed(o, idx);
}

static int write_summary_csv(struct kv_out *o, const struct kv_summary *sum, struct kv_diag *d)
{
	FILE *f = open_tmp(o, F_SUM, d);
	size_t i;
	int neg;

	if (!f)
		return KV_EIO;
	neg = fputs("workload", f) < 0;
	for (i = 0; i < sum->n; i++)
		neg |= fprintf(f, ",%s", sum->item[i].name) < 0;
	neg |= fputc('\n', f) == EOF || kv_csv_put(f, o->w->name);
	for (i = 0; i < sum->n; i++) {
		if (isnan(sum->item[i].value))
			neg |= fputc(',', f) == EOF; /* not applicable: empty */
		else
			neg |= fprintf(f, sum->item[i].integer ? ",%.0f" : ",%.6g",
				       sum->item[i].value) < 0;
	}
	neg |= fputc('\n', f) == EOF;
	if (neg)
		printf_failed(o, F_SUM);
	if (!close_checked(o, &f, F_SUM) && !neg)
		return 0;
	kv_out_error(o, d);
	return KV_EIO;
}

static int write_tenants_csv(struct kv_out *o, const struct kv_sim *s, struct kv_diag *d)
{
	const struct kv_source_spec *src = &s->cfg->source;
	FILE *f = open_tmp(o, F_TEN, d);
	uint32_t i;
	int neg;

	if (!f)
		return KV_EIO;
	/* the header less its newline, then the SLO columns only with slo:, so other runs' files stay as they were */
	neg = fwrite(kv_csv_header_tenants, 1, sizeof(kv_csv_header_tenants) - 2, f) !=
	      sizeof(kv_csv_header_tenants) - 2;
	if (o->done.slo)
		neg |= fputs(",slo_attainment,goodput_req_s,goodput_tok_s", f) < 0;
	neg |= fputc('\n', f) == EOF;
	for (i = 0; i < src->n_tenants; i++) {
		const struct kv_tenant_stats *t = &s->tenant[i];
		struct kv_tenant_summary ts;

		kv_tenant_summary(s, &o->done, i, &ts);
		neg |= kv_csv_put(f, src->tenants[i].name);
		neg |= fprintf(f, ",%g,%d,%llu,%llu,%llu,%llu,%llu,%.0f,%.6f,%.6f,%.6e,%.6f,%.6f,%.6f,%.6f",
			src->tenants[i].weight, src->tenants[i].priority,
			(unsigned long long)t->arrived, (unsigned long long)t->completed,
			(unsigned long long)t->rejected, (unsigned long long)t->prompt_tokens,
			(unsigned long long)t->output_tokens, t->service, ts.service_share,
			ts.weight_share, t->cost, ts.ttft_p50_s, ts.ttft_p99_s, ts.e2e_p50_s,
			ts.e2e_p99_s) < 0;
		if (o->done.slo && isnan(ts.slo_attainment))
			neg |= fprintf(f, ",,%.6f,%.6f", ts.goodput_req_s, ts.goodput_tok_s) < 0;
		else if (o->done.slo)
			neg |= fprintf(f, ",%.6f,%.6f,%.6f", ts.slo_attainment, ts.goodput_req_s,
				       ts.goodput_tok_s) < 0;
		neg |= fputc('\n', f) == EOF;
	}
	if (neg)
		printf_failed(o, F_TEN);
	if (!close_checked(o, &f, F_TEN) && !neg)
		return 0;
	kv_out_error(o, d);
	return KV_EIO;
}

/* Computes the health report into o->health and writes health.csv. */
static int write_health_csv(struct kv_out *o, const struct kv_sim *s, const struct kv_summary *sum,
			    struct kv_diag *d)
{
	FILE *f = open_tmp(o, F_HEALTH, d);
	int neg;

	if (!f)
		return KV_EIO;
	kv_health_compute(s, o->w, sum, &o->done, &o->trend, &o->health);
	neg = kv_health_write_csv(&o->health, f);
	if (neg)
		printf_failed(o, F_HEALTH);
	if (!close_checked(o, &f, F_HEALTH) && !neg)
		return 0;
	kv_out_error(o, d);
	return KV_EIO;
}

/* 1 when gnuplot is an executable file on PATH. */
static int have_gnuplot(void)
{
	const char *path = getenv("PATH"), *p, *end;
	int found = 0;

	for (p = path ? path : "/usr/bin:/bin"; !found && *p; p = *end ? end + 1 : end) {
		char *cand;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		cand = kv_xasprintf("%.*s/gnuplot", (int)(end - p), end == p ? "." : p);
		found = access(cand, X_OK) == 0;
		free(cand);
	}
	return found;
}

char *kv_gp_quote(const char *s)
{
	char *q = kv_xmalloc(2 * strlen(s) + 3), *p = q;

	*p++ = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			*p++ = '\\';
		*p++ = *s;
	}
	*p++ = '"';
	*p = 0;
	return q;
}

/*
 * 1 when path holds a whole chart: a PNG from its signature to its IEND
 * chunk, or an SVG ending in its closing tag.  gnuplot can exit 0 after a
 * failed write (disk full, file-size limit), so its status alone says
 * nothing about the file.
 */
static int chart_complete(const char *path, int svg)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	static const unsigned char iend[12] = { 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82 };
	unsigned char head[8], tail[64];
	FILE *f = fopen(path, "rb");
	long size;
	size_t n;
	int ok = 0;

	if (!f)
		return 0;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 20 && fseek(f, 0, SEEK_SET) == 0 &&
	    fread(head, 1, sizeof(head), f) == sizeof(head)) {
		n = (size_t)KV_MIN(size, (long)sizeof(tail));
		if (fseek(f, size - (long)n, SEEK_SET) == 0 && fread(tail, 1, n, f) == n) {
			if (!svg) {
				ok = !memcmp(head, sig, 8) && !memcmp(tail + n - 12, iend, 12);
			} else {
				while (n && (tail[n - 1] == '\n' || tail[n - 1] == ' '))
					n--;
				ok = n >= 6 && !memcmp(tail + n - 6, "</svg>", 6);
			}
		}
	}
	fclose(f);
	return ok;
}

/* The last non-empty line of the n bytes at buf, in out (len bytes). */
static void last_line(char *buf, size_t n, char *out, size_t len)
{
	char *p;

	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = 0;
	p = strrchr(buf, '\n');
	p = p ? p + 1 : buf;
	n = KV_MIN(strlen(p), len - 1); /* a long line is cut: it is a message, not data */
	memcpy(out, p, n);
	out[n] = 0;
}

int kv_gnuplot(const char *dir, const char *script, const char *defs, const char *name)
{
	int svg = strlen(name) > 4 && !strcmp(name + strlen(name) - 4, ".svg");
	char *tmp_rel = kv_xasprintf(".%s.tmp", name);
	char *tmp = kv_xasprintf("%s/%s", dir, tmp_rel), *out = kv_xasprintf("%s/%s", dir, name);
	char *code = kv_xasprintf("%s; out='%s'", defs, tmp_rel);
	char errbuf[4096], why[512] = "";
	FILE *err = tmpfile();
	int st = -1, rc = 0;
	pid_t pid;

	if (!have_gnuplot()) {
		fprintf(stderr, "kvsim: gnuplot not found, no chart written (install it with: sudo apt-get install gnuplot-nox)\n");
		rc = 1;
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0)
			dup2(null, STDOUT_FILENO), dup2(null, STDIN_FILENO);
		if (err)
			dup2(fileno(err), STDERR_FILENO);
		if (chdir(dir))
			_exit(126);
		execlp("gnuplot", "gnuplot", "-e", code, script, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	if (err && fseek(err, 0, SEEK_SET) == 0) {
		size_t n = fread(errbuf, 1, sizeof(errbuf) - 1, err);

		last_line(errbuf, n, why, sizeof(why));
	}
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "kvsim: %s: gnuplot failed (%s %d)%s%s; no chart written\n", out,
			pid < 0 ? "fork" : WIFSIGNALED(st) ? "signal" : "exit status",
			pid < 0 ? errno : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
			why[0] ? ": " : "", why);
	else if (!chart_complete(tmp, svg))
		fprintf(stderr, "kvsim: %s: gnuplot exited 0 but wrote an incomplete %s (disk full or a file-size limit?)%s%s; no chart written\n",
			out, svg ? "SVG" : "PNG", why[0] ? ": " : "", why);
	else if (kv_out_rename(tmp, out))
		fprintf(stderr, "kvsim: %s: cannot rename into place: %s; no chart written\n", out,
			strerror(errno));
	else
		goto out;
	unlink(tmp);
	rc = KV_EIO;
out:
	if (err)
		fclose(err);
	free(tmp_rel);
	free(tmp);
	free(out);
	free(code);
	return rc;
}

/* Tenant names for the chart's legend, spaces as underscores, in buf. */
static const char *legend_names(const struct kv_sim *s, char *buf, size_t len)
{
	size_t off = 0, i;

	buf[0] = 0;
	for (i = 0; i < s->cfg->source.n_tenants && off < len; i++) {
		const char *n = s->cfg->source.tenants[i].name;

		off += (size_t)snprintf(buf + off, len - off, "%s", i ? " " : "");
		for (; *n && off + 1 < len; n++)
			buf[off++] = *n == ' ' ? '_' : *n;
		buf[off] = 0;
	}
	return buf;
}

/*
 * The workload's SLO limits as the manifest's `slo_lines` value (chart.h
 * kv_chart_parse_slo): `ttft_s=1 e2e_p99_s=30 ...`, per-request limits then
 * percentile ones, in seconds; "" without slo:.
 */
static void slo_lines(const struct kv_slo_cfg *slo, char *buf, size_t size)
{
	size_t off = 0;
	uint32_t i;

	buf[0] = 0;
	if (!slo->on)
		return;
	for (i = 0; i < KV_SLO_METRICS && off < size; i++)
		if (slo->all.max_ns[i])
			off += (size_t)snprintf(buf + off, size - off, "%s%s_s=%.9g", off ? " " : "",
						kv_slo_metric_names[i], slo->all.max_ns[i] / 1e9);
	for (i = 0; i < slo->n_pct && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%s=%.9g", off ? " " : "",
					slo->pct[i].name, slo->pct[i].max_ns / 1e9);
}

/* Renders run.png into the staging directory; a failure sets o->chart_failed. */
static void render_chart(struct kv_out *o, const struct kv_sim *s)
{
	char slo[KV_CHART_MAX_SLO_LINE];

	char names[2048], *setup = kv_run_setup(o->w);
	struct kv_chart_run c = { .dir = o->od.stage, .title = o->w->name, .setup = setup,
				  .replicas = s->n_rep, .tenants = s->cfg->source.n_tenants,
				  .tenant_names = legend_names(s, names, sizeof(names)),
				  .pool_bytes = s->pool_bytes, .with_requests = o->w->requests_csv };

	slo_lines(&o->w->slo, slo, sizeof(slo));
	kv_chart_parse_slo(&c, slo);
	if (kv_chart_run(&c) < 0)
		o->chart_failed = 1;
	free(setup);
}

char *kv_run_setup(const struct kv_workload *w)
{
	const struct kv_sim_config *c = &w->cfg;

	return kv_xasprintf("%s on %u x %s%s, scheduler %s, cache %s, engine %s", c->model.name,
			    c->replicas, c->device.name, c->tp > 1 ? " (tensor parallel)" : "",
			    c->sched->name, c->cache->name, c->engine ? c->engine->name : "vllm-v0");
}

/* The manifest's header: the command, workload, seed, and the caller's lines. */
static char *manifest_header(const struct kv_out *o)
{
	char *setup = kv_run_setup(o->w), *h, slo[KV_CHART_MAX_SLO_LINE];

	slo_lines(&o->w->slo, slo, sizeof(slo));
	h = kv_xasprintf("command run\nworkload %s\nseed %llu\nsetup %s\n%s%s%s%s", o->w->name,
			 (unsigned long long)o->w->cfg.seed, setup, slo[0] ? "slo_lines " : "", slo,
			 slo[0] ? "\n" : "", o->header ? o->header : "");
	free(setup);
	return h;
}

int kv_out_commit(struct kv_out *o, const struct kv_sim *s, struct kv_summary *sum,
		  struct kv_diag *d)
{
	char *hdr;
	int rc;

	close_checked(o, &o->req, F_REQ);
	close_checked(o, &o->ts, F_TS);
	close_checked(o, &o->tser, F_TSER);
	if (o->failed) {
		kv_out_error(o, d);
		return KV_EIO;
	}
	kv_summary_compute(s, &o->done, sum);
	rc = write_summary_csv(o, sum, d);
	if (!rc)
		rc = write_tenants_csv(o, s, d);
	if (!rc)
		rc = write_health_csv(o, s, sum, d);
	if (rc)
		return rc;
	if (o->w->chart)
		render_chart(o, s);
	hdr = manifest_header(o);
	rc = kv_outdir_commit(&o->od, hdr, d);
	free(hdr);
	if (rc)
		return rc;
	kv_done_log_release(&o->done);
	return 0;
}

void kv_out_abort(struct kv_out *o)
{
	int i;

	if (!o->opened)
		return;
	kv_done_log_release(&o->done);
	if (o->req)
		fclose(o->req);
	if (o->ts)
		fclose(o->ts);
	if (o->tser)
		fclose(o->tser);
	o->req = o->ts = o->tser = NULL;
	kv_outdir_abort(&o->od);
	for (i = 0; i < KV_OUT_FILES; i++) {
		free(o->final[i]);
		o->final[i] = NULL;
	}
	free(o->header);
	o->header = NULL;
	o->opened = 0;
	if (open_out == o)
		open_out = NULL;
}

/* --- the printed summary ------------------------------------------------------ */

void kv_summary_print(const struct kv_summary *sum, const char *title, FILE *f)
{
	size_t i, w = 6;

	for (i = 0; i < sum->n; i++)
		w = KV_MAX(w, strlen(sum->item[i].name));
	fprintf(f, "%s\n", title);
	for (i = 0; i < sum->n; i++) {
		const struct kv_summary_item *it = &sum->item[i];

		if (isnan(it->value))
			fprintf(f, "  %-*s %16s  %s\n", (int)w, it->name, "-", "(not applicable)");
		else if (it->integer)
			fprintf(f, "  %-*s %16.0f  %s\n", (int)w, it->name, it->value, it->unit);
		else
			fprintf(f, "  %-*s %16.6g  %s\n", (int)w, it->name, it->value, it->unit);
	}
}

/* --- progress ------------------------------------------------------------------- */

static int progress_on; /* 0 off, 1 a terminal (one line redrawn), 2 a log (a line every 5 s) */
static double progress_t0, progress_last;
static int progress_noted; /* kv_progress_note printed since kv_progress_init: the first one is at once */

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void kv_progress_init(int quiet, int force)
{
	const char *env = getenv("KVSIM_PROGRESS");

	force |= env && !strcmp(env, "1");
	progress_on = quiet ? 0 : isatty(STDERR_FILENO) ? 1 : force ? 2 : 0;
	progress_t0 = progress_last = wall_now();
	progress_noted = 0;
}

void kv_progress_cb(void *ctx, const struct kv_sim *s)
{
	double now;

	(void)ctx;
	if (!progress_on)
		return;
	now = wall_now();
	if (now - progress_last < (progress_on == 1 ? 0.25 : 5.0) || now - progress_t0 < 1.0)
		return;
	progress_last = now;
	fprintf(stderr, "%skvsim: simulated %.1f s, %llu requests arrived, %llu in flight, %.2f M events/s",
		progress_on == 1 ? "\r\033[K" : "", (double)s->now * 1e-9,
		(unsigned long long)s->arrived, (unsigned long long)s->n_live,
		(double)s->events / (now - progress_t0) / 1e6);
	if (s->cfg->source.requests && s->arrived) {
		double frac = (double)s->arrived / (double)s->cfg->source.requests;

		fprintf(stderr, ", %.0f%%, ETA %.0f s", 100.0 * frac,
			(now - progress_t0) * (1.0 - frac) / frac);
	}
	if (progress_on == 2)
		fputc('\n', stderr);
}

void kv_progress_done(void)
{
	if (progress_on == 1 && wall_now() - progress_t0 >= 1.0)
		fputs("\r\033[K", stderr);
}

void kv_progress_restart(void)
{
	progress_t0 = progress_last = wall_now();
}

void kv_progress_note(int last, const char *fmt, ...)
{
	va_list ap;
	double now;

	if (!progress_on)
		return;
	now = wall_now();
	if (!last && progress_noted && now - progress_last < (progress_on == 1 ? 0.25 : 5.0))
		return;
	progress_last = now;
	progress_noted = 1;
	fputs(progress_on == 1 ? "\r\033[Kkvsim: " : "kvsim: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (last || progress_on == 2)
		fputc('\n', stderr);
}

int kv_atomic_open(struct kv_atomic *a, const char *path, struct kv_diag *d)
{
	const char *slash = strrchr(path, '/');
	int fd = -1, e;

	memset(a, 0, sizeof(*a));
	if (strlen(path) + 1 > sizeof(a->path))
		return kv_diag_set(d, KV_EINVAL, path, 0, 0, "",
				   "path of %zu bytes is too long: expected at most %zu bytes",
				   strlen(path), sizeof(a->path) - 1);
	snprintf(a->path, sizeof(a->path), "%s", path);
	if (slash)
		snprintf(a->tmp, sizeof(a->tmp), "%.*s/.%s.tmp", (int)(slash - path), path, slash + 1);
	else
		snprintf(a->tmp, sizeof(a->tmp), ".%s.tmp", path);
	if (!kv_fault_write())
		fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd >= 0 && !(a->f = kv_out_fdopen(fd))) {
		e = errno;
		close(fd);
		unlink(a->tmp);
		if (e == ENOMEM)
			kv_oom(0);
		errno = e;
	}
	if (!a->f)
		return kv_diag_set(d, KV_EIO, a->tmp, 0, 0, "", "cannot create: %s", strerror(errno));
	return 0;
}

int kv_atomic_commit(struct kv_atomic *a, struct kv_diag *d)
{
	int bad, e;

	errno = 0;
	bad = fflush(a->f) != 0 || ferror(a->f);
	e = errno;
	bad |= fclose(a->f) != 0;
	a->f = NULL;
	if (!e)
		e = errno;
	if (bad || kv_out_rename(a->tmp, a->path)) {
		e = bad && e ? e : errno ? errno : EIO;
		unlink(a->tmp);
		return kv_diag_set(d, KV_EIO, a->path, 0, 0, "", "write failed: %s", strerror(e));
	}
	return 0;
}
