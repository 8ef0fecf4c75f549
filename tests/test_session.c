/*
 * test_session.c -- multi-turn sessions (sim/session.h) and session
 * affinity (sim/router_session.c): the generator's turns (a prompt extends
 * the previous prompt and answer, the prefix-block ids of the shared part
 * are the previous turn's, new blocks are fresh, a shared prefix has the
 * same ids in every session, draws independent of the order sessions are
 * served in, think time added, the context bounds a session); the engine's
 * closed loop (a turn arrives exactly its think time after the previous
 * one's client-side finish, never before; every session's turns in order;
 * under every engine and scheduler, macro steps byte-identical to exact
 * steps); the router (later turns on the first turn's replica); prefix
 * chains of a replayed trace; reuse statistics; YAML errors.
 */
#include "replica.h"
#include "workload.h"

#include "testutil.h"

#include <check.h>
#include <gsl/gsl_errno.h>
#include <inttypes.h>
#include <string.h>

/* One class: first 1000 tokens fixed, 5 turns, input 100, output 50, think 2 s, B = 16. */
static struct kv_session_spec one_class(void)
{
	struct kv_session_spec sp;

	memset(&sp, 0, sizeof(sp));
	sp.n_classes = 1;
	sp.hash_block_tokens = 16;
	sp.cls[0].share = 1;
	sp.cls[0].turns = (struct kv_dist){ KV_DIST_FIXED, 5, 0, 1, 0 };
	sp.cls[0].first = (struct kv_dist){ KV_DIST_FIXED, 1000, 0, 1, 0 };
	sp.cls[0].input = (struct kv_dist){ KV_DIST_FIXED, 100, 0, 0, 0 };
	sp.cls[0].output = (struct kv_dist){ KV_DIST_FIXED, 50, 0, 1, 0 };
	sp.cls[0].think = (struct kv_dist){ KV_DIST_FIXED, 2, 0, 0, 0 };
	return sp;
}

static struct kv_sessions *open_ok(const struct kv_session_spec *sp, uint64_t seed, uint64_t ctx)
{
	struct kv_sessions *ss = NULL;
	struct kv_diag d = { 0 };
	int rc = kv_sessions_open(sp, seed, ctx, &ss, &d);

	ck_assert_msg(rc == 0, "open: %d %s: %s", rc, d.field, d.msg);
	return ss;
}

/* Each turn extends the previous prompt + answer; the shared blocks keep their ids. */
START_TEST(turns_extend_and_share)
{
	struct kv_session_spec sp = one_class();
	struct kv_sessions *ss = open_ok(&sp, 1, 0);
	uint64_t prev[512], prev_p = 0, prev_o = 0;
	uint32_t prev_n = 0, slot, turn = 0, k;
	struct kv_turn t;
	kv_ns now = 0, next;

	slot = kv_sessions_start(ss, 0, 0, &t);
	for (;;) {
		ck_assert_uint_eq(t.n_hashes, (t.prompt_tokens + 15) / 16);
		if (turn) {
			uint64_t whole = prev_p / 16; /* the previous turn's whole blocks */

			ck_assert_msg(t.prompt_tokens == prev_p + prev_o + 100,
				      "turn %u: prompt %" PRIu64 " after %" PRIu64 " + %" PRIu64 " + 100",
				      turn, t.prompt_tokens, prev_p, prev_o);
			for (k = 0; k < whole; k++)
				ck_assert_msg(t.hashes[k] == prev[k], "turn %u block %u: id changed", turn, k);
			if (prev_n > whole) /* the previous partial block is whole now: a new id */
				ck_assert_msg(t.hashes[whole] != prev[whole], "turn %u: the partial block kept its id", turn);
			for (k = (uint32_t)whole; k < t.n_hashes; k++) /* blocks past the shared part: fresh */
				for (uint32_t j = 0; j < prev_n; j++)
					ck_assert_msg(t.hashes[k] != prev[j], "turn %u block %u reuses an id", turn, k);
		} else {
			ck_assert_uint_eq(t.prompt_tokens, 1000);
		}
		ck_assert_uint_eq(kv_sessions_turn_index(ss, slot), turn);
		memcpy(prev, t.hashes, t.n_hashes * sizeof(*prev));
		prev_n = t.n_hashes;
		prev_p = t.prompt_tokens;
		prev_o = t.output_tokens;
		now += 1000000; /* the turn ran 1 ms */
		if (!kv_sessions_ended(ss, slot, 1, now, &next))
			break;
		ck_assert_msg(next == now + 2000000000ULL, "next turn at %" PRIu64 ", finish %" PRIu64 " + 2 s",
			      next, now);
		now = next;
		kv_sessions_turn(ss, slot, &t);
		turn++;
	}
	ck_assert_uint_eq(turn, 4); /* 5 turns */
	kv_sessions_close(ss);
}
END_TEST

