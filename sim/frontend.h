/*
 * frontend.h -- the serving engine's front end: the API-server process(es)
 * between the client and the engine core (vLLM V1's AsyncLLM API server,
 * SGLang's tokenizer and detokenizer managers).
 *
 * Per request, on the way in: an API server takes it when one is free
 * (api_servers servers per replica, FIFO, each a single process: requests
 * queue behind each other), spends request_ns + tokenize_ns * prompt tokens
 * on it (HTTP parsing, validation, chat template, tokenisation), and hands
 * it to the engine core over one process hop (ZMQ IPC): the request reaches
 * the scheduler at
 *     t_engine = max(t_client, free) + request_ns + tokenize_ns * P + hop_ns.
 * On the way out, each token the engine core emits crosses hops_out
 * process hops, is detokenised incrementally (detok_ns) and leaves in an
 * SSE chunk (chunk_ns per chunk); chunks leave on the first token, then
 * every stream_interval tokens and on the last (vLLM V1 output_processor.py
 * RequestState.make_request_output), so a client sees token j when the
 * engine emitted token kv_frontend_sent_with(k, T, j), out_ns later:
 *     out_ns = hops_out * hop_ns + detok_ns + chunk_ns.
 * The server's output work for a request, detok_ns * T + chunk_ns * chunks,
 * is charged to its server right after the request's own input work: the
 * same work, placed at the start of the request's life rather than spread
 * over its decode, so the server's utilisation is exact and later requests
 * queue behind it.  Everything is arithmetic per request: no event or
 * allocation per token; one event per request (its hand-off to the engine)
 * when the way in takes any time.
 *
 * Invariant: a server's free time never decreases; t_engine >= t_client.
 * docs/frontend.md gives the equations, the defaults and their sources.
 */
#ifndef KV_FRONTEND_H
#define KV_FRONTEND_H

#include "kv_common.h"

#include <stddef.h>
#include <stdint.h>

struct kv_req;

/* The front end's parameters (engine options, serving_impl.h). */
struct kv_frontend_cfg {
	kv_ns request_ns; /* request_cpu: API-server time per request (HTTP, validation, template), ns */
	kv_ns tokenize_ns; /* tokenize_per_token: API-server time per prompt token, ns */
	kv_ns hop_ns; /* ipc_hop: one process hop (ZMQ IPC send + receive), ns */
	uint64_t hops_out; /* ipc_hops_out: process hops a token crosses on its way out */
	kv_ns detok_ns; /* detokenize_per_token: incremental detokenisation per output token, ns */
	kv_ns chunk_ns; /* stream_chunk: per SSE chunk sent (framing, write), ns */
	uint64_t stream_interval; /* stream_interval: tokens per chunk after the first, >= 1 */
	uint64_t api_servers; /* api_servers: API-server processes per replica, >= 1 */
	int api_server; /* api_server: requests come through the API server (default); 0: the offline engine, no front end */
};

/* A replica's front end: its parameters and its servers' state. */
struct kv_frontend {
	struct kv_frontend_cfg c; /* parameters */
	kv_ns *free_ns; /* per server: when it is next free, ns; api_servers entries (NULL: off) */
	kv_ns out_ns; /* engine emission -> client, per chunk (the equation above), ns */
	kv_ns extra_ns; /* frontend_overhead: a constant added to first token and finish, ns */
};

/*
 * Sets f up from c (extra_ns: frontend_overhead).  Allocates the servers'
 * state when the way in takes any time; release with kv__frontend_release.
 * Without an API server (c->api_server 0) every cost is 0 but extra_ns.
 */
void kv__frontend_init(struct kv_frontend *f, const struct kv_frontend_cfg *c, kv_ns extra_ns);
void kv__frontend_release(struct kv_frontend *f);

/* SSE chunks a request of T output tokens is sent in: 1 + ceil((T - 1) / k), 0 for T = 0. */
uint64_t kv_frontend_chunks(uint64_t k, uint64_t T);

/*
 * The output token (1..T) whose emission sends token j (1 <= j <= T) to the
 * client: 1 for j = 1, else min(1 + k * ceil((j - 1) / k), T).
 */
uint64_t kv_frontend_sent_with(uint64_t k, uint64_t T, uint64_t j);

