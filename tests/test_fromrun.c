/* test_fromrun.c -- the recorded-run readers (src/fromrun.h) and the JSON reader (src/json.h). */
#include "fromrun.h"
#include "json.h"
#include "profile_load.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int load(struct kv_run *r, const char *text, struct kv_diag *d)
{
	memset(d, 0, sizeof(*d));
	return kv_run_load_mem(r, "run.x", text, strlen(text), d);
}

START_TEST(test_vllm_json)
{
	static const char *text =
		"{\"request_rate\": Infinity, \"max_concurrency\": null,\n"
		" \"start_times\": [105.5, 100.0, 101.25],\n"
		" \"input_lens\": [10, 20, 30],\n"
		" \"output_lens\": [5, 1, 0],\n"
		" \"ttfts\": [0.1, 0.2, 0.0],\n"
		" \"itls\": [[0.01, 0.02, 0.03, 0.04], [], []],\n"
		" \"generated_texts\": [\"a \\ud83d\\ude00\", \"b\", \"\"],\n"
		" \"errors\": [\"\", \"\", \"timeout\"]}\n";
	struct kv_run r;
	struct kv_diag d;

	ck_assert_msg(load(&r, text, &d) == 0, "%s:%lu:%lu: %s", d.file, d.line, d.col, d.msg);
	ck_assert_str_eq(r.format, "vllm-json");
	ck_assert_uint_eq(r.n, 2);
	ck_assert_uint_eq(r.n_failed, 1);
	/* sorted by send time: the second request first, at 0 */
	ck_assert_uint_eq(r.req[0].prompt_tokens, 20);
	ck_assert_uint_eq(r.req[0].arrival_ns, 0);
	ck_assert_uint_eq(r.req[1].arrival_ns, 5500000000ULL);
	ck_assert(isnan(r.req[0].tpot_s));
	ck_assert_msg(fabs(r.req[1].e2e_s - 0.2) < 1e-12, "e2e %g: ttft + sum(itls)", r.req[1].e2e_s);
	ck_assert_msg(fabs(r.req[1].tpot_s - 0.025) < 1e-12, "tpot %g", r.req[1].tpot_s);
	kv_run_release(&r);
}
END_TEST

START_TEST(test_vllm_json_no_start_times)
{
	struct kv_run r;
	struct kv_diag d;

	ck_assert_int_eq(load(&r, "{\"request_rate\": 4.0, \"input_lens\": [1], \"output_lens\": [1],"
				  " \"ttfts\": [0.1], \"latencies\": [0.1]}", &d), KV_EINVAL);
	ck_assert_str_eq(d.field, "start_times");
	kv_run_release(&r);
	ck_assert_int_eq(load(&r, "{\"request_rate\": \"inf\", \"input_lens\": [1], \"output_lens\": [1],"
				  " \"ttfts\": [0.1], \"latencies\": [0.1]}", &d), 0);
	kv_run_release(&r);
}
END_TEST

START_TEST(test_csv_and_jsonl)
{
	struct kv_run r;
	struct kv_diag d;

	ck_assert_int_eq(load(&r, "id,status,arrival_ms,prompt_tokens,output_tokens,ttft_ms,itl_ms\n"
				  "0,completed,1000,8,3,50,10\n1,rejected_pool,1500,8,3,,\n"
				  "2,completed,500,4,1,20,0\n", &d), 0);
	ck_assert_str_eq(r.format, "csv");
	ck_assert_uint_eq(r.n, 2);
	ck_assert_uint_eq(r.n_failed, 1);
	ck_assert_uint_eq(r.req[1].arrival_ns, 500000000ULL);
	ck_assert_msg(fabs(r.req[1].e2e_s - 0.07) < 1e-12, "e2e %g = ttft + itl (out - 1)", r.req[1].e2e_s);
	kv_run_release(&r);
	ck_assert_int_eq(load(&r, "{\"arrival_s\": 0, \"prompt_tokens\": 3, \"output_tokens\": 2, "
				  "\"ttft_s\": 0.1, \"e2e_s\": 0.3}\n\n"
				  "{\"arrival_s\": 2, \"prompt_tokens\": 3, \"output_tokens\": 2, "
				  "\"ttft_s\": 0.1, \"e2e_s\": 0.3, \"extra\": [1]}\n", &d), 0);
	ck_assert_str_eq(r.format, "jsonl");
	ck_assert_uint_eq(r.n, 2);
	kv_run_release(&r);
}
END_TEST