/* A session's turns do not depend on the order sessions are served in. */
START_TEST(draws_independent_of_order)
{
	struct kv_session_spec sp = one_class();
	struct kv_sessions *a, *b;
	struct kv_turn t;
	uint64_t pa[2][8], pb[2][8];
	uint32_t s0, s1, i;
	kv_ns nx;

	sp.cls[0].input = (struct kv_dist){ KV_DIST_LOGNORMAL, 200, 1, 0, 0 };
	sp.cls[0].output = (struct kv_dist){ KV_DIST_EXPONENTIAL, 80, 0, 1, 0 };
	sp.cls[0].turns = (struct kv_dist){ KV_DIST_FIXED, 8, 0, 1, 0 };
	a = open_ok(&sp, 42, 0);
	b = open_ok(&sp, 42, 0);
	/* a: session 0's turns, then session 1's; b: interleaved */
	s0 = kv_sessions_start(a, 0, 0, &t);
	pa[0][0] = t.prompt_tokens;
	for (i = 1; i < 8 && kv_sessions_ended(a, s0, 1, 0, &nx); i++) {
		kv_sessions_turn(a, s0, &t);
		pa[0][i] = t.prompt_tokens;
	}
	s1 = kv_sessions_start(a, 0, 0, &t);
	pa[1][0] = t.prompt_tokens;
	for (i = 1; i < 8 && kv_sessions_ended(a, s1, 1, 0, &nx); i++) {
		kv_sessions_turn(a, s1, &t);
		pa[1][i] = t.prompt_tokens;
	}
	s0 = kv_sessions_start(b, 0, 0, &t);
	pb[0][0] = t.prompt_tokens;
	s1 = kv_sessions_start(b, 0, 0, &t);
	pb[1][0] = t.prompt_tokens;
	for (i = 1; i < 8; i++) {
		ck_assert(kv_sessions_ended(b, s1, 1, 0, &nx));
		kv_sessions_turn(b, s1, &t);
		pb[1][i] = t.prompt_tokens;
		ck_assert(kv_sessions_ended(b, s0, 1, 0, &nx));
		kv_sessions_turn(b, s0, &t);
		pb[0][i] = t.prompt_tokens;
	}
	for (i = 0; i < 8; i++)
		ck_assert_msg(pa[0][i] == pb[0][i] && pa[1][i] == pb[1][i],
			      "turn %u: %" PRIu64 "/%" PRIu64 " against %" PRIu64 "/%" PRIu64, i,
			      pa[0][i], pa[1][i], pb[0][i], pb[1][i]);
	ck_assert(pa[0][1] != pa[1][1]); /* and the sessions differ */
	kv_sessions_close(a);
	kv_sessions_close(b);
}
END_TEST

