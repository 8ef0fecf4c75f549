/*
 * trace.c -- streaming request-trace readers.
 *
 * One reader is one FILE, one copy of the CSV header and one line buffer
 * that grows to the longest line (at most KV_INPUT_MAX_LINE_BYTES, 1 MiB:
 * a longer line is an error, so a file without newlines cannot exhaust
 * memory) and is then reused: nothing is allocated per row, so memory
 * does not depend on the trace's length.
 *
 * CSV rows are split at commas and the fields are matched to three roles
 * (time, prompt, output) through a column map built from the header, plus
 * the optional `priority` column (any CSV format; JSON: the key).  JSON
 * lines (Mooncake) go through a small strict parser for one flat object.
 * Both hand the role fields, as (pointer, length, column) spans, to one
 * converter, so every format checks its rows the same way.
 *
 * Times become integer nanoseconds without floating point: datetimes by
 * days-from-civil arithmetic (Howard Hinnant's algorithm; no timegm(), no
 * locale or time zone), decimal seconds or milliseconds digit by digit,
 * rounded half up.  The same file therefore gives the same nanoseconds on
 * every machine.  Invariant: the absolute times of the rows read since open
 * or rewind never decrease, so t_ns = abs - first is never negative.
 */
#include "trace.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define SHOW 64 /* bytes of a bad value quoted in a message */
#define SHOWBUF (4 * SHOW + 8) /* SHOW bytes escaped by kv_show(), then "..." */
#define TIME_TEXT 48 /* bytes kept of the previous row's time, as written */
#define SUPPORTED                                                             \
	"azure (TIMESTAMP,ContextTokens,GeneratedTokens), "                   \
	"vidur (arrived_at,num_prefill_tokens,num_decode_tokens), "           \
	"lengths (num_prefill_tokens,num_decode_tokens) or "                  \
	"mooncake (JSON lines with timestamp, input_length, output_length[, hash_ids])"

enum role { ROLE_TIME, ROLE_PROMPT, ROLE_OUTPUT, N_ROLES };

/* The column (or JSON key) name of each role in one format. */
struct layout {
	enum kv_trace_format fmt;
	const char *name[N_ROLES]; /* NULL: the format has no such field */
};

/* CSV layouts in detection order, then Mooncake's keys. */
static const struct layout layouts[] = {
	{ KV_TRACE_AZURE, { "TIMESTAMP", "ContextTokens", "GeneratedTokens" } },
	{ KV_TRACE_VIDUR, { "arrived_at", "num_prefill_tokens", "num_decode_tokens" } },
	{ KV_TRACE_LENGTHS, { NULL, "num_prefill_tokens", "num_decode_tokens" } },
	{ KV_TRACE_MOONCAKE, { "timestamp", "input_length", "output_length" } },
};

static const char *const format_names[] = {
	[KV_TRACE_AUTO] = "auto",	  [KV_TRACE_AZURE] = "azure",
	[KV_TRACE_VIDUR] = "vidur",	  [KV_TRACE_LENGTHS] = "lengths",
	[KV_TRACE_MOONCAKE] = "mooncake",
};

/* A field of the current line: bytes p[0..n), starting at 1-based column col. */
struct span {
	const char *p;
	size_t n;
	unsigned long col;
};

/* Up to SHOW bytes of p[0..n) for a message, control bytes escaped, "..." when cut. */
static const char *show(const char *p, size_t n, char *buf)
{
	kv_show(p, KV_MIN(n, SHOW), buf, SHOWBUF);
	if (n > SHOW)
		strcat(buf, "...");
	return buf;
}

struct kv_trace {
	FILE *f; /* the open trace */
	char *path; /* as given to kv_trace_open, for diagnostics */
	enum kv_trace_format fmt; /* never KV_TRACE_AUTO after open */
	const struct layout *lay; /* names of the role fields */
	char *buf; /* line buffer, reused for every line; at most KV_INPUT_MAX_LINE_BYTES + 1 used */
	size_t cap; /* allocated size of buf */
	size_t len; /* bytes of the current line, end of line stripped */
	unsigned long line; /* 1-based number of the current line */
	off_t data_off; /* file offset of the first data row */
	unsigned long data_line; /* line number just before the first data row */
	char *hdr; /* CSV: header names, NUL-separated */
	char **names; /* CSV: names[i] points at column i's name in hdr */
	unsigned ncols; /* CSV: columns in the header */
	int col[N_ROLES]; /* CSV: column index of each role, -1 when absent */
	int col_prio; /* CSV: column index of `priority`, -1 when absent */
	int have_prev; /* a timed row was read since open or rewind */
	int64_t first_ns; /* absolute time of the first row, ns */
	int64_t prev_ns; /* absolute time of the previous row, ns */
	char prev_text[TIME_TEXT]; /* previous row's time as written */
};

