/*
 * gate.h -- the client's concurrency limit: a benchmark client that keeps
 * at most N requests outstanding (a closed loop when all are due at once).
 *
 * It models `vllm bench serve --max-concurrency N` (vLLM's
 * benchmarks/benchmark_serving.py: each request task is created at the
 * arrival process's time and runs inside `async with semaphore:` of an
 * asyncio.Semaphore(N); the request's clock starts inside it) and SGLang's
 * bench_serving `--max-concurrency`, which does the same.  A request whose
 * send time has come while N are outstanding waits in line (asyncio's
 * semaphore wakes waiters first come, first served) and is sent at the
 * instant one of the N completes: its arrival time is that instant.  A
 * request is outstanding from its send to its client-side finish (after
 * the front end's way out), plus think_ns in a closed loop of users
 * (workload.arrival.process: closed), where the freed place is the user's.
 *
 * The engine (engine.c) owns the line: the source's one buffered arrival
 * is its head and the source is read no further while it waits, so the
 * line costs no memory.  The gate keeps the count outstanding and a
 * min-heap of the times ended requests' places free; the heap holds at
 * most N entries (one per outstanding request) and grows by doubling to
 * its high-water mark, so nothing is allocated per request past it.
 *
 * Invariant: out <= limit after every kv_gate_take (the engine takes only
 * when !kv_gate_full after kv_gate_settle).
 */
#ifndef KV_GATE_H
#define KV_GATE_H

#include "kv_common.h"

struct kv_gate {
	uint64_t limit; /* requests outstanding at most (N), 0 = off */
	kv_ns think_ns; /* added to a request's client-side finish before its place frees, ns, default 0 */
	uint64_t out; /* requests sent whose place has not freed */
	kv_ns *free_ns; /* min-heap of the times places of ended requests free, n entries */
	uint32_t n, cap; /* entries, allocated */
	int blocked; /* the engine's pending arrival is due and waits for a place */
	kv_ns wake_ns; /* earliest wake-up the engine has queued while blocked, KV_NS_NEVER: none */
	uint64_t waited; /* requests sent later than due (statistics) */
	kv_ns wait_ns; /* their total wait, ns */
};

/* Starts g with limit N (0: off) and think time; allocates nothing until a request ends. */
void kv_gate_init(struct kv_gate *g, uint64_t limit, kv_ns think_ns);

/* Frees the heap; g may be zeroed or initialised. */
void kv_gate_release(struct kv_gate *g);

/* Frees the places whose time has come (at or before now_ns). */
void kv_gate_settle(struct kv_gate *g, kv_ns now_ns);

/* 1 when N are outstanding (call kv_gate_settle first), 0 when a request may go; 0 when off. */
int kv_gate_full(const struct kv_gate *g);

/* A request is sent: it takes a place (g on and not full). */
void kv_gate_take(struct kv_gate *g);

/*
 * A sent request ended, its client-side finish at finish_ns: its place
 * frees at finish_ns + think_ns, which it returns (KV_NS_NEVER when g is off).
 */
kv_ns kv_gate_end(struct kv_gate *g, kv_ns finish_ns);

/* The earliest time a place of an ended request frees, KV_NS_NEVER when none waits to. */
kv_ns kv_gate_next_free(const struct kv_gate *g);

#endif /* KV_GATE_H */