/* A shared prefix has the same ids in every session; the session's own blocks differ. */
START_TEST(shared_prefix_ids)
{
	struct kv_session_spec sp = one_class();
	struct kv_sessions *ss;
	uint64_t first[128];
	struct kv_turn t;
	uint32_t k, n;

	sp.cls[0].shared_prefix_tokens = 520; /* 32 whole blocks of 16, and 8 tokens */
	ss = open_ok(&sp, 3, 0);
	kv_sessions_start(ss, 0, 0, &t);
	n = t.n_hashes;
	memcpy(first, t.hashes, n * sizeof(*first));
	kv_sessions_start(ss, 0, 0, &t);
	for (k = 0; k < 32; k++)
		ck_assert_msg(t.hashes[k] == first[k], "shared block %u differs", k);
	for (k = 32; k < n; k++)
		ck_assert_msg(t.hashes[k] != first[k], "own block %u shared", k);
	kv_sessions_close(ss);
}
END_TEST

/* A session ends before a turn that would pass the context, or after a rejected turn. */
START_TEST(context_and_rejection_end_sessions)
{
	struct kv_session_spec sp = one_class();
	struct kv_sessions_stats st;
	struct kv_sessions *ss = open_ok(&sp, 1, 1400); /* 1000+50, then 1150+50, then 1300+50; 1450 > 1400 */
	struct kv_turn t;
	uint32_t slot = kv_sessions_start(ss, 0, 0, &t), turns = 1;
	kv_ns nx;

	while (kv_sessions_ended(ss, slot, 1, 0, &nx)) {
		kv_sessions_turn(ss, slot, &t);
		ck_assert_uint_le(t.prompt_tokens + t.output_tokens, 1400);
		turns++;
	}
	ck_assert_uint_eq(turns, 3);
	slot = kv_sessions_start(ss, 0, 0, &t);
	ck_assert(!kv_sessions_ended(ss, slot, 0, 0, &nx)); /* rejected: over */
	kv_sessions_stats(ss, &st);
	ck_assert_uint_eq(st.started, 2);
	ck_assert_uint_eq(st.truncated, 1);
	ck_assert_uint_eq(st.thinking, 0);
	kv_sessions_close(ss);
}
END_TEST

/* Class shares and the geometric turn count's mean. */
START_TEST(class_shares_and_turns)
{
	struct kv_session_spec sp = one_class();
	struct kv_sessions *ss;
	struct kv_turn t;
	unsigned i, n1 = 0, N = 20000;
	double turns = 0;

	sp.n_classes = 2;
	sp.cls[1] = sp.cls[0];
	sp.cls[0].share = 3;
	sp.cls[1].turns = (struct kv_dist){ KV_DIST_GEOMETRIC, 4, 0, 2, 1000 };
	ss = open_ok(&sp, 9, 0);
	for (i = 0; i < N; i++) {
		uint32_t slot = kv_sessions_start(ss, 0, 0, &t), n = 1;
		kv_ns nx;

		if (kv_sessions_class(ss, slot) == 1) {
			n1++;
			while (kv_sessions_ended(ss, slot, 1, 0, &nx)) {
				kv_sessions_turn(ss, slot, &t);
				n++;
			}
			turns += n;
		} else {
			while (kv_sessions_ended(ss, slot, 1, 0, &nx))
				kv_sessions_turn(ss, slot, &t);
		}
	}
	ck_assert_msg(n1 > 0.23 * N && n1 < 0.27 * N, "class 1 drawn %u of %u (expected 25%%)", n1, N);
	ck_assert_msg(turns / n1 > 3.85 && turns / n1 < 4.15, "mean turns %g (expected 4)", turns / n1);
	kv_sessions_close(ss);
}
END_TEST