/* Each malformed run: exit code, line, column and field of the message. */
START_TEST(test_malformed)
{
	static const struct {
		const char *text;
		unsigned long line, col;
		const char *field, *msg;
	} c[] = {
		{ "arrival_s,prompt_tokens,output_tokens,ttft_s\n0,1,1,0.1\n", 1, 0, "e2e", "no e2e or itl" },
		{ "arrival_s,prompt_tokens,ttft_s,e2e_s\n0,1,0.1,1\n", 1, 0, "output_tokens", "no output_tokens" },
		{ "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n0,1.5,1,0.1,1\n", 2, 0, "prompt_tokens", "1.5" },
		{ "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n0,1,1,0.5,0.1\n", 2, 0, "e2e_s", "from the TTFT 0.5" },
		{ "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n0,1,1,0.5\n", 2, 0, "", "4 fields" },
		{ "{\"input_lens\": [1], \"output_lens\": [1], \"ttfts\": [0.1], \"latencies\": [0.1],}", 1, 76, "", "trailing comma" },
		{ "{\"input_lens\": [1], \"input_lens\": [1]}", 1, 21, "", "duplicate key" },
		{ "{\"input_lens\": [01]}", 1, 18, "", "expected ',' or ']'" },
		{ "{\"input_lens\": [1], \"output_lens\": [1], \"ttfts\": [\"a\"], \"latencies\": [1], \"start_times\": [0]}", 1, 51, "ttfts", "a string" },
		{ "{\"input_lens\": [1], \"output_lens\": [1], \"ttfts\": [0.1]}", 1, 1, "latencies", "absent" },
		{ "{\"a\": \"x\\q\"}", 1, 10, "", "after '\\'" },
		{ "{\"a\": \"\\ud83\"}", 1, 13, "", "4 hexadecimal" },
		{ "{\"arrival_s\": 0, \"prompt_tokens\": 3, \"output_tokens\": 2, \"ttft_s\": 0.1, \"e2e_s\": 1} x\n", 1, 85, "", "one JSON object per line" },
		{ "", 0, 0, "", "an empty file" },
		/* a bad element of a later array: at that element, not at input_lens' */
		{ "{\"input_lens\": [1, 2, 3],\n \"output_lens\": [1, 1, 1],\n \"ttfts\": [0.1, 0.1, 0.1],\n"
		  " \"latencies\": [1, 1, NaN], \"start_times\": [0, 1, 2]}", 4, 22, "latencies", "nan" },
		{ "{\"input_lens\": [1, 2, 3],\n \"output_lens\": [1, -1, 1],\n \"ttfts\": [0.1, 0.1, 0.1],\n"
		  " \"latencies\": [1, 1, 1], \"start_times\": [0, 1, 2]}", 2, 21, "output_lens", "-1" },
		{ "{\"input_lens\": [1, 2, 3],\n \"output_lens\": [1, 1, 1],\n \"ttfts\": [0.1, 0.1, Infinity],\n"
		  " \"latencies\": [1, 1, 1], \"start_times\": [0, 1, 2]}", 3, 22, "ttfts", "inf" },
		{ "{\"input_lens\": [1, 2],\n \"output_lens\": [2, 3],\n \"ttfts\": [0.1, 0.1],\n"
		  " \"itls\": [[0.1], [0.2, -0.5]], \"start_times\": [0, NaN]}", 4, 24, "itls", "-0.5" },
		{ "{\"input_lens\": [1, 2],\n \"output_lens\": [2, 3],\n \"ttfts\": [0.1, 0.1],\n"
		  " \"latencies\": [1, 1], \"start_times\": [0, NaN]}", 4, 42, "start_times", "nan: expected a finite send time" },
		/* physical bounds: times in (1 us, 1 day), tokens up to 2^24, in the file's unit */
		{ "{\"input_lens\": [1, 2],\n \"output_lens\": [2, 3],\n \"ttfts\": [0.1, 1e300],\n"
		  " \"latencies\": [1, 1], \"start_times\": [0, 1]}", 3, 17, "ttfts", "1e+300: expected a time in [1e-06, 86400] s" },
		{ "arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms\n0,1,1,0.0001,1\n", 2, 0, "ttft_ms",
		  "0.0001: expected a time in [0.001, 86400000] ms" },
		{ "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n0,1,1,0.1,86401\n", 2, 0, "e2e_s",
		  "86401: expected a time from the TTFT 0.1 to 86400 s" },
		{ "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n0,16777217,1,0.1,1\n", 2, 0, "prompt_tokens",
		  "in [1, 16777216]" },
		{ "arrival_s,prompt_tokens,output_tokens,ttft_s,itl_s\n0,1,100000,0.1,1\n", 2, 0, "itl_s",
		  "gives an E2E latency of 99999.1 s" },
		{ "{\"arrival_s\": 0, \"prompt_tokens\": 3, \"output_tokens\": 2, \"ttft_s\": 1e300, \"e2e_s\": 1}\n", 1, 68,
		  "ttft_s", "1e+300" },
		{ "{\"input_lens\": [1],\n \"output_lens\": [2],\n \"ttfts\": [0.1],\n \"itls\": [[86400]], \"start_times\": [0]}",
		  4, 11, "itls", "the TTFT plus the sum of itls" },
		/* JSON lines: one object per line */
		{ "{\"arrival_s\": 0, \"prompt_tokens\": 3, \"output_tokens\": 2, \"ttft_s\": 0.1, \"e2e_s\": 1}\n"
		  "{\"arrival_s\": 1,\n \"prompt_tokens\": 3}\n", 2, 0, "", "does not end on its line" },
		{ "{\"arrival_s\": 0,\n \"prompt_tokens\": 3}\n", 1, 1, "", "without input_lens" },
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct kv_run r;
		struct kv_diag d;
		int rc = load(&r, c[i].text, &d);

		ck_assert_msg(rc == KV_EINVAL, "case %zu: rc %d", i, rc);
		ck_assert_msg(d.line == c[i].line && d.col == c[i].col && !strcmp(d.field, c[i].field) &&
				      strstr(d.msg, c[i].msg),
			      "case %zu: got %lu:%lu: %s: %s; expected %lu:%lu: %s: ...%s...", i, d.line,
			      d.col, d.field, d.msg, c[i].line, c[i].col, c[i].field, c[i].msg);
		kv_run_release(&r);
	}
}
END_TEST

