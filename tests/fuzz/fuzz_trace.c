/*
 * fuzz_trace.c -- libFuzzer target for one trace reader (sim/trace.c).
 *
 * Built once per format: FUZZ_TRACE_FORMAT is KV_TRACE_AZURE, _VIDUR,
 * _LENGTHS or _MOONCAKE (tests/fuzz/meson.build), so each format gets its
 * own corpus and its own fuzzing time rather than sharing one target
 * through auto-detection (which mostly finds the CSV header check).
 *
 * The input is a trace file.  Besides the sanitizers and the return-code
 * contract, the target checks what the reader promises for every row
 * (trace.h): a prompt of at least one token, times that never go back,
 * at most KV_TRACE_MAX_HASHES hashes kept, line numbers that increase; and
 * that kv_trace_rewind() replays the same rows: the engine relies on it to
 * cycle length files, so a second pass that differs is a bug.
 */
#include "fuzz.h"
#include "trace.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef FUZZ_TRACE_FORMAT
#error "FUZZ_TRACE_FORMAT must name a kv_trace_format"
#endif

#define MAX_ROWS 4096 /* rows compared between the two passes */

/* What one pass saw: the rows' key fields and how it ended. */
struct pass {
	size_t n; /* rows read */
	int end; /* 0 at end of file, else the error code */
	uint64_t sum; /* order-sensitive hash of every row past MAX_ROWS */
	struct {
		kv_ns t_ns;
		uint64_t prompt, output, hash0;
		uint32_t n_hashes, dropped;
		int32_t priority;
		int has_priority;
		unsigned long line;
	} row[MAX_ROWS];
};

/* Checks one row against the reader's promises; prev is the row before it, or NULL. */
static void check_row(const struct kv_trace *t, const struct kv_trace_row *r,
		      const struct kv_trace_row *prev)
{
	if (r->prompt_tokens < 1)
		fuzz_fail("line %lu: prompt of %llu tokens", r->line,
			  (unsigned long long)r->prompt_tokens);
	if (r->n_hashes > KV_TRACE_MAX_HASHES ||
	    (r->n_hashes_dropped && r->n_hashes != KV_TRACE_MAX_HASHES))
		fuzz_fail("line %lu: %u hashes kept, %u dropped", r->line, r->n_hashes,
			  r->n_hashes_dropped);
	if (!r->has_priority && r->priority)
		fuzz_fail("line %lu: priority %d without a priority field", r->line, (int)r->priority);
	if (!kv_trace_has_times(t) && r->t_ns)
		fuzz_fail("line %lu: a time %llu in a format without times", r->line,
			  (unsigned long long)r->t_ns);
	if (prev && (r->line <= prev->line || r->t_ns < prev->t_ns))
		fuzz_fail("line %lu (t %llu ns) after line %lu (t %llu ns)", r->line,
			  (unsigned long long)r->t_ns, prev->line,
			  (unsigned long long)prev->t_ns);
}

/* Reads every row from the current position into p. */
static void read_pass(struct kv_trace *t, struct pass *p, struct kv_trace_row *r,
		      struct kv_trace_row *prev)
{
	struct kv_diag d;
	int rc, have_prev = 0;

	memset(p, 0, offsetof(struct pass, row));
	for (;;) {
		memset(&d, 0, sizeof(d));
		rc = kv_trace_next(t, r, &d);
		if (rc != 1) {
			fuzz_check_rc(rc, &d);
			p->end = rc;
			return;
		}
		check_row(t, r, have_prev ? prev : NULL);
		if (p->n < MAX_ROWS) {
			p->row[p->n].t_ns = r->t_ns;
			p->row[p->n].prompt = r->prompt_tokens;
			p->row[p->n].output = r->output_tokens;
			p->row[p->n].hash0 = r->n_hashes ? r->hashes[0] : 0;
			p->row[p->n].n_hashes = r->n_hashes;
			p->row[p->n].dropped = r->n_hashes_dropped;
			p->row[p->n].priority = r->priority;
			p->row[p->n].has_priority = r->has_priority;
			p->row[p->n].line = r->line;
		} else {
			p->sum = (p->sum ^ r->t_ns ^ r->prompt_tokens ^ r->output_tokens) *
				 0x100000001b3ULL;
		}
		p->n++;
		memcpy(prev, r, sizeof(*r));
		have_prev = 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* static: two rows and two passes are ~200 KB, too much for the stack under ASan */
	static struct kv_trace_row row, prev;
	static struct pass first, second;
	struct kv_trace *t;
	struct kv_diag d;
	int rc;

	memset(&d, 0, sizeof(d));
	rc = kv_trace_open_mem("fuzz.trace", data, size, FUZZ_TRACE_FORMAT, &t, &d);
	fuzz_check_rc(rc, &d);
	if (rc)
		return 0;
	if (kv_trace_format(t) != FUZZ_TRACE_FORMAT)
		fuzz_fail("opened as %s, asked for %s", kv_trace_format_name(kv_trace_format(t)),
			  kv_trace_format_name(FUZZ_TRACE_FORMAT));
	read_pass(t, &first, &row, &prev);
	if (kv_trace_rewind(t))
		fuzz_fail("rewind of an in-memory trace failed");
	read_pass(t, &second, &row, &prev);
	if (first.n != second.n || first.end != second.end || first.sum != second.sum ||
	    memcmp(first.row, second.row, KV_MIN(first.n, (size_t)MAX_ROWS) * sizeof(first.row[0])))
		fuzz_fail("rewind replayed %zu rows ending %d, the first pass read %zu ending %d",
			  second.n, second.end, first.n, first.end);
	kv_trace_close(t);
	return 0;
}