/* Bad specs name the field. */
START_TEST(spec_errors)
{
	struct kv_session_spec sp = one_class();
	struct kv_sessions *ss = NULL;
	struct kv_diag d = { 0 };

	sp.cls[0].output.mean = 0;
	ck_assert_int_eq(kv_sessions_open(&sp, 1, 0, &ss, &d), KV_EINVAL);
	ck_assert_str_eq(d.field, "workload.sessions[0].output");
	sp = one_class();
	sp.cls[0].turns = (struct kv_dist){ KV_DIST_GEOMETRIC, 3, 0, 1, 0 };
	ck_assert_int_eq(kv_sessions_open(&sp, 1, 0, &ss, &d), KV_EINVAL);
	ck_assert_str_eq(d.field, "workload.sessions[0].turns.max");
	sp = one_class();
	sp.cls[0].share = -1;
	ck_assert_int_eq(kv_sessions_open(&sp, 1, 0, &ss, &d), KV_EINVAL);
	ck_assert(ss == NULL);
}
END_TEST

/* --- the engine's closed loop -------------------------------------------------- */

#define MAX_ROWS 4096

struct row {
	uint64_t id, session;
	uint32_t turn, replica;
	kv_ns arrival, finish;
	uint64_t prompt, output;
	int done;
};

struct rec {
	struct row r[MAX_ROWS];
	unsigned n;
	uint64_t digest;
};

static struct rec rec_a, rec_b;

static int on_req(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct rec *w = ctx;
	struct row *x = &w->r[w->n < MAX_ROWS ? w->n++ : MAX_ROWS - 1];
	uint64_t v[9];
	unsigned i;

	x->id = q->id;
	x->session = q->session == KV_NIL ? UINT64_MAX :
		     s->sess ? kv_sessions_id(s->sess, q->session) : q->session;
	x->turn = q->turn;
	x->replica = q->replica;
	x->arrival = q->arrival_ns;
	x->finish = q->finish_ns;
	x->prompt = q->prompt_tokens;
	x->output = q->output_tokens;
	x->done = e == KV_END_COMPLETED;
	v[0] = x->id, v[1] = x->session, v[2] = x->turn, v[3] = x->replica, v[4] = x->arrival;
	v[5] = x->finish, v[6] = x->prompt, v[7] = (uint64_t)e, v[8] = q->first_token_ns;
	for (i = 0; i < sizeof(v); i++)
		w->digest = (w->digest ^ ((const unsigned char *)v)[i]) * 1099511628211ULL;
	return 0;
}

/* Runs YAML text (with --set style overrides) into w; exact: one event per iteration. */
static void run_yaml(const char *text, char *const *sets, size_t n_sets, int exact, int check,
		     struct rec *w)
{
	static struct kv_workload wl;
	struct kv_sink sink = { .ctx = w, .request = on_req };
	struct kv_diag d = { 0 };
	struct kv_sim s;
	int rc;

	memset(w, 0, sizeof(*w));
	w->digest = 1469598103934665603ULL;
	rc = kv_workload_load_mem(&wl, "sessions.yaml", text, strlen(text), sets, n_sets, 0, 0, &d);
	ck_assert_msg(rc == 0, "load: %s:%lu: %s: %s", d.file, d.line, d.field, d.msg);
	wl.cfg.exact_steps = exact;
	wl.cfg.check_pool = check;
	rc = kv_sim_init(&s, &wl.cfg, &sink);
	ck_assert_msg(rc == 0, "init: %s: %s", s.diag.field, s.diag.msg);
	rc = kv_sim_run(&s);
	ck_assert_msg(rc == 0, "run: %s: %s", s.diag.field, s.diag.msg);
	kv_sim_release(&s);
	kv_workload_release(&wl);
}

static const char chat_yaml[] =
	"model: tiny\ndevice: a100-80g\nseed: 3\n"
	"cluster: {replicas: 3, router: session-affinity}\n"
	"scheduler: fifo\n"
	"cache: {name: shared, prefix_block_tokens: 16, hash_block_tokens: 16}\n"
	"workload:\n  requests: 60\n  arrival: {process: poisson, rate: 4}\n"
	"  sessions:\n    hash_block_tokens: 16\n    shared_prefix: 100\n"
	"    turns: {dist: geometric, mean: 4, min: 1, max: 12}\n"
	"    first: {dist: lognormal, mean: 200, sigma: 1, max: 800}\n"
	"    input: {dist: uniform, min: 10, max: 60}\n"
	"    output: {dist: lognormal, mean: 40, sigma: 0.8, max: 200}\n"
	"    think: 500ms\n"
	"outputs: {sample_interval: 100ms}\n";

