/*
 * autoscale.h -- autoscaling a range of replicas: a periodic decision adds
 * or removes replicas between min and max by a policy with hysteresis and
 * cooldowns; a new replica serves after a cold start, a removed one drains.
 *
 * The cluster allocates the range's max replicas up front (flat arrays, no
 * allocation per event) and marks each one:
 *
 *   off       holds nothing, costs nothing, gets no request
 *   starting  loading weights and starting the engine: billed, gets no request;
 *             active after cold_start = shard bytes / load_bandwidth + start_time
 *   active    routed to
 *   draining  gets no new request, finishes what it holds, then goes off
 *             (its cache model flushed: a drained replica holds nothing,
 *             no KV, no queued or in-flight transfer)
 *
 * Every interval the engine brings every replica up to date (macro steps
 * applied) and calls kv__autoscale_tick: the policy's metric over the last
 * window (the mean of its per-interval values, below) is compared with two
 * thresholds, one to scale up and one to scale down; between them nothing
 * happens (hysteresis).  A decision acts only on a whole window measured
 * since the last action: the window is emptied by each action, since what
 * it saw was another fleet (without this, a lagging mean over the old
 * fleet overshoots a scale-up and hastens a scale-down).  A scale-up takes a draining replica back first
 * (it is still loaded), else starts the lowest-numbered off one; a
 * scale-down drains the highest-numbered active one, never while a
 * replica is starting, and never below min active-or-starting replicas.
 * Under slo no scale-up starts while a replica is starting either: the
 * attainment of the requests served cannot see the replicas coming (queue
 * and kv_util count a starting replica as an empty one).  Other than under
 * slo, a scale-down also needs the metric it would leave, m * n / (n - 1)
 * for n active replicas, to stay below `up`: the load of the drained one
 * spread over the rest must not call for a scale-up at once.
 * No scale-up within cooldown_up of the last action, no scale-down within
 * cooldown_down of it.
 *
 *   queue    waiting requests (scheduler queues) per active or starting replica
 *   concurrency  requests in flight (assigned: waiting, running, in the front end)
 *            per active or starting replica (Knative's autoscaling metric)
 *   kv_util  used KV bytes / pool bytes, mean over active and starting replicas
 *            (a starting replica counts as empty)
 *   slo      share of the requests ended in the window that met the workload's
 *            slo: limits (a rejected one does not); up when below `up`,
 *            down when at or above `down`
 *
 * Invariants (KV_CHECK): min <= active + starting; active + starting +
 * draining <= max (the range has max replicas); at least one replica is
 * active; a replica goes off only holding no request and, its cache flushed,
 * no pool byte.  Routers pick active replicas only (kv_rep_routable).
 *
 * Prefill/decode roles (disagg.h).  A prefill group's replicas are routed
 * to as a mixed group's are; a draining one finishes its prefills and
 * goes off only once every handed-off request's KV has left it (its
 * transfer landed, the holding freed).  A decode group's replicas are
 * placement targets (disagg.c place) only while active: a starting one
 * gets no transfer before it is warm, a draining one none at all, but it
 * admits the transfers already on their way and decodes what it holds,
 * then goes off.  The load policies of a decode replica count the
 * transfers on their way to it (queue and concurrency: one request each;
 * kv_util: their bytes), and under slo a prefill group counts each
 * request as it hands it off, by its TTFT limit alone.
 *
 * GPU time is billed to every replica that is not off: the integral of
 * (starting + active + draining) x GPUs per replica, in GPU-seconds.
 */
#ifndef KV_AUTOSCALE_H
#define KV_AUTOSCALE_H

#include "kv_common.h"
#include "metrics.h"

#include <stdint.h>

struct kv_sim;
struct kv_replica;
struct kv_req;

enum kv_rep_state {
	KV_REP_ACTIVE = 0, /* routed to (every replica of a cluster without autoscaling) */
	KV_REP_OFF, /* holds nothing, not billed */
	KV_REP_STARTING, /* cold start in progress: billed, not routed to */
	KV_REP_DRAINING, /* finishing what it holds: billed, not routed to */
	KV_REP_STATES
};

enum kv_as_policy { KV_AS_QUEUE, KV_AS_KV_UTIL, KV_AS_SLO, KV_AS_CONCURRENCY, KV_AS_POLICIES };

extern const char *const kv_as_policy_names[KV_AS_POLICIES + 1]; /* NULL-terminated */
extern const char *const kv_rep_state_names[KV_REP_STATES];

/* Defaults (docs/cluster.md "Autoscaling" gives their sources). */
#define KV_AS_DEF_INTERVAL_NS (15 * KV_NS_PER_S) /* decision period: Kubernetes HPA sync period */
#define KV_AS_DEF_WINDOW_NS (60 * KV_NS_PER_S) /* metric window */
#define KV_AS_DEF_COOLDOWN_UP_NS 0 /* no wait between scale-ups */
#define KV_AS_DEF_COOLDOWN_DOWN_NS (300 * KV_NS_PER_S) /* HPA scale-down stabilisation */
#define KV_AS_DEF_LOAD_BPS 5e9 /* weight load bandwidth, bytes/s (ServerlessLLM) */
#define KV_AS_DEF_START_NS (30 * KV_NS_PER_S) /* engine start besides the weights */

