/*
 * trace.h -- streaming readers for request traces.
 *
 * A reader holds one open FILE and one line buffer; kv_trace_next() parses
 * one row at a time, so memory does not grow with the trace.  Formats:
 *
 *   KV_TRACE_AZURE    TIMESTAMP,ContextTokens,GeneratedTokens with absolute
 *                     datetimes "2023-11-16 18:17:03.9799600" (7 fractional
 *                     digits; any count 0..9 accepted); times are relative
 *                     to the first row.  Last line may lack a newline.
 *   KV_TRACE_VIDUR    [request_id,]arrived_at,num_prefill_tokens,num_decode_tokens
 *                     (columns found by name in the header, any order, extra
 *                     columns ignored, as for every CSV format); arrived_at
 *                     in decimal seconds, converted to ns exactly (rounded
 *                     half up at the 10th fractional digit).
 *   KV_TRACE_LENGTHS  num_prefill_tokens,num_decode_tokens[,...] without
 *                     times (the workload's arrival process supplies them).
 *   KV_TRACE_MOONCAKE JSON lines {"timestamp": ms, "input_length": n,
 *                     "output_length": n, "hash_ids": [..]} (keys in any
 *                     order; hash_ids optional, at most KV_TRACE_MAX_HASHES kept
 *                     and the count of the rest in n_hashes_dropped; any
 *                     other key is an error naming it).
 *
 * Priority: every format may carry a request priority, an integer in
 * [-2^31, 2^31) where lower is served first (vLLM's `priority`): a CSV
 * column named `priority` (optional; when present every row fills it), a
 * JSON key "priority" (optional per line).  A row without one has
 * has_priority 0 and priority 0.  Detection ignores it.
 *
 * Detection (KV_TRACE_AUTO): a first line starting with '{' is JSON lines;
 * otherwise the first line is a CSV header and the first of azure, vidur,
 * lengths whose columns it holds wins.  An explicit format still needs its
 * columns in the header (so "lengths" reads the lengths of a vidur file).
 * CRLF line ends and a UTF-8 byte-order mark are accepted.
 *
 * A last line without a newline is read like any other, in every format:
 * the published Azure 2023 files end that way.  So a file cut mid-line
 * (an interrupted copy) gives a row error at its last line -- a missing
 * field, a short datetime, an unclosed JSON object -- unless the cut falls
 * inside the last CSV field, where the shorter value is read as written:
 * such a cut cannot be told from a genuine last row (tests/fault_test.sh
 * cuts every format at every byte of its last line).
 *
 * Input bounds (sim/kv_common.h): regular files only (kv_input_open(): a
 * FIFO or device is an error, never a blocking open); a line is at most
 * KV_INPUT_MAX_LINE_BYTES (1 MiB) before its newline, else KV_EINVAL at
 * that line.  A NUL byte anywhere in a line is an error naming its field
 * and showing it as \0; a field holding '"' is an error (CSV quoting is not
 * supported); values in messages have control bytes escaped.
 *
 * Rows are checked: non-negative integer token counts, a prompt of at least
 * 1 token, times not going backwards (unsorted timestamps are an error naming
 * the line), no missing or extra fields.  Errors fill a kv_diag with file,
 * line, column (1-based byte column of the field), field name, bad value and
 * what was expected.
 */
#ifndef KV_TRACE_H
#define KV_TRACE_H

#include "kv_common.h"

enum kv_trace_format {
	KV_TRACE_AUTO = 0, /* detect from the first line */
	KV_TRACE_AZURE,
	KV_TRACE_VIDUR,
	KV_TRACE_LENGTHS,
	KV_TRACE_MOONCAKE,
};

#define KV_TRACE_MAX_HASHES 512 /* 512 blocks of 512 tokens: 256K-token prompts */

/* One request read from a trace. */
struct kv_trace_row {
	kv_ns t_ns; /* arrival relative to the first row (every timed format); 0 for KV_TRACE_LENGTHS */
	uint64_t prompt_tokens; /* input (context) tokens, >= 1 */
	uint64_t output_tokens; /* tokens to generate, >= 0 */
	uint32_t n_hashes; /* prefix-block hashes kept in hashes[] */
	uint32_t n_hashes_dropped; /* hash_ids beyond KV_TRACE_MAX_HASHES, counted, not kept */
	uint64_t hashes[KV_TRACE_MAX_HASHES]; /* Mooncake hash_ids, one per 512-token block */
	int32_t priority; /* the row's `priority` (vLLM's: lower first); 0 when it has none */
	int has_priority; /* 1 when the row gives a priority (CSV: the column exists; JSON: the key) */
	unsigned long line; /* 1-based line in the file */
};

struct kv_trace;

/* Name of a format ("azure", "vidur", "lengths", "mooncake", "auto"). */
const char *kv_trace_format_name(enum kv_trace_format f);

/* Parses a format name; returns 0 or KV_EINVAL. */
int kv_trace_format_parse(const char *s, enum kv_trace_format *f);

/*
 * Opens path and reads its header (detecting the format when fmt is AUTO).
 * Returns 0 and *out, or a negative code with d filled (missing file:
 * KV_ENOENT; not a regular file, unknown header, a line too long: KV_EINVAL).
 */
int kv_trace_open(const char *path, enum kv_trace_format fmt, struct kv_trace **out,
		  struct kv_diag *d);

/*
 * Same over the len bytes at data, reported as file `name`; data must stay
 * valid until kv_trace_close().  For tests and fuzzing without a file.
 */
int kv_trace_open_mem(const char *name, const void *data, size_t len,
		      enum kv_trace_format fmt, struct kv_trace **out, struct kv_diag *d);

/* The format in use (after detection). */
enum kv_trace_format kv_trace_format(const struct kv_trace *t);

/* 1 if rows carry arrival times (all but KV_TRACE_LENGTHS). */
int kv_trace_has_times(const struct kv_trace *t);

/*
 * Reads the next row into *row.  Returns 1 when a row was read, 0 at end of
 * file, or a negative code with d filled for a bad row.  Blank lines are
 * skipped.
 */
int kv_trace_next(struct kv_trace *t, struct kv_trace_row *row, struct kv_diag *d);

/*
 * Seeks back to the first data row (to cycle a length-only file); times are
 * again relative to that row.  Returns 0 or KV_EIO.
 */
int kv_trace_rewind(struct kv_trace *t);

/* Closes the file and frees the reader; NULL is a no-op. */
void kv_trace_close(struct kv_trace *t);

#endif /* KV_TRACE_H */