/* Index of the row of (session, turn), or -1. */
static int find_row(const struct rec *w, uint64_t session, uint32_t turn)
{
	unsigned i;

	for (i = 0; i < w->n; i++)
		if (w->r[i].session == session && w->r[i].turn == turn)
			return (int)i;
	return -1;
}

/*
 * Turn j+1 arrives exactly 500 ms after turn j's finish, extends it, on its home replica.
 * 60 sessions; 30 under valgrind, where the pool checks after every event take half of
 * memcheck's time over this suite.
 */
START_TEST(closed_loop)
{
	char set_n[] = "workload.requests=30";
	char *sets[1] = { set_n };
	unsigned i, later = 0, sessions = under_valgrind() ? 30 : 60;

	run_yaml(chat_yaml, sets, sessions == 60 ? 0 : 1, 0, 1, &rec_a);
	ck_assert_uint_gt(rec_a.n, sessions);
	for (i = 0; i < rec_a.n; i++) {
		const struct row *x = &rec_a.r[i], *p, *h;
		int j;

		ck_assert(x->session != UINT64_MAX);
		if (x->turn == 0)
			continue;
		j = find_row(&rec_a, x->session, x->turn - 1);
		ck_assert_msg(j >= 0, "session %" PRIu64 " turn %u without its previous turn", x->session, x->turn);
		p = &rec_a.r[j];
		h = &rec_a.r[find_row(&rec_a, x->session, 0)];
		ck_assert_msg(p->done, "a turn after a rejected one");
		ck_assert_msg(x->arrival == p->finish + 500000000ULL,
			      "session %" PRIu64 " turn %u arrived at %" PRIu64 ", the previous finished at %" PRIu64,
			      x->session, x->turn, x->arrival, p->finish);
		ck_assert_uint_ge(x->prompt, p->prompt + p->output + 10);
		ck_assert_uint_le(x->prompt, p->prompt + p->output + 60);
		ck_assert_msg(x->replica == h->replica, "session %" PRIu64 " turn %u on replica %u, its home %u",
			      x->session, x->turn, x->replica, h->replica);
		later++;
	}
	ck_assert_uint_gt(later, sessions);
	/* the request ids are arrival order: the arrivals are in id order */
	for (i = 0; i < rec_a.n; i++)
		for (unsigned k = 0; k < rec_a.n; k++)
			if (rec_a.r[k].id < rec_a.r[i].id)
				ck_assert_uint_le(rec_a.r[k].arrival, rec_a.r[i].arrival);
}
END_TEST

/*
 * Under every engine x scheduler and engine x cache model: macro steps give the exact steps'
 * records.  60 sessions; 20 under valgrind (84 runs: most of memcheck's minute here), where
 * each still runs several turns through every engine, scheduler and cache model.
 */