const char *kv_trace_format_name(enum kv_trace_format f)
{
	if ((unsigned)f >= KV_ARRAY_LEN(format_names))
		return "?";
	return format_names[f];
}

int kv_trace_format_parse(const char *s, enum kv_trace_format *f)
{
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(format_names); i++) {
		if (strcmp(s, format_names[i]) == 0) {
			*f = (enum kv_trace_format)i;
			return 0;
		}
	}
	return KV_EINVAL;
}

enum kv_trace_format kv_trace_format(const struct kv_trace *t)
{
	return t->fmt;
}

int kv_trace_has_times(const struct kv_trace *t)
{
	return t->fmt != KV_TRACE_LENGTHS;
}

/* ---- numbers and times ------------------------------------------------ */

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

#define PRIO_NAME "priority" /* the optional priority field of every format */
#define PRIO_EXPECTED "an integer priority from -2147483648 to 2147483647 (lower is served first)"

/* Parses a non-negative decimal integer filling all of s.  0 or -1. */
static int parse_u64(struct span s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (s.n == 0)
		return -1;
	for (i = 0; i < s.n; i++) {
		unsigned dig = (unsigned)(s.p[i] - '0');

		if (!is_digit(s.p[i]) || v > UINT64_MAX / 10 ||
		    (v == UINT64_MAX / 10 && dig > UINT64_MAX % 10))
			return -1;
		v = v * 10 + dig;
	}
	*out = v;
	return 0;
}

/* Parses a decimal integer in int32_t's range, an optional '-' first, filling all of s.  0 or -1. */
static int parse_i32(struct span s, int32_t *out)
{
	struct span m = s;
	uint64_t v;
	int neg = s.n > 0 && s.p[0] == '-';

	m.p += neg;
	m.n -= (size_t)neg;
	if (parse_u64(m, &v) || v > (uint64_t)INT32_MAX + (uint64_t)neg)
		return -1;
	*out = neg ? (int32_t)(-(int64_t)v) : (int32_t)v;
	return 0;
}

/*
 * Exponent form ("1.5e-05"): strtod() and one rounding.  Only reached for
 * the rare exponent; the plain form below is exact.  0 or -1.
 */
static int parse_exp_decimal(struct span s, int scale, int64_t *out)
{
	char tmp[SHOW];
	char *end;
	double x;

	if (s.n >= sizeof(tmp) || s.p[0] == '-' || s.p[0] == '+')
		return -1;
	memcpy(tmp, s.p, s.n);
	tmp[s.n] = '\0';
	errno = 0;
	x = strtod(tmp, &end) * pow(10, scale);
	if (end != tmp + s.n || errno || !(x >= 0 && x < 9.2e18))
		return -1;
	*out = (int64_t)llround(x);
	return 0;
}

/*
 * Parses a non-negative decimal "123", "123.456", ".5" into an integer of
 * 10^-scale units (scale 9: seconds to ns; 6: ms to ns), rounding half up
 * at the first dropped digit.  0 or -1 (malformed, or beyond int64).
 */
static int parse_decimal(struct span s, int scale, int64_t *out)
{
	uint64_t whole = 0, frac = 0, unit = 1;
	size_t i = 0;
	int nd = 0, any = 0, up = 0;

	for (; i < s.n && is_digit(s.p[i]); i++, any = 1) {
		if (whole > (uint64_t)INT64_MAX / 10)
			return -1;
		whole = whole * 10 + (unsigned)(s.p[i] - '0');
	}
	if (i < s.n && s.p[i] == '.') {
		for (i++; i < s.n && is_digit(s.p[i]); i++, nd++, any = 1) {
			if (nd < scale)
				frac = frac * 10 + (unsigned)(s.p[i] - '0');
			else if (nd == scale)
				up = s.p[i] >= '5';
		}
	}
	if (any && i < s.n && (s.p[i] == 'e' || s.p[i] == 'E'))
		return parse_exp_decimal(s, scale, out);
	if (!any || i != s.n)
		return -1;
	for (; nd < scale; nd++)
		frac *= 10;
	for (nd = 0; nd < scale; nd++)
		unit *= 10;
	if (whole > ((uint64_t)INT64_MAX - frac - 1) / unit)
		return -1;
	*out = (int64_t)(whole * unit + frac + (uint64_t)up);
	return 0;
}

