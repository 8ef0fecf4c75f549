/*
 * macro.h -- macro-stepping: a replica's run of identical decode steps as
 * one event, applied lazily and exactly.
 *
 * When a replica forms a batch of decode steps only (every running request,
 * and none waiting or the batch full, so nobody can be admitted, or the
 * waiting requests the scheduler tried refused in a way its next formation
 * repeats: their memory refusals are made again at every step's formation,
 * macro.c refuse), the next steps are the same sequences with one more
 * token of context each, until a request finishes or outgrows its holding,
 * or the scheduler's next decision.  What the scheduler would decide is
 * derived from what it declares it is (scheduler.h: the order of its
 * waiting queue, whether a refused head blocks it, how it accounts for
 * service), not from hooks of this module's own.  The replica computes
 * those steps' ends t_1..t_K at once (a decode that outgrows its holding
 * stays inside the run when the cache model promises its reserve succeeds,
 * grow_units in cache.h: the reserve runs, in order, when the steps are
 * applied), each from kv_perf_iter_ns of the step's exact shape (integer
 * ns), and queues one event, at t_K, ordered as the per-step engine's last
 * step would be (heap.h push time t_{K-1}).  Steps 1..K-1 are applied
 * lazily, each exactly as the per-step engine applies it (tokens, memory
 * integrals, service, counters, the event count): before any event that
 * reads the replica (an arrival, which routes by replica state; a sample)
 * and before its own event at t_K.  The scheduler's per-step accounting
 * (VTC's counters: charged per token; DRF's rounds: closed one by one) and
 * the engine's (SGLang's token ratio, its macro_apply hook) are applied with
 * the steps; a step's read and dequantised bytes come from the cache
 * model's pure hooks, and with a sliding window its skipped pairs and live
 * excess are counted per step.  An arrival joining the replica cuts the run
 * at the step in flight.  Only events that read nothing of the replica pass
 * over its pending steps; what they write and the replica's steps also
 * write (tenant service) is summed in whole multiples of 1/256, so the
 * order does not change a bit; a tenant that starts waiting while another
 * waits has its virtual service lifted to the others' (a comparison, not a
 * sum), so every replica's pending steps before that event are applied
 * first.  It runs only where every plugin permits it (a scheduler that
 * declares its queue's order, cache models and engines with
 * KV_PLUGIN_F_MACRO_STEPS, plugin.h), service weights (fairness and
 * 1 / tenant weight) that are multiples of 1/256, no executor, no
 * observer (cfg->exact_steps, `--exact-steps`: one event per iteration,
 * byte-identical outputs); docs/benchmarks.md measures it.
 *
 * The contract with the replica: after forming a batch the replica calls
 * kv__macro_start (1: the run's event is queued); the engine calls
 * kv__macro_sync* before an event reads the replica; the replica calls
 * kv__macro_end at the run's event before applying the last step, and
 * kv__macro_cut when a request arrives.  This module calls back into the
 * replica only through the function it was given at kv__macro_init (to
 * repeat a refusal), so the replica's files do not call each other.
 *
 * Invariant: with a run in flight (K >= 2), steps 1..k are applied to the
 * replica's counters, 1..kq to its requests' token counters (kq <= k) and
 * 1..ko to outstanding_tokens (ko >= k), and the event queued for the
 * replica is the run's, at t[K], with arg gen.
 */
#ifndef KV_MACRO_H
#define KV_MACRO_H

#include "kv_common.h"

struct kv_event;
struct kv_replica;
struct kv_req;
struct kv_sched_ops;

#define KV_MACRO_STEPS 64 /* most steps one macro step covers */
#define KV_MACRO_GROWS 128 /* most holding growths (cache grow_units) inside one macro step */
#define KV_MACRO_REFUSED 4 /* most memory refusals of waiting requests one formation repeats in a macro step */

/* A replica's run of macro steps (embedded in struct kv_replica, replica.h). */
struct kv_macro {
	int ok; /* every plugin of this replica permits macro steps */
	uint32_t k; /* steps of the run applied (the one in flight is k + 1) */
	uint32_t K; /* steps in the run, 0 when none */
	uint32_t kq; /* of the k steps applied, those its requests' token counters show */
	uint32_t ko; /* steps outstanding_tokens shows (>= k; a router's view) */
	uint64_t gen; /* generation: ITER_DONE events with another arg are stale */
	uint64_t seq; /* heap seq of the run's event (orders its pending steps) */
	kv_ns *t; /* t[k]: end of step k of the run, [0] its start; KV_MACRO_STEPS + 1 */
	uint64_t *grow; /* growths planned: step << 32 | batch index << 16 | units, sorted; KV_MACRO_GROWS */
	uint32_t ng, gi; /* growths planned, applied */
	uint32_t nt; /* distinct tenants in the run's batch */
	uint32_t *tn; /* those tenants, nt of them; n_tenants entries */
	uint32_t *tc; /* by tenant: its requests in the run's batch (0 for others); n_tenants entries */
	uint32_t nref; /* refusals each formation of the run repeats (the replica's ref_q[0..nref)) */
	int no_admit; /* set by the engine's macro_steps: the run's formations try no admission (nothing to repeat) */
	uint32_t *wx; /* wx[k]: requests of the run's batch past the window at step k (each adds one to live_win_excess); KV_MACRO_STEPS + 1 */
	/* the replica's kv__replica_schedule, to make a recorded refusal again (0 or a code) */
	int (*schedule)(struct kv_replica *r, struct kv_req *q);
};

/*
 * Whether a scheduler's declarations (scheduler.h: its queue's order)
 * let its replicas take macro steps.
 */
int kv__macro_sched_ok(const struct kv_sched_ops *ops);

/*
 * Sets up r's run state: ok says whether r's plugins permit macro steps,
 * schedule is the replica's kv__replica_schedule.  Release with
 * kv__macro_release.
 */
void kv__macro_init(struct kv_replica *r, int ok, int (*schedule)(struct kv_replica *, struct kv_req *));
void kv__macro_release(struct kv_replica *r);

/*
 * Tries to start a run for the batch r just formed, its first step d1_ns
 * long.  Returns 1 with the run's event queued, or 0 when fewer than two
 * steps qualify (the caller queues the single step).
 */
int kv__macro_start(struct kv_replica *r, kv_ns d1_ns);

/*
 * Applies r's pending steps that the per-step engine would have run
 * before event e (all of them when e is NULL): call before e reads r.
 */
void kv__macro_sync(struct kv_replica *r, const struct kv_event *e);
/* Brings only r->outstanding_tokens up to the steps before e (for a router). */
void kv__macro_sync_outstanding(struct kv_replica *r, const struct kv_event *e);
/* Brings the token counters of r's requests up to the steps applied (for a sample). */
void kv__macro_sync_reqs(struct kv_replica *r);
/* At the run's event: applies the steps before the last, ends the run (r->macro.K > 0). */
void kv__macro_end(struct kv_replica *r);
/* Cuts r's run at the step in flight (a request arrived: the batch may change; K > 0). */
void kv__macro_cut(struct kv_replica *r);

#endif /* KV_MACRO_H */