START_TEST(macro_equals_exact)
{
	const struct kv_plugin *e, *sc;
	size_t i, j, n = under_valgrind() ? 3 : 2;
	char set_e[64], set_s[64], set_n[] = "workload.requests=20";
	char *sets[3] = { set_e, set_s, set_n };
	unsigned runs = 0;

	for (i = 0; (e = kv_plugin_at(KV_PLUGIN_ENGINE, i)); i++) {
		for (j = 0; (sc = kv_plugin_at(KV_PLUGIN_SCHED, j)); j++) {
			uint64_t d1;

			snprintf(set_e, sizeof(set_e), "engine=%s", e->name);
			snprintf(set_s, sizeof(set_s), "scheduler=%s", sc->name);
			run_yaml(chat_yaml, sets, n, 0, 0, &rec_a);
			run_yaml(chat_yaml, sets, n, 1, 0, &rec_b);
			ck_assert_msg(rec_a.digest == rec_b.digest && rec_a.n == rec_b.n,
				      "%s/%s: macro %u records %016" PRIx64 ", exact %u %016" PRIx64, e->name,
				      sc->name, rec_a.n, rec_a.digest, rec_b.n, rec_b.digest);
			d1 = rec_a.digest;
			run_yaml(chat_yaml, sets, n, 0, 0, &rec_a);
			ck_assert_msg(rec_a.digest == d1, "%s/%s: a rerun differs", e->name, sc->name);
			runs++;
		}
	}
	for (i = 0; (e = kv_plugin_at(KV_PLUGIN_ENGINE, i)); i++) {
		for (j = 0; (sc = kv_plugin_at(KV_PLUGIN_CACHE, j)); j++) { /* every cache model under fifo */
			snprintf(set_e, sizeof(set_e), "engine=%s", e->name);
			snprintf(set_s, sizeof(set_s), "cache=%s", sc->name);
			run_yaml(chat_yaml, sets, n, 0, 0, &rec_a);
			run_yaml(chat_yaml, sets, n, 1, 0, &rec_b);
			ck_assert_msg(rec_a.digest == rec_b.digest && rec_a.n == rec_b.n,
				      "%s/%s: macro %u records %016" PRIx64 ", exact %u %016" PRIx64, e->name,
				      sc->name, rec_a.n, rec_a.digest, rec_b.n, rec_b.digest);
			runs++;
		}
	}
	ck_assert_uint_ge(runs, 12);
}
END_TEST

/* Round-robin spreads a session's turns; session affinity does not. */
START_TEST(affinity_against_round_robin)
{
	char set_r[] = "cluster.router=round-robin";
	char *sets[1] = { set_r };
	unsigned i, away = 0;

	run_yaml(chat_yaml, sets, 1, 0, 0, &rec_a);
	for (i = 0; i < rec_a.n; i++) {
		int h = find_row(&rec_a, rec_a.r[i].session, 0);

		away += rec_a.r[i].replica != rec_a.r[h].replica;
	}
	ck_assert_msg(away > 20, "round-robin kept %u of %u turns home", rec_a.n - away, rec_a.n);
}
END_TEST

/* A replayed trace's prefix chains: a request continuing another joins its chain's replica. */
START_TEST(prefix_chains)
{
	static const char trace[] =
		"{\"timestamp\": 0, \"input_length\": 300, \"output_length\": 4, \"hash_ids\": [1, 2]}\n"
		"{\"timestamp\": 0, \"input_length\": 300, \"output_length\": 4, \"hash_ids\": [7, 8]}\n"
		"{\"timestamp\": 1, \"input_length\": 300, \"output_length\": 4, \"hash_ids\": [9, 10]}\n"
		"{\"timestamp\": 5000, \"input_length\": 500, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n"
		"{\"timestamp\": 9000, \"input_length\": 700, \"output_length\": 4, \"hash_ids\": [1, 2, 3, 4]}\n"
		"{\"timestamp\": 9000, \"input_length\": 500, \"output_length\": 4, \"hash_ids\": [7, 8, 5]}\n";
	char path[] = "/tmp/kvsim-chains-XXXXXX", text[1024];
	FILE *f;
	int fd = mkstemp(path);
	unsigned i;

	ck_assert(fd >= 0);
	f = fdopen(fd, "w");
	fputs(trace, f);
	fclose(f);
	snprintf(text, sizeof(text),
		 "model: tiny\ndevice: a100-80g\ncluster: {replicas: 3, router: session-affinity}\n"
		 "cache: shared\nworkload:\n  arrival: {process: trace, trace: %s, format: mooncake,"
		 " sessions: prefix-chains}\n", path);
	run_yaml(text, NULL, 0, 0, 1, &rec_a);
	unlink(path);
	ck_assert_uint_eq(rec_a.n, 6);
	for (i = 0; i < rec_a.n; i++) {
		const struct row *x = &rec_a.r[i];
		uint64_t want_s = x->id == 3 || x->id == 4 ? 0 : x->id == 5 ? 1 : x->id;
		uint32_t want_t = x->id == 3 ? 1 : x->id == 4 ? 2 : x->id == 5 ? 1 : 0;

		ck_assert_msg(x->session == want_s && x->turn == want_t,
			      "request %" PRIu64 ": session %" PRIu64 " turn %u", x->id, x->session, x->turn);
		if (x->turn)
			ck_assert_uint_eq(x->replica, rec_a.r[find_row(&rec_a, want_s, 0)].replica);
	}
}
END_TEST