/* Value of k decimal digits at p, or -1 when one is not a digit. */
static int digits(const char *p, int k)
{
	int v = 0;

	for (; k > 0; k--, p++) {
		if (!is_digit(*p))
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

static int days_in_month(int y, int m)
{
	static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return mdays[m - 1] + (m == 2 && leap);
}

/*
 * Days from 1970-01-01 to the proleptic Gregorian date y-m-d (Howard
 * Hinnant, "chrono-compatible low-level date algorithms").  Chosen over
 * timegm(), which is not C11 and depends on the C library's time zone
 * handling.
 */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * Parses "YYYY-MM-DD HH:MM:SS[.fffffffff]" ('T' also separates date and
 * time; 1 to 9 fractional digits; years 1900..2200) into ns since the
 * epoch.  0 or -1.
 */
static int parse_datetime(struct span s, int64_t *out)
{
	const char *p = s.p;
	int y, mo, dd, h, mi, sec;
	int64_t frac = 0, secs;
	size_t i;

	if (s.n < 19 || s.n == 20 || s.n > 29 || p[4] != '-' || p[7] != '-' ||
	    (p[10] != ' ' && p[10] != 'T') || p[13] != ':' || p[16] != ':' ||
	    (s.n > 19 && p[19] != '.'))
		return -1;
	y = digits(p, 4);
	mo = digits(p + 5, 2);
	dd = digits(p + 8, 2);
	h = digits(p + 11, 2);
	mi = digits(p + 14, 2);
	sec = digits(p + 17, 2);
	if (y < 1900 || y > 2200 || mo < 1 || mo > 12 || dd < 1 ||
	    dd > days_in_month(y, mo) || h < 0 || h > 23 || mi < 0 || mi > 59 ||
	    sec < 0 || sec > 59)
		return -1;
	for (i = 20; i < 29; i++) {
		if (i < s.n && !is_digit(p[i]))
			return -1;
		frac = frac * 10 + (i < s.n ? p[i] - '0' : 0);
	}
	secs = ((days_from_civil(y, mo, dd) * 24 + h) * 60 + mi) * 60 + sec;
	*out = secs * (int64_t)KV_NS_PER_S + frac;
	return 0;
}

/* ---- rows -------------------------------------------------------------- */

static int bad_value(struct kv_trace *t, struct span s, const char *field,
		     const char *expected, struct kv_diag *d)
{
	char v[SHOWBUF];

	return kv_diag_set(d, KV_EINVAL, t->path, t->line, s.col, field,
			   "bad value '%s': expected %s", show(s.p, s.n, v), expected);
}

/* Absolute time of a time field in ns, by format.  0 or KV_EINVAL. */
static int parse_time(struct kv_trace *t, struct span s, int64_t *abs, struct kv_diag *d)
{
	const char *name = t->lay->name[ROLE_TIME];

	switch (t->fmt) {
	case KV_TRACE_AZURE:
		if (parse_datetime(s, abs))
			return bad_value(t, s, name,
					 "a datetime YYYY-MM-DD HH:MM:SS[.fraction] (years 1900..2200)",
					 d);
		return 0;
	case KV_TRACE_VIDUR:
		if (parse_decimal(s, 9, abs))
			return bad_value(t, s, name, "non-negative seconds like 12.25, below 9223372036 (the 64-bit nanosecond clock)", d);
		return 0;
	default:
		if (parse_decimal(s, 6, abs))
			return bad_value(t, s, name, "non-negative milliseconds like 1500, below 9223372036854 (the 64-bit nanosecond clock)", d);
		return 0;
	}
}

/*
 * Checks that abs does not go back from the previous row, nor so far past
 * the first that the difference leaves int64 ns (292 years; the arrival
 * bound, far smaller, is checked by the caller), and makes it relative to
 * the first row since open or rewind.  0 or KV_EINVAL.
 */
static int order_time(struct kv_trace *t, struct span s, int64_t abs, kv_ns *rel,
		      struct kv_diag *d)
{
	size_t n = KV_MIN(s.n, sizeof(t->prev_text) - 1);
	char v[SHOWBUF];
	int64_t span;

	if (!t->have_prev) {
		t->first_ns = abs;
		t->have_prev = 1;
	} else if (abs < t->prev_ns) {
		return kv_diag_set(d, KV_EINVAL, t->path, t->line, s.col,
				   t->lay->name[ROLE_TIME],
				   "unsorted timestamps: %s is before the previous row's %s",
				   show(s.p, s.n, v), t->prev_text);
	}
	if (__builtin_sub_overflow(abs, t->first_ns, &span))
		return kv_diag_set(d, KV_EINVAL, t->path, t->line, s.col,
				   t->lay->name[ROLE_TIME],
				   "timestamp %s is more than 292 years after the first row's",
				   show(s.p, s.n, v));
	t->prev_ns = abs;
	memcpy(t->prev_text, s.p, n);
	t->prev_text[n] = '\0';
	*rel = (kv_ns)span;
	return 0;
}

/*
 * Converts and checks the role fields f[] into row, and the priority field
 * prio when the row has one (NULL: none).  0 or KV_EINVAL.
 */
static int fill_row(struct kv_trace *t, const struct span *f, const struct span *prio,
		    struct kv_trace_row *row, struct kv_diag *d)
{
	const char *const *name = t->lay->name;
	int64_t abs = 0; /* set by the time parser before use; 0 quiets -O3's maybe-uninitialized */
	int err;

	if (prio && parse_i32(*prio, &row->priority))
		return bad_value(t, *prio, PRIO_NAME, PRIO_EXPECTED, d);
	row->has_priority = prio != NULL;
	if (parse_u64(f[ROLE_PROMPT], &row->prompt_tokens))
		return bad_value(t, f[ROLE_PROMPT], name[ROLE_PROMPT],
				 "a non-negative integer count of tokens", d);
	if (row->prompt_tokens == 0)
		return bad_value(t, f[ROLE_PROMPT], name[ROLE_PROMPT],
				 "a prompt of at least 1 token", d);
	if (parse_u64(f[ROLE_OUTPUT], &row->output_tokens))
		return bad_value(t, f[ROLE_OUTPUT], name[ROLE_OUTPUT],
				 "a non-negative integer count of tokens", d);
	if (!name[ROLE_TIME])
		return 0;
	err = parse_time(t, f[ROLE_TIME], &abs, d);
	if (!err)
		err = order_time(t, f[ROLE_TIME], abs, &row->t_ns, d);
	return err;
}

/* ---- CSV --------------------------------------------------------------- */

/* Name of header column i. */
static const char *hdr_name(const struct kv_trace *t, unsigned i)
{
	return t->names[i];
}

static int csv_missing(struct kv_trace *t, unsigned i, struct kv_diag *d)
{
	return kv_diag_set(d, KV_EINVAL, t->path, t->line, t->len + 1, hdr_name(t, i),
			   "missing field: expected %u comma-separated fields as in the header, found %u",
			   t->ncols, i);
}

static int csv_extra(struct kv_trace *t, struct span s, struct kv_diag *d)
{
	char field[32], v[SHOWBUF];

	snprintf(field, sizeof(field), "column %u", t->ncols + 1);
	return kv_diag_set(d, KV_EINVAL, t->path, t->line, s.col, field,
			   "extra field '%s': the header has %u columns", show(s.p, s.n, v),
			   t->ncols);
}

/*
 * A field with a '"': CSV quoting (RFC 4180) is not supported.  Rejected
 * rather than read as written, since a quoted comma would shift every later
 * field; no trace format kvsim reads quotes its fields.
 */
static int csv_quoted(struct kv_trace *t, struct span s, unsigned i, struct kv_diag *d)
{
	char v[SHOWBUF];

	return kv_diag_set(d, KV_EINVAL, t->path, t->line, s.col,
			   i < t->ncols ? hdr_name(t, i) : "",
			   "bad value '%s': quoted CSV fields are not supported: expected plain comma-separated fields without '\"'",
			   show(s.p, s.n, v));
}

/* Splits the current line at commas and converts its role fields. */
static int csv_row(struct kv_trace *t, struct kv_trace_row *row, struct kv_diag *d)
{
	struct span f[N_ROLES] = { { NULL, 0, 0 } }, prio = { NULL, 0, 0 };
	const char *p = t->buf, *end = t->buf + t->len, *q;
	unsigned i;
	int r;

	for (i = 0;; i++, p = q + 1) {
		struct span s;

		q = memchr(p, ',', (size_t)(end - p));
		s.p = p;
		s.n = (size_t)((q ? q : end) - p);
		s.col = (unsigned long)(p - t->buf) + 1;
		if (i >= t->ncols)
			return csv_extra(t, s, d);
		if (memchr(s.p, '"', s.n))
			return csv_quoted(t, s, i, d);
		for (r = 0; r < N_ROLES; r++)
			if (t->col[r] == (int)i)
				f[r] = s;
		if (t->col_prio == (int)i)
			prio = s;
		if (!q)
			break;
	}
	if (i + 1 < t->ncols)
		return csv_missing(t, i + 1, d);
	return fill_row(t, f, t->col_prio >= 0 ? &prio : NULL, row, d);
}

/* Strips blanks and one pair of double quotes around a header name, in place. */
static char *trim_name(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		s[n - 1] = '\0';
		s++;
	}
	return s;
}

/*
 * Copies the header line into t->hdr as NUL-separated trimmed names and
 * indexes them in t->names.  The index keeps find_col() linear: walking the
 * names from the start for each column made a header of n columns cost n^2
 * (an 8 KB line of commas took seconds, a megabyte would not finish).
 */
static void split_header(struct kv_trace *t, const char *line)
{
	char *copy = kv_xstrdup(line), *tok, *w;
	const char *p;

	t->ncols = 1;
	for (p = line; (p = strchr(p, ',')); p++)
		t->ncols++;
	t->hdr = kv_xmalloc(strlen(line) + 1);
	t->names = kv_xcalloc(t->ncols, sizeof(*t->names));
	w = t->hdr;
	for (tok = copy, t->ncols = 0;; t->ncols++) {
		char *comma = strchr(tok, ',');

		if (comma)
			*comma = '\0';
		t->names[t->ncols] = w;
		strcpy(w, trim_name(tok));
		w += strlen(w) + 1;
		if (!comma)
			break;
		tok = comma + 1;
	}
	t->ncols++;
	free(copy);
}

/* Index of the header column called name, -1 if none, -2 if repeated. */
static int find_col(const struct kv_trace *t, const char *name)
{
	int found = -1;
	unsigned i;

	for (i = 0; i < t->ncols; i++) {
		if (strcmp(hdr_name(t, i), name) != 0)
			continue;
		if (found >= 0)
			return -2;
		found = (int)i;
	}
	return found;
}

/*
 * Builds the column map of layout lay.  Returns 1 when every role column
 * is present, 0 when one is missing, KV_EINVAL (d filled) on a repeated one.
 */
static int map_layout(struct kv_trace *t, const struct layout *lay, struct kv_diag *d)
{
	int r;

	for (r = 0; r < N_ROLES; r++) {
		t->col[r] = -1;
		if (!lay->name[r])
			continue;
		t->col[r] = find_col(t, lay->name[r]);
		if (t->col[r] == -2)
			return kv_diag_set(d, KV_EINVAL, t->path, 1, 0, lay->name[r],
					   "duplicate column '%s' in the header", lay->name[r]);
		if (t->col[r] < 0)
			return 0;
	}
	t->lay = lay;
	t->fmt = lay->fmt;
	return 1;
}

/* Detects (or checks) a CSV format from the header in line. */
static int csv_header(struct kv_trace *t, const char *line, enum kv_trace_format fmt,
		      struct kv_diag *d)
{
	char v[SHOWBUF];
	size_t i;
	int r;

	split_header(t, line);
	for (i = 0; i < t->ncols; i++)
		if (strchr(hdr_name(t, i), '"'))
			return kv_diag_set(d, KV_EINVAL, t->path, 1, 1, "header",
					   "bad column name '%s': quoted CSV fields are not supported: expected plain names (one pair of quotes around a name without commas is accepted)",
					   show(hdr_name(t, i), strlen(hdr_name(t, i)), v));
	for (i = 0; i < KV_ARRAY_LEN(layouts); i++) {
		if (layouts[i].fmt == KV_TRACE_MOONCAKE ||
		    (fmt != KV_TRACE_AUTO && fmt != layouts[i].fmt))
			continue;
		r = map_layout(t, &layouts[i], d);
		if (r < 0)
			return r;
		if (r) {
			t->col_prio = find_col(t, PRIO_NAME);
			return t->col_prio == -2 ?
				       kv_diag_set(d, KV_EINVAL, t->path, 1, 0, PRIO_NAME,
						   "duplicate column '%s' in the header", PRIO_NAME) :
				       0;
		}
	}
	if (fmt != KV_TRACE_AUTO)
		return kv_diag_set(d, KV_EINVAL, t->path, 1, 1, "header",
				   "header '%s' does not fit format %s: expected %s",
				   show(line, strlen(line), v), kv_trace_format_name(fmt), SUPPORTED);
	return kv_diag_set(d, KV_EINVAL, t->path, 1, 1, "header",
			   "unknown header '%s': expected %s", show(line, strlen(line), v), SUPPORTED);
}

/* ---- Mooncake JSON lines ----------------------------------------------- */

/* A position in the current line. */
struct jcur {
	const char *p, *end, *base;
};

static void skip_ws(struct jcur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
		c->p++;
}

/* Consumes ch if it is next; returns 1 if it was. */
static int eat(struct jcur *c, char ch)
{
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return 1;
	}
	return 0;
}