START_TEST(test_json_tree)
{
	static const char *text = "{\"a\": [1, -2.5e3, true, null, \"s\\\"t\"], \"b\": {}, \"c\": -Infinity}";
	struct kv_json_doc doc = { 0 };
	struct kv_diag d;
	size_t pos = 0, a, k;
	unsigned long line = 1, col = 1;

	ck_assert_int_eq(kv_json_parse(&doc, text, strlen(text), &pos, &line, &col, "t", &d), 0);
	ck_assert_uint_eq(pos, strlen(text));
	a = kv_json_get(&doc, 0, "a");
	ck_assert_uint_eq(doc.node[a].n, 5);
	k = kv_json_first(&doc, a);
	ck_assert(doc.node[k].num == 1);
	k = doc.node[k].next;
	ck_assert(doc.node[k].num == -2500);
	k = doc.node[doc.node[k].next].next;
	ck_assert_int_eq(doc.node[k].type, KV_JSON_NULL);
	k = doc.node[k].next;
	ck_assert_uint_eq(doc.node[k].len, 4); /* s \\ " t, undecoded */
	ck_assert(isinf(doc.node[kv_json_get(&doc, 0, "c")].num));
	ck_assert_uint_eq(doc.node[kv_json_get(&doc, 0, "b")].n, 0);
	ck_assert_uint_eq(kv_json_get(&doc, 0, "z"), 0);
	kv_json_release(&doc);
}
END_TEST

/*
 * Past KV_RUN_MAX_REQUESTS the first requests by send time are kept (ties in
 * file order), whatever their place in the file: rows written in reverse
 * send order keep the file's last ones.
 */