/* A session ends before a turn its replica's KV cache could not hold (vLLM would refuse the run). */
START_TEST(kv_capacity_ends_sessions)
{
	static const char y[] =
		"model: tiny\ndevice: a100-80g\nengine: vllm\nmemory: {kv_tokens: 1600}\n"
		"workload:\n  requests: 3\n  arrival: {process: poisson, rate: 1}\n"
		"  sessions: {turns: 10, first: 1000, input: 100, output: 50, think: 1s}\n";
	unsigned i;

	run_yaml(y, NULL, 0, 0, 1, &rec_a);
	ck_assert_uint_gt(rec_a.n, 3);
	for (i = 0; i < rec_a.n; i++)
		ck_assert_msg(rec_a.r[i].done && rec_a.r[i].prompt + rec_a.r[i].output <= 1600,
			      "request %" PRIu64 ": %" PRIu64 " + %" PRIu64 " tokens", rec_a.r[i].id,
			      rec_a.r[i].prompt, rec_a.r[i].output);
}
END_TEST

/*
 * Replica groups: two groups serve the model (round-robin between them by
 * replica count), a third another model; a session's later turns stay on
 * their home replica, in its group, and every request of a tenant goes to
 * a group serving its model.
 */
START_TEST(groups_keep_sessions_home)
{
	static const char y[] =
		"model: tiny\ndevice: a100-80g\nseed: 5\n"
		"cluster:\n  router: session-affinity\n  groups:\n"
		"    - {name: a, replicas: 2}\n    - {name: b, replicas: 3, device: h100-80g}\n"
		"    - {name: c, replicas: 1, model: llama-3.2-1b}\n"
		"cache: {name: shared, prefix_block_tokens: 16, hash_block_tokens: 16}\n"
		"workload:\n  requests: 40\n  arrival: {process: poisson, rate: 4}\n"
		"  tenants: [{name: t, share: 3}, {name: u, share: 1, model: llama-3.2-1b}]\n"
		"  sessions: {hash_block_tokens: 16, turns: 4, first: 200, input: 20, output: 20, think: 300ms}\n";
	unsigned i, in_a = 0, in_b = 0;

	run_yaml(y, NULL, 0, 0, 1, &rec_a);
	ck_assert_uint_eq(rec_a.n, 160);
	for (i = 0; i < rec_a.n; i++) {
		const struct row *x = &rec_a.r[i], *h = &rec_a.r[find_row(&rec_a, x->session, 0)];

		ck_assert_msg(x->replica == h->replica, "session %" PRIu64 " turn %u on %u, home %u",
			      x->session, x->turn, x->replica, h->replica);
		in_a += x->turn == 0 && x->replica < 2;
		in_b += x->turn == 0 && x->replica >= 2 && x->replica < 5;
	}
	ck_assert_msg(in_a > 0 && in_b > 0, "first turns: %u in group a, %u in b", in_a, in_b);
}
END_TEST