static unsigned long jcol(const struct jcur *c)
{
	return (unsigned long)(c->p - c->base) + 1;
}

static int jerr(struct kv_trace *t, const struct jcur *c, const char *field,
		const char *what, struct kv_diag *d)
{
	char v[SHOWBUF];

	return kv_diag_set(d, KV_EINVAL, t->path, t->line, jcol(c), field, "%s, found '%s'",
			   what, show(c->p, KV_MIN((size_t)(c->end - c->p), 16), v));
}

/* Ends a bare JSON token (a table: this runs once per byte of hash_ids). */
static int is_delim(char ch)
{
	static const unsigned char delim[256] = {
		[','] = 1, ['}'] = 1, [']'] = 1, ['['] = 1, ['{'] = 1,
		[' '] = 1, ['\t'] = 1, ['\r'] = 1, ['\0'] = 1,
	};

	return delim[(unsigned char)ch];
}

/* A scalar token: a quoted string whole, else up to a delimiter. */
static struct span json_scalar(struct jcur *c)
{
	struct span s = { c->p, 0, jcol(c) };

	if (c->p < c->end && *c->p == '"') {
		const char *q = memchr(c->p + 1, '"', (size_t)(c->end - c->p - 1));

		c->p = q ? q + 1 : c->end;
	} else {
		while (c->p < c->end && !is_delim(*c->p))
			c->p++;
	}
	s.n = (size_t)(c->p - s.p);
	return s;
}