START_TEST(test_cap_first_by_send_time)
{
	size_t n = KV_RUN_MAX_REQUESTS + 1234, i, len = 0, cap = n * 24 + 64;
	char *text = malloc(cap);
	struct kv_run r;
	struct kv_diag d;
	int rc;

	ck_assert_ptr_nonnull(text);
	len += (size_t)snprintf(text, cap, "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n");
	for (i = 0; i < n; i++) /* row i sent at n - i: the last row first */
		len += (size_t)snprintf(text + len, cap - len, "%zu,%zu,2,0.1,0.2\n", n - i, i % 1000 + 1);
	memset(&d, 0, sizeof(d));
	rc = kv_run_load_mem(&r, "big.csv", text, len, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_uint_eq(r.n, KV_RUN_MAX_REQUESTS);
	ck_assert_uint_eq(r.n_dropped, 1234);
	ck_assert_uint_eq(r.n_rows, n);
	ck_assert_uint_eq(r.req[0].seq, n - 1); /* sent at 1: the file's last row */
	ck_assert_uint_eq(r.req[0].prompt_tokens, (n - 1) % 1000 + 1);
	ck_assert_uint_eq(r.req[r.n - 1].arrival_ns, (KV_RUN_MAX_REQUESTS - 1) * KV_NS_PER_S);
	kv_run_release(&r);
	/* all sent at once: the file's first rows */
	for (i = 0, len = (size_t)snprintf(text, cap, "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n");
	     i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, "5,%zu,2,0.1,0.2\n", i % 1000 + 1);
	rc = kv_run_load_mem(&r, "big.csv", text, len, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_uint_eq(r.n, KV_RUN_MAX_REQUESTS);
	ck_assert_uint_eq(r.req[r.n - 1].seq, KV_RUN_MAX_REQUESTS - 1);
	for (i = 1; i < r.n; i++)
		ck_assert_msg(r.req[i].seq == r.req[i - 1].seq + 1, "row %zu: seq %llu after %llu", i,
			      (unsigned long long)r.req[i].seq, (unsigned long long)r.req[i - 1].seq);
	kv_run_release(&r);
	free(text);
}
END_TEST

/* The JSON reader's bound on values: KV_ERANGE at the first value past it. */
START_TEST(test_json_max_nodes)
{
	struct kv_json_doc doc = { .max_nodes = 3 };
	struct kv_diag d;
	size_t pos = 0;
	unsigned long line = 1, col = 1;

	ck_assert_int_eq(kv_json_parse(&doc, "[1, 2]", 6, &pos, &line, &col, "t", &d), 0);
	pos = 0, line = 1, col = 1;
	ck_assert_int_eq(kv_json_parse(&doc, "[1, 2, 3]", 9, &pos, &line, &col, "t", &d), KV_ERANGE);
	ck_assert_msg(d.col == 8 && strstr(d.msg, "more than 3 values"), "%lu: %s", d.col, d.msg);
	kv_json_release(&doc);
	ck_assert_uint_eq(doc.max_nodes, 3);
}
END_TEST

/* The replay's trace has no name in $TMPDIR: nothing a kill could leave behind. */
START_TEST(test_replay_trace_unnamed)
{
	static struct kv_workload w;
	char dir[] = "/tmp/kvsim-fromrun-XXXXXX", line[128];
	struct kv_replay rp = { 0 };
	struct kv_run r;
	struct kv_diag d;
	DIR *dh;
	struct dirent *e;
	FILE *f;
	int n = 0;

	ck_assert_int_eq(load(&r, "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n0.5,7,3,0.1,0.2\n",
			      &d), 0);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("TMPDIR", dir, 1);
	ck_assert_msg(kv_replay_init(&rp, &w, &r, &d) == 0, "%s", d.msg);
	ck_assert_msg(!strncmp(rp.trace, "/proc/self/fd/", 14), "trace %s", rp.trace);
	ck_assert_str_eq(w.cfg.source.trace_path, rp.trace);
	dh = opendir(dir);
	while ((e = readdir(dh)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(dh);
	ck_assert_msg(n == 0, "%d names left in %s", n, dir);
	f = fopen(rp.trace, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_str_eq(line, "0.000000000,7,3\n");
	fclose(f);
	kv_replay_release(&rp);
	kv_replay_release(&rp); /* twice is safe */
	ck_assert_int_eq(rmdir(dir), 0);
	kv_run_release(&r);
}
END_TEST

/* After SIGTERM (kv_run_catch_signals) the reader stops: KV_EINTR, the message says so. */
START_TEST(test_load_interrupted)
{
	struct kv_run r;
	struct kv_diag d;

	kv_run_catch_signals();
	raise(SIGTERM);
	ck_assert_int_eq(kv_run_stopped(), SIGTERM);
	ck_assert_int_eq(load(&r, "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n0,1,1,0.1,0.2\n"
				  "1,1,1,0.1,0.2\n", &d), KV_EINTR);
	ck_assert_msg(strstr(d.msg, "interrupted by SIGTERM") && d.line == 1, "%lu: %s", d.line, d.msg);
	kv_run_release(&r);
}
END_TEST

/* A written profile reads back with the base profile's collective_overhead (and without one: 0). */
START_TEST(test_profile_collective_overhead_round_trip)
{
	char dir[] = "/tmp/kvsim-fromrun-XXXXXX", path[64];
	struct kv_device dev, back;
	struct kv_diag d = { 0 };
	int k;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/dev.yaml", dir);
	ck_assert_int_eq(kv_profile_load_device("a100-80g", &dev, &d), 0);
	for (k = 0; k < 2; k++) {
		dev.collective_overhead_ns = k ? 25 * KV_NS_PER_US : 0;
		ck_assert_int_eq(kv_run_write_profile(path, &dev, "test", &d), 0);
		ck_assert_msg(kv_profile_load_device(path, &back, &d) == 0, "%s", d.msg);
		ck_assert(back.collective_overhead_ns == dev.collective_overhead_ns);
		ck_assert(back.allreduce_latency_ns == dev.allreduce_latency_ns);
	}
	unlink(path);
	rmdir(dir);
}
END_TEST

/*
 * A score that cannot judge says so: no requests scored prints n/a with the
 * reason and leaves the CSV cells empty (was "nan"); a measured 0 leaves
 * the error n/a while the values stand.
 */
START_TEST(test_score_na)
{
	struct kv_run_score sc;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int s;

	memset(&sc, 0, sizeof(sc));
	for (s = 0; s < KV_RUN_STATS; s++)
		sc.pred[0][s] = sc.meas[0][s] = NAN;
	sc.mape[0] = NAN;
	sc.n[1] = 3; /* tpot: judged, but its p99 measured 0 */
	for (s = 0; s < KV_RUN_STATS; s++) {
		sc.pred[1][s] = 0.02;
		sc.meas[1][s] = s == KV_RUN_P99 ? 0 : 0.01;
	}
	sc.n[2] = 3;
	f = open_memstream(&buf, &len);
	kv_run_score_print(f, &sc);
	kv_run_score_csv(f, "x", &sc);
	fclose(f);
	ck_assert_msg(!strstr(buf, "nan") && !strstr(buf, "inf"), "%s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "n/a (no requests scored)"));
	ck_assert_ptr_nonnull(strstr(buf, "n/a (measured 0)"));
	ck_assert_ptr_nonnull(strstr(buf, "+100.00%"));
	ck_assert_ptr_nonnull(strstr(buf, "x,ttft,mean,,,,0\n"));
	ck_assert_ptr_nonnull(strstr(buf, "x,ttft,mape,,,,0\n"));
	ck_assert_ptr_nonnull(strstr(buf, "x,tpot,p99,0.02,0,,3\n"));
	free(buf);
}
END_TEST

/* text into a fresh temporary file; its path in path (64 bytes). */
static void temp_file(char *path, const char *text)
{
	FILE *f;
	int fd;

	strcpy(path, "/tmp/kvsim-steps-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
}

/* Steps read by their column names (any order, others ignored, step_s in seconds) and round-trip. */
START_TEST(test_steps_load_and_write)
{
	char in[64], out[64];
	struct kv_steps st, st2;
	struct kv_diag d = { 0 };
	size_t i;

	temp_file(in, "note,kv_read_bytes,attn_pairs,n_sample,n_prefill_tokens,n_decode,n_seqs,step_s\n"
		      "x,1000,50,1,40,0,1,0.016\n\ny,2000,90,3,0,3,3,0.0205\n");
	ck_assert_msg(kv_steps_load(&st, in, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(st.n, 2);
	ck_assert_uint_eq(st.rec[0].shape.n_prefill_tokens, 40);
	ck_assert_uint_eq(st.rec[0].shape.kv_read_bytes, 1000);
	ck_assert_uint_eq(st.rec[1].shape.n_decode, 3);
	ck_assert_uint_eq(st.rec[1].shape.attn_pairs, 90);
	ck_assert_msg(st.rec[1].real_ns == 20500000, "%llu ns", (unsigned long long)st.rec[1].real_ns);
	strcpy(out, in);
	strcat(out, ".w");
	ck_assert_msg(kv_steps_write(out, &st, &d) == 0, "%s", d.msg);
	ck_assert_msg(kv_steps_load(&st2, out, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(st2.n, st.n);
	for (i = 0; i < st.n; i++) {
		ck_assert(!memcmp(&st.rec[i].shape, &st2.rec[i].shape, sizeof(st.rec[i].shape)));
		ck_assert_uint_eq(st.rec[i].real_ns, st2.rec[i].real_ns);
	}
	kv_steps_release(&st);
	kv_steps_release(&st2);
	unlink(in);
	unlink(out);
}
END_TEST

/* Each bad step file: KV_EINVAL naming its line and what was wrong. */
START_TEST(test_steps_bad)
{
	static const struct {
		const char *text, *want;
		unsigned long line;
	} cases[] = {
		{ "n_seqs,n_decode\n1,1\n", "missing column: expected a header", 1 },
		{ "n_seqs,n_decode,n_prefill_tokens,n_sample,attn_pairs,kv_read_bytes\n1,1,0,1,1,1\n",
		  "duration as measured_ms", 1 },
		{ "n_seqs,n_decode,n_prefill_tokens,n_sample,attn_pairs,kv_read_bytes,measured_ms\n"
		  "1,1,0,1,1,1,5\n1.5,1,0,1,1,1,5\n", "bad value '1.5': expected a whole number", 3 },
		{ "n_seqs,n_decode,n_prefill_tokens,n_sample,attn_pairs,kv_read_bytes,measured_ms\n"
		  "1,2,0,1,1,1,5\n", "bad step", 2 },
		{ "n_seqs,n_decode,n_prefill_tokens,n_sample,attn_pairs,kv_read_bytes,measured_ms\n"
		  "1,0,0,0,0,0,5\n", "at least one token", 2 },
		{ "n_seqs,n_decode,n_prefill_tokens,n_sample,attn_pairs,kv_read_bytes,measured_ms\n"
		  "1,1,0,1,1,1,0\n", "bad value '0': expected a step time", 2 },
		{ "n_seqs,n_decode,n_prefill_tokens,n_sample,attn_pairs,kv_read_bytes,measured_ms\n",
		  "no steps", 2 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[64];
		struct kv_steps st;
		struct kv_diag d = { 0 };
		int rc;

		temp_file(path, cases[i].text);
		rc = kv_steps_load(&st, path, &d);
		ck_assert_msg(rc == KV_EINVAL && strstr(d.msg, cases[i].want) && d.line == cases[i].line,
			      "case %zu: rc %d, line %lu: %s", i, rc, d.line, d.msg);
		kv_steps_release(&st);
		unlink(path);
	}
}
END_TEST

/* A host profile written by --fit-host reads back with every coefficient, in whole ns. */
START_TEST(test_host_write_round_trip)
{
	char path[64];
	struct kv_host_profile h = { 0 }, back;
	struct kv_diag d = { 0 };
	int i;

	temp_file(path, "");
	strcpy(path + strlen(path), ".yaml");
	snprintf(h.name, sizeof(h.name), "fitted");
	h.cpu_speed = 1.5;
	for (i = 0; i < KV_HOST_NCOEF; i++)
		h.coef[i] = 1000.0 * i + 0.4; /* rounds to 1000 i */
	ck_assert_msg(kv_run_write_host(path, &h, "a comment\nof two lines", &d) == 0, "%s", d.msg);
	ck_assert_msg(kv_profile_load_host(path, &back, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(back.name, "fitted");
	ck_assert(back.cpu_speed == 1.5);
	ck_assert_uint_eq(back.set, (1u << KV_HOST_NCOEF) - 1);
	for (i = 0; i < KV_HOST_NCOEF; i++)
		ck_assert_msg(back.coef[i] == 1000.0 * i, "%s: %g", kv_host_coef_key(i), back.coef[i]);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fromrun");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120); /* the cap test reads 2 x 200k rows: seconds under sanitizers */
	tcase_add_test(tc, test_vllm_json);
	tcase_add_test(tc, test_vllm_json_no_start_times);
	tcase_add_test(tc, test_csv_and_jsonl);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_json_tree);
	tcase_add_test(tc, test_profile_collective_overhead_round_trip);
	tcase_add_test(tc, test_cap_first_by_send_time);
	tcase_add_test(tc, test_json_max_nodes);
	tcase_add_test(tc, test_replay_trace_unnamed);
	tcase_add_test(tc, test_score_na);
	tcase_add_test(tc, test_steps_load_and_write);
	tcase_add_test(tc, test_steps_bad);
	tcase_add_test(tc, test_host_write_round_trip);
	tcase_add_test(tc, test_load_interrupted); /* last: the stop flag stays set */
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