/* The autoscaling of one replica range (workload `autoscale:`). */
struct kv_autoscale_cfg {
	int on; /* 0: every replica active all run (the default) */
	uint32_t min, max; /* replicas active or starting, at least and at most; 1 <= min <= max */
	uint32_t initial; /* replicas active at time 0, min..max, default min */
	enum kv_as_policy policy; /* default queue */
	double up, down; /* thresholds of the metric: scale up past up, down past down */
	uint32_t step; /* replicas added or removed per decision, default 1 */
	kv_ns interval_ns; /* decision period, default 15 s */
	kv_ns window_ns; /* metric window, a multiple of the interval (rounded up), default 60 s */
	kv_ns cooldown_up_ns; /* no scale-up within this of the last action, default 0 */
	kv_ns cooldown_down_ns; /* no scale-down within this of the last action, default 300 s */
	double load_Bps; /* weight load bandwidth per GPU (storage or host link), bytes/s, default 5e9 */
	kv_ns start_ns; /* constant part of a cold start (container, engine, CUDA graphs), default 30 s */
	const struct kv_slo_limits *slo; /* per-tenant request limits (KV_MAX_TENANTS entries); NULL: slo policy refused */
};

/* One decision, for the sink (the autoscale.csv row). */
struct kv_as_row {
	kv_ns t_ns; /* when */
	uint32_t group; /* the autoscaled range's group (0: the one group) */
	uint32_t n[KV_REP_STATES]; /* replicas per state after the decision */
	double metric; /* the policy's metric over the window; NaN: no value (no request ended) */
	int delta; /* replicas added (> 0) or removed (< 0) by this decision */
	double slo_attainment; /* share of the requests ended in the last interval meeting the SLO; NaN: none or no slo */
	double gpu_s; /* GPU-seconds billed so far */
};

/* The state of one autoscaled range [lo, hi) of a cluster (a group's replicas). */
struct kv_autoscale {
	const struct kv_autoscale_cfg *cfg;
	uint32_t lo, hi; /* the range: replicas lo..hi-1 (hi - lo = cfg->max) */
	uint32_t group; /* its group (the autoscale.csv column) */
	uint8_t *state; /* the cluster's s->rep_state (enum kv_rep_state per replica; not owned) */
	uint32_t n[KV_REP_STATES]; /* replicas of the range per state */
	uint32_t gpus; /* GPUs per replica */
	kv_ns cold_ns; /* cold-start delay of a replica */
	kv_ns last_action_ns; /* time of the last scale action; KV_NS_NEVER: none */
	kv_ns bill_t0_ns; /* time gpu_s was last brought up */
	double gpu_s; /* GPU-seconds billed up to bill_t0_ns */
	double *num, *den; /* ring of per-interval metric sums (numerator, denominator), k entries */
	uint32_t k, head; /* ring length (window / interval), next slot */
	uint32_t filled; /* intervals measured since the last action (at most k) */
	uint64_t met, ended; /* requests ended this interval: meeting the SLO, all */
	uint64_t ups, downs; /* scale actions (statistics) */
	uint32_t peak; /* most replicas billed at once */
};

/* 1 when replica i of s may be routed to (no autoscaling: always). */
#define kv_rep_routable(s, i) (!(s)->rep_state || (s)->rep_state[i] == KV_REP_ACTIVE)

/*
 * Sets up autoscaling of replicas [lo, hi) of s, group `group` with config
 * c (c->autoscale; hi - lo = its max; its model and parallelism give the
 * cold start and the GPUs billed), the first c->autoscale.initial active and
 * the rest off; s->rep, s->n_rep and s->rep_state (all active) are built.
 * The engine pushes the first decision.  Returns 0, or KV_EINVAL with
 * s->diag filled (the slo policy without slo: limits).
 */
struct kv_sim_config;
int kv__autoscale_init(struct kv_sim *s, struct kv_autoscale *a, const struct kv_sim_config *c,
		       uint32_t lo, uint32_t hi, uint32_t group);
void kv__autoscale_release(struct kv_autoscale *a);

/* The autoscaler of replica i, NULL when its group has none. */
struct kv_autoscale *kv__autoscale_of(const struct kv_sim *s, uint32_t i);

/*
 * The periodic decision of a at s->now: every replica brought up to date by
 * the caller.  Reports the row to the sink.  Returns 0 or KV_EIO (sink).
 */
int kv__autoscale_tick(struct kv_sim *s, struct kv_autoscale *a);

/* Starting replica i ends its cold start (KV_EV_SCALE_READY): it becomes active. */
void kv__autoscale_ready(struct kv_sim *s, uint32_t i);

/* r may have run out of requests: a draining r that holds none goes off. */
void kv__autoscale_check(struct kv_sim *s, struct kv_replica *r);

/* q ended (completed when `completed`, else rejected): counted for the slo metric. */
void kv__autoscale_ended(struct kv_autoscale *a, const struct kv_req *q, int completed);

/*
 * Prefill replica's q handed its KV off (disagg.h): counted for a prefill
 * group's slo metric by its first token alone (the TTFT limit; its decode
 * runs elsewhere).
 */
void kv__autoscale_handed(struct kv_autoscale *a, const struct kv_req *q);

/* The run ended at s->now: a's bill brought up to it (the run's last event). */
void kv__autoscale_final(struct kv_sim *s, struct kv_autoscale *a);

/* The cold-start delay of a replica: bytes / load_Bps + start_ns (pure). */
kv_ns kv_autoscale_cold_ns(const struct kv_autoscale_cfg *c, uint64_t shard_bytes);

#endif /* KV_AUTOSCALE_H */