/* A key: a plain double-quoted string (no escapes in this format). */
static int json_key(struct kv_trace *t, struct jcur *c, struct span *key, struct kv_diag *d)
{
	const char *q;

	key->col = jcol(c);
	if (!eat(c, '"'))
		return jerr(t, c, "", "expected a quoted key", d);
	q = c->p;
	while (q < c->end && *q != '"' && *q != '\\')
		q++;
	if (q == c->end || *q == '\\')
		return jerr(t, c, "", "expected a key without escapes, closed by '\"'", d);
	key->p = c->p;
	key->n = (size_t)(q - c->p);
	c->p = q + 1;
	return 0;
}

/* hash_ids: an array of non-negative integers, kept up to KV_TRACE_MAX_HASHES. */
static int json_hashes(struct kv_trace *t, struct jcur *c, struct kv_trace_row *row,
		       struct kv_diag *d)
{
	struct span s;
	uint64_t v;

	if (!eat(c, '['))
		return jerr(t, c, "hash_ids", "expected an array of non-negative integers", d);
	skip_ws(c);
	if (eat(c, ']'))
		return 0;
	do {
		skip_ws(c);
		s = json_scalar(c);
		if (parse_u64(s, &v))
			return bad_value(t, s, "hash_ids", "a non-negative integer hash id", d);
		if (row->n_hashes < KV_TRACE_MAX_HASHES)
			row->hashes[row->n_hashes++] = v;
		else
			row->n_hashes_dropped++;
		skip_ws(c);
	} while (eat(c, ','));
	if (!eat(c, ']'))
		return jerr(t, c, "hash_ids", "expected ',' or ']'", d);
	return 0;
}