/* trace-stats' measure: blocks seen before, chains and turns. */
START_TEST(reuse_stats)
{
	static const uint64_t a[] = { 1, 2 }, b[] = { 1, 2, 3 }, c[] = { 9 }, e[] = { 1, 2, 3, 4 };
	struct kv_reuse *r = kv_reuse_new();
	struct kv_reuse_stats st;
	uint32_t depth;

	ck_assert_uint_eq(kv_reuse_add(r, 0, 1024, 1, a, 2, &depth), 0);
	ck_assert_uint_eq(kv_reuse_add(r, 1000000000, 1536, 1, b, 3, &depth), 0);
	ck_assert_uint_eq(depth, 1);
	ck_assert_uint_eq(kv_reuse_add(r, 2000000000, 512, 1, c, 1, &depth), 2);
	ck_assert_uint_eq(kv_reuse_add(r, 4000000000, 2048, 1, e, 4, &depth), 0);
	ck_assert_uint_eq(depth, 2);
	kv_reuse_stats(r, &st);
	ck_assert_uint_eq(st.blocks, 10);
	ck_assert_uint_eq(st.blocks_seen, 5);
	ck_assert_uint_eq(st.chains, 2);
	ck_assert_double_eq_tol(st.turns_multi_mean, 3, 1e-12);
	ck_assert_double_eq_tol(st.gap_mean_s, 2, 1e-9); /* 1 s and 3 s */
	kv_reuse_free(r);
}
END_TEST

/* YAML: errors name the file, line and field. */
START_TEST(yaml_errors)
{
	static const char *const bad[][2] = {
		{ "  sessions: {turns: {dist: geometric, mean: 3, max: 0}}\n", "workload.sessions.turns" },
		{ "  sessions: {think: {dist: exponential, mean: -1s}}\n", "workload.sessions.think.mean" },
		{ "  sessions: {output: 0}\n", "workload.sessions.output" },
		{ "  sessions: {turns: {dist: poisson}}\n", "workload.sessions.turns.dist" },
		{ "  sessions: {classes: []}\n", "workload.sessions.classes" },
		{ "  sessions: {classes: [{share: 1}], turns: 3}\n", "workload.sessions.turns" },
		{ "  sessions: {colour: red}\n", "workload.sessions.colour" },
	};
	static struct kv_workload wl;
	char text[1024];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(bad); i++) {
		struct kv_diag d = { 0 };
		int rc;

		snprintf(text, sizeof(text),
			 "model: tiny\ndevice: a100-80g\nworkload:\n  requests: 5\n%s", bad[i][0]);
		rc = kv_workload_load_mem(&wl, "bad.yaml", text, strlen(text), NULL, 0, 0, 0, &d);
		ck_assert_msg(rc != 0, "accepted: %s", bad[i][0]);
		ck_assert_msg(!strncmp(d.field, bad[i][1], strlen(bad[i][1])) && d.line >= 5,
			      "%s: field %s line %lu: %s", bad[i][0], d.field, d.line, d.msg);
		kv_workload_release(&wl);
	}
}
END_TEST

static Suite *session_suite(void)
{
	Suite *s = suite_create("session");
	TCase *g = tcase_create("generator"), *e = tcase_create("engine");

	tcase_add_test(g, turns_extend_and_share);
	tcase_add_test(g, draws_independent_of_order);
	tcase_add_test(g, shared_prefix_ids);
	tcase_add_test(g, context_and_rejection_end_sessions);
	tcase_add_test(g, class_shares_and_turns);
	tcase_add_test(g, spec_errors);
	tcase_add_test(g, reuse_stats);
	tcase_add_test(g, yaml_errors);
	tcase_set_timeout(e, 300);
	tcase_add_test(e, closed_loop);
	tcase_add_test(e, macro_equals_exact);
	tcase_add_test(e, affinity_against_round_robin);
	tcase_add_test(e, prefix_chains);
	tcase_add_test(e, kv_capacity_ends_sessions);
	tcase_add_test(e, groups_keep_sessions_home);
	suite_add_tcase(s, g);
	suite_add_tcase(s, e);
	return s;
}

int main(void)
{
	gsl_set_error_handler_off();
	return kv_test_run_suite(session_suite());
}