/*
 * A routed request q, sent at now, enters front end f: charges its work to
 * the first free server, stores the way in (t_engine - now) in q->fe_in_ns
 * and returns t_engine, when q joins its replica's scheduler (now when the
 * way in takes no time; the engine queues a KV_EV_ENQUEUE otherwise).
 */
kv_ns kv__frontend_in(struct kv_frontend *f, struct kv_req *q, kv_ns now);

/*
 * Completed q leaves through front end f: its first-token and finish times
 * move from the engine's to the client's (+ out_ns + extra_ns).
 */
void kv__frontend_out(const struct kv_frontend *f, struct kv_req *q);

/*
 * Option-table entries for an engine whose private struct T holds the config
 * at field F; req_def (ns) and req_src (a string literal, its source) are the
 * engine's request_cpu default.
 */
#define KV__FRONTEND_OPTIONS(T, F, detok_def, hops_out_def, req_def, req_src)                  \
	{ .name = "request_cpu", .type = KV_OPT_NS, .offset = offsetof(T, F.request_ns),      \
	  .def = req_def, .min = 0, .max = 60e9, .units = "ns",                                 \
	  .help = "API-server time per request before tokenising (HTTP, validation, template): " req_src }, \
	{ .name = "tokenize_per_token", .type = KV_OPT_NS, .offset = offsetof(T, F.tokenize_ns), \
	  .def = 1100, .min = 0, .max = 1e9, .units = "ns",                                     \
	  .help = "API-server time per prompt token: HF tokenizers, 1.1 s for ~1M tokens on one core (charlesxu.io/parallel-tokenizer)" }, \
	{ .name = "ipc_hop", .type = KV_OPT_NS, .offset = offsetof(T, F.hop_ns),             \
	  .def = 28000, .min = 0, .max = 1e9, .units = "ns",                                    \
	  .help = "one process hop between API server and engine core (ZMQ): 28 us mean over 500,000 inproc messages (stackoverflow q. 62191322)" }, \
	{ .name = "ipc_hops_out", .type = KV_OPT_U64, .offset = offsetof(T, F.hops_out),     \
	  .def = hops_out_def, .min = 0, .max = 16, .units = "hops",                            \
	  .help = "process hops an output token crosses to the API server (vLLM V1: engine core -> API server, 1; SGLang: scheduler -> detokenizer -> tokenizer manager, 2)" }, \
	{ .name = "detokenize_per_token", .type = KV_OPT_NS, .offset = offsetof(T, F.detok_ns), \
	  .def = detok_def, .min = 0, .max = 1e9, .units = "ns",                                \
	  .help = "front-end incremental detokenisation per output token: 0.5-1.5 us/token (vllm PR 51281, tokenizers 0.22.2); 0 where the engine process detokenises (vLLM V0)" }, \
	{ .name = "stream_chunk", .type = KV_OPT_NS, .offset = offsetof(T, F.chunk_ns),      \
	  .def = 11300, .min = 0, .max = 1e9, .units = "ns",                                    \
	  .help = "front-end time per SSE chunk: streamed minus non-streamed duration per output token, (9.74 - 7.35) s / 211,870 tokens (sglang PR 22548, output 1024)" }, \
	{ .name = "stream_interval", .type = KV_OPT_U64, .offset = offsetof(T, F.stream_interval), \
	  .def = 1, .min = 1, .max = 1 << 20, .units = "tokens",                                \
	  .help = "tokens per SSE chunk after the first (vLLM/SGLang --stream-interval, default 1)" }, \
	{ .name = "api_servers", .type = KV_OPT_U64, .offset = offsetof(T, F.api_servers),   \
	  .def = 1, .min = 1, .max = 1024, .units = "processes",                                \
	  .help = "API-server processes per replica, each a FIFO queue (vLLM --api-server-count, default 1)" }, \
	{ .name = "api_server", .type = KV_OPT_BOOL, .offset = offsetof(T, F.api_server),    \
	  .def = 1, .min = 0, .max = 1, .units = "",                                            \
	  .help = "requests come through the engine's API server (OpenAI server, benchmark_serving); false: the offline engine (LLM class, benchmark_latency/throughput), no front end" }

#endif /* KV_FRONTEND_H */