#define KEY_HASHES N_ROLES /* key_role() of hash_ids */
#define KEY_PRIO (N_ROLES + 1) /* key_role() of priority */

/* Which role a key names: ROLE_*, KEY_HASHES, KEY_PRIO, -1 if unknown. */
static int key_role(struct span key)
{
	const struct layout *lay = &layouts[KV_ARRAY_LEN(layouts) - 1];
	int r;

	for (r = 0; r < N_ROLES; r++)
		if (strlen(lay->name[r]) == key.n && !memcmp(lay->name[r], key.p, key.n))
			return r;
	if (key.n == 8 && !memcmp(key.p, "hash_ids", 8))
		return KEY_HASHES;
	if (key.n == strlen(PRIO_NAME) && !memcmp(key.p, PRIO_NAME, key.n))
		return KEY_PRIO;
	return -1;
}

/* An error about a key, naming it (copied only here, off the hot path). */
static int key_error(struct kv_trace *t, struct span key, const char *what,
		     const char *expected, struct kv_diag *d)
{
	char name[SHOW];

	snprintf(name, sizeof(name), "%.*s", (int)key.n, key.p);
	return kv_diag_set(d, KV_EINVAL, t->path, t->line, key.col, name, "%s '%s'%s", what,
			   name, expected);
}

/* One "key": value member; seen[] marks the keys already read (f[KEY_PRIO]: priority). */
static int json_member(struct kv_trace *t, struct jcur *c, struct span *f, int *seen,
		       struct kv_trace_row *row, struct kv_diag *d)
{
	struct span key;
	int err = json_key(t, c, &key, d), r;

	if (err)
		return err;
	r = key_role(key);
	if (r < 0)
		return key_error(t, key, "unknown key",
				 ": expected timestamp, input_length, output_length, hash_ids or priority", d);
	if (seen[r])
		return key_error(t, key, "duplicate key", "", d);
	seen[r] = 1;
	skip_ws(c);
	if (!eat(c, ':'))
		return jerr(t, c, r < N_ROLES ? t->lay->name[r] : r == KEY_PRIO ? PRIO_NAME : "hash_ids",
			    "expected ':'", d);
	skip_ws(c);
	if (r == KEY_HASHES)
		return json_hashes(t, c, row, d);
	f[r] = json_scalar(c);
	return 0;
}

