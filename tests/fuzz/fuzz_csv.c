/*
 * fuzz_csv.c -- libFuzzer target for the CSV writer and reader (src/lib/csv.h).
 *
 * Round trip: the input is split into records at byte 0x01 and each record
 * into fields at NUL; the fields are written with kv_csv_put() (and
 * kv_csv_escape(), which must give the same bytes), then read back both
 * from memory (kv_csv_rec_parse) and from a stream (kv_csv_rec_read): every
 * record and field must come back identical, with nothing left over.
 *
 * Reader: the raw input is also parsed as CSV text.  Each call returns a
 * record, the end, or KV_EINVAL with a message; a record's fields, written
 * again and parsed again, come back the same.
 */
#include "csv.h"
#include "fuzz.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fields of input records, NUL-terminated in place. */
struct recs {
	char *buf; /* the input with separators as NULs */
	size_t *rec_start; /* first field of each record in fld */
	char **fld;
	size_t n_rec, n_fld;
};

static void split(const uint8_t *data, size_t size, struct recs *r)
{
	size_t i;

	r->buf = kv_xmalloc(size + 1);
	memcpy(r->buf, data, size);
	r->buf[size] = 0;
	r->fld = kv_xmalloc((size + 1) * sizeof(*r->fld));
	r->rec_start = kv_xmalloc((size + 2) * sizeof(*r->rec_start));
	r->n_rec = 1;
	r->n_fld = 1;
	r->rec_start[0] = 0;
	r->fld[0] = r->buf;
	for (i = 0; i < size; i++) {
		if (r->buf[i] != 0 && r->buf[i] != 1)
			continue;
		if (r->buf[i] == 1)
			r->rec_start[r->n_rec++] = r->n_fld;
		r->buf[i] = 0;
		r->fld[r->n_fld++] = r->buf + i + 1;
	}
	r->rec_start[r->n_rec] = r->n_fld;
}

/* Writes the records as CSV into a malloc'd text; checks the buffer writer agrees. */
static char *write_all(const struct recs *r, size_t *len)
{
	char *text = NULL, esc[64];
	FILE *f = open_memstream(&text, len);
	size_t k, i;

	if (!f)
		fuzz_fail("open_memstream failed");
	for (k = 0; k < r->n_rec; k++)
		for (i = r->rec_start[k]; i < r->rec_start[k + 1]; i++) {
			size_t n = kv_csv_escape(esc, sizeof(esc), r->fld[i]);
			long at = ftell(f);

			if (kv_csv_put(f, r->fld[i]))
				fuzz_fail("kv_csv_put failed");
			fflush(f);
			if ((size_t)(ftell(f) - at) != n)
				fuzz_fail("kv_csv_put wrote %ld bytes, kv_csv_escape says %zu",
					  ftell(f) - at, n);
			if (n < sizeof(esc) && memcmp(esc, text + at, n))
				fuzz_fail("kv_csv_put and kv_csv_escape differ on field %zu", i);
			putc(i + 1 < r->rec_start[k + 1] ? ',' : '\n', f);
		}
	fclose(f);
	return text;
}

/* Checks that record k of r equals rec. */
static void same(const struct recs *r, size_t k, const struct kv_csv_rec *rec, const char *how)
{
	size_t n = r->rec_start[k + 1] - r->rec_start[k], i;

	if (rec->n != n)
		fuzz_fail("%s: record %zu has %zu fields, wrote %zu", how, k, rec->n, n);
	for (i = 0; i < n; i++)
		if (strcmp(rec->field[i], r->fld[r->rec_start[k] + i]))
			fuzz_fail("%s: record %zu field %zu: read '%s', wrote '%s'", how, k, i,
				  rec->field[i], r->fld[r->rec_start[k] + i]);
}

static void round_trip(const uint8_t *data, size_t size)
{
	struct recs r;
	struct kv_csv_rec rec;
	struct kv_diag d = { 0 };
	unsigned long line = 1;
	size_t len, pos = 0, k;
	char *text;
	FILE *f;

	split(data, size, &r);
	text = write_all(&r, &len);
	kv_csv_rec_init(&rec);
	for (k = 0; k < r.n_rec; k++) {
		int rc = kv_csv_rec_parse(&rec, text, len, &pos, &line, "fuzz", &d);

		if (rc != 1)
			fuzz_fail("memory: record %zu: rc %d: %s", k, rc, d.msg);
		same(&r, k, &rec, "memory");
	}
	if (pos != len)
		fuzz_fail("memory: %zu bytes left after the records", len - pos);
	if (!(f = fmemopen(text, len, "r")))
		fuzz_fail("fmemopen failed");
	for (k = 0, line = 1; k < r.n_rec; k++) {
		int rc = kv_csv_rec_read(&rec, f, &line, "fuzz", &d);

		if (rc != 1)
			fuzz_fail("stream: record %zu: rc %d: %s", k, rc, d.msg);
		same(&r, k, &rec, "stream");
	}
	if (kv_csv_rec_read(&rec, f, &line, "fuzz", &d) != 0)
		fuzz_fail("stream: more records than written");
	fclose(f);
	kv_csv_rec_release(&rec);
	free(text);
	free(r.buf);
	free(r.fld);
	free(r.rec_start);
}

/* The raw input as CSV text: errors are KV_EINVAL with a message; records re-parse the same. */
static void parse_raw(const uint8_t *data, size_t size)
{
	struct kv_csv_rec rec, again;
	struct kv_diag d = { 0 };
	unsigned long line = 1;
	size_t pos = 0;
	int rc;

	kv_csv_rec_init(&rec);
	kv_csv_rec_init(&again);
	while ((rc = kv_csv_rec_parse(&rec, (const char *)data, size, &pos, &line, "raw", &d)) == 1) {
		char *text = NULL;
		size_t len = 0, p2 = 0, i;
		unsigned long l2 = 1;
		FILE *f = open_memstream(&text, &len);

		for (i = 0; i < rec.n; i++) {
			kv_csv_put(f, rec.field[i]);
			putc(i + 1 < rec.n ? ',' : '\n', f);
		}
		fclose(f);
		if (kv_csv_rec_parse(&again, text, len, &p2, &l2, "again", &d) != 1 || p2 != len)
			fuzz_fail("a parsed record, written again, does not parse: %s", d.msg);
		/* fields with a NUL byte are cut there when written: compare as strings */
		if (again.n != rec.n)
			fuzz_fail("re-parse: %zu fields, first parse %zu", again.n, rec.n);
		for (i = 0; i < rec.n; i++)
			if (strcmp(again.field[i], rec.field[i]))
				fuzz_fail("re-parse: field %zu differs", i);
		free(text);
	}
	if (rc != 0 && rc != KV_EINVAL)
		fuzz_fail("parse returned %d", rc);
	fuzz_check_rc(rc, &d);
	kv_csv_rec_release(&rec);
	kv_csv_rec_release(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	round_trip(data, size);
	parse_raw(data, size);
	return 0;
}