/* Parses the current line as one flat object with the Mooncake keys. */
static int mooncake_row(struct kv_trace *t, struct kv_trace_row *row, struct kv_diag *d)
{
	struct jcur c = { t->buf, t->buf + t->len, t->buf };
	struct span f[KEY_PRIO + 1] = { { NULL, 0, 0 } }; /* the roles, an unused slot, the priority */
	int seen[KEY_PRIO + 1] = { 0 }, r, err;

	skip_ws(&c);
	if (!eat(&c, '{'))
		return jerr(t, &c, "", "expected '{' opening a JSON object", d);
	skip_ws(&c);
	if (!eat(&c, '}')) {
		do {
			skip_ws(&c);
			err = json_member(t, &c, f, seen, row, d);
			if (err)
				return err;
			skip_ws(&c);
		} while (eat(&c, ','));
		if (!eat(&c, '}'))
			return jerr(t, &c, "", "expected ',' or '}'", d);
	}
	for (r = 0; r < N_ROLES; r++)
		if (!seen[r])
			return kv_diag_set(d, KV_EINVAL, t->path, t->line, jcol(&c) - 1,
					   layouts[KV_ARRAY_LEN(layouts) - 1].name[r],
					   "missing field: expected keys timestamp, input_length and output_length");
	skip_ws(&c);
	if (c.p != c.end)
		return jerr(t, &c, "", "expected the end of the line after the object", d);
	return fill_row(t, f, seen[KEY_PRIO] ? &f[KEY_PRIO] : NULL, row, d);
}

/* ---- reader ------------------------------------------------------------ */

/* The line being read passed KV_INPUT_MAX_LINE_BYTES without a newline. */
static int too_long(struct kv_trace *t, struct kv_diag *d)
{
	return kv_diag_set(d, KV_EINVAL, t->path, t->line + 1, KV_INPUT_MAX_LINE_BYTES + 1, "",
			   "line longer than %llu bytes: expected at most %llu bytes per line (a file without newlines, or a binary or corrupt one, is not a trace)",
			   (unsigned long long)KV_INPUT_MAX_LINE_BYTES,
			   (unsigned long long)KV_INPUT_MAX_LINE_BYTES);
}

/*
 * Reads the next line into t->buf without its "\n" or "\r\n".  1, 0 at EOF,
 * KV_EIO, or KV_EINVAL for a line of more than KV_INPUT_MAX_LINE_BYTES
 * before its newline ('\r' counted): a file without newlines (/dev/zero
 * copied, a corrupt file) stops there instead of growing the buffer until
 * memory runs out.  A byte loop over getc_unlocked() rather than
 * getline(), which has no bound; a reader belongs to one thread, and the
 * traces kvsim reads are small enough that the loop does not show in a
 * run's time.
 */
static int read_line(struct kv_trace *t, struct kv_diag *d)
{
	size_t n = 0;
	int c;

	while ((c = getc_unlocked(t->f)) != EOF && c != '\n') {
		if (n == KV_INPUT_MAX_LINE_BYTES)
			return too_long(t, d);
		if (n + 1 >= t->cap) {
			t->cap = t->cap ? 2 * t->cap : 256;
			t->buf = kv_xrealloc(t->buf, t->cap);
		}
		t->buf[n++] = (char)c;
	}
	if (c == EOF && ferror(t->f))
		return kv_diag_set(d, KV_EIO, t->path, t->line + 1, 0, "", "read error: %s",
				   strerror(errno));
	if (c == EOF && n == 0)
		return 0;
	if (!t->buf)
		t->buf = kv_xmalloc(t->cap = 256);
	t->line++;
	while (n > 0 && t->buf[n - 1] == '\r')
		n--;
	t->buf[n] = '\0';
	t->len = n;
	return 1;
}

/*
 * A NUL byte in the current line (a binary or corrupt file): an error
 * naming the field that holds it and showing it as \0, rather than a value
 * that a C string would end at the NUL ("12" for "12\0...").  For CSV the
 * field is the comma-separated one around the NUL.
 */
static int nul_error(struct kv_trace *t, const char *nul, const char *field,
		     struct kv_diag *d)
{
	const char *p = nul, *end = t->buf + t->len, *q;
	char name[32], v[SHOWBUF];
	unsigned i = 0;

	while (p > t->buf && p[-1] != ',')
		p--;
	q = memchr(nul, ',', (size_t)(end - nul));
	if (!field) {
		for (q = t->buf; q < p; q++)
			i += *q == ',';
		snprintf(name, sizeof(name), "column %u", i + 1);
		field = i < t->ncols ? hdr_name(t, i) : name;
		q = memchr(nul, ',', (size_t)(end - nul));
	}
	return kv_diag_set(d, KV_EINVAL, t->path, t->line, (unsigned long)(p - t->buf) + 1, field,
			   "bad value '%s': contains a NUL byte (a binary or corrupt file?)",
			   show(p, (size_t)((q ? q : end) - p), v));
}

static int is_blank(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

/* Reads the first line: a CSV header, or the first JSON line (kept as data). */
static int read_header(struct kv_trace *t, enum kv_trace_format fmt, struct kv_diag *d)
{
	char v[SHOWBUF];
	int r = read_line(t, d);
	size_t bom = 0, lead;

	if (r <= 0)
		return r ? r : kv_diag_set(d, KV_EINVAL, t->path, 1, 0, "header",
					    "empty file: expected %s", SUPPORTED);
	if (memchr(t->buf, '\0', t->len))
		return nul_error(t, memchr(t->buf, '\0', t->len), "header", d);
	if (t->len >= 3 && !memcmp(t->buf, "\xef\xbb\xbf", 3))
		bom = 3;
	lead = bom + strspn(t->buf + bom, " \t");
	if (t->buf[lead] == '{' && (fmt == KV_TRACE_AUTO || fmt == KV_TRACE_MOONCAKE)) {
		t->fmt = KV_TRACE_MOONCAKE;
		t->lay = &layouts[KV_ARRAY_LEN(layouts) - 1];
		t->data_off = (off_t)bom;
		t->data_line = 0;
		return kv_trace_rewind(t);
	}
	if (fmt == KV_TRACE_MOONCAKE)
		return kv_diag_set(d, KV_EINVAL, t->path, 1, lead + 1, "",
				   "expected a JSON object per line for format mooncake, found '%s'",
				   show(t->buf + lead, t->len - lead, v));
	r = csv_header(t, t->buf + bom, fmt, d);
	if (r)
		return r;
	t->data_off = ftello(t->f);
	t->data_line = 1;
	if (t->data_off < 0)
		return kv_diag_set(d, KV_EIO, t->path, 1, 0, "", "cannot seek: %s",
				   strerror(errno));
	return 0;
}

/*
 * Finishes an open whose stream is f (NULL when opening failed, with errno
 * set): reads the header.  Takes f; frees everything on failure.
 */
static int open_stream(FILE *f, const char *path, enum kv_trace_format fmt,
		       struct kv_trace **out, struct kv_diag *d)
{
	struct kv_trace *t;
	int err;

	*out = NULL;
	if (!f)
		return kv_diag_set(d, KV_EIO, path, 0, 0, "", "cannot open: %s", strerror(errno));
	t = kv_xcalloc(1, sizeof(*t));
	t->path = kv_xstrdup(path);
	t->f = f;
	t->col_prio = -1;
	err = read_header(t, fmt, d);
	if (err)
		goto fail;
	*out = t;
	return 0;
fail:
	kv_trace_close(t);
	return err;
}

int kv_trace_open(const char *path, enum kv_trace_format fmt, struct kv_trace **out,
		  struct kv_diag *d)
{
	FILE *f;
	int err = kv_input_open(path, &f, d); /* regular files only; never blocks */

	*out = NULL;
	return err ? err : open_stream(f, path, fmt, out, d);
}

int kv_trace_open_mem(const char *name, const void *data, size_t len,
		      enum kv_trace_format fmt, struct kv_trace **out, struct kv_diag *d)
{
	/*
	 * fmemopen() keeps the one FILE code path (getline, ftello, fseeko)
	 * that files take, rather than a second line splitter over memory.
	 * Reading mode never writes to the buffer, so the cast is safe; glibc
	 * (since 2.22) reads NUL bytes as data and accepts a size of 0.
	 */
	static char empty[1];

	return open_stream(fmemopen(data ? (void *)(uintptr_t)data : empty, len, "r"), name, fmt,
			   out, d);
}

int kv_trace_next(struct kv_trace *t, struct kv_trace_row *row, struct kv_diag *d)
{
	int r;

	while ((r = read_line(t, d)) == 1 && is_blank(t->buf, t->len))
		;
	if (r <= 0)
		return r;
	if (memchr(t->buf, '\0', t->len))
		return nul_error(t, memchr(t->buf, '\0', t->len),
				 t->fmt == KV_TRACE_MOONCAKE ? "" : NULL, d);
	row->line = t->line;
	row->t_ns = 0;
	row->n_hashes = 0;
	row->n_hashes_dropped = 0;
	row->priority = 0;
	row->has_priority = 0;
	if (t->fmt == KV_TRACE_MOONCAKE)
		r = mooncake_row(t, row, d);
	else
		r = csv_row(t, row, d);
	return r < 0 ? r : 1;
}

int kv_trace_rewind(struct kv_trace *t)
{
	if (fseeko(t->f, t->data_off, SEEK_SET) != 0)
		return KV_EIO;
	clearerr(t->f);
	t->line = t->data_line;
	t->have_prev = 0;
	return 0;
}

void kv_trace_close(struct kv_trace *t)
{
	if (!t)
		return;
	if (t->f)
		fclose(t->f);
	free(t->buf);
	free(t->hdr);
	free(t->names);
	free(t->path);
	free(t);
}
