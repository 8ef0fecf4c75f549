/*
 * metric_doc.c -- the meaning of every CSV column (metric_doc.h).  The
 * definitions restate what sim/metrics.c, sim/engine.c and src/lib/output.c
 * compute; docs/design.md and docs/cost-model.md give the models behind them.
 */
#include "metric_doc.h"
#include "output.h"

#include "../../sim/groups.h"
#include "../../sim/metrics.h"

#include <stdio.h>
#include <string.h>

#define S "summary.csv"
#define T "tenants.csv"
#define R "requests.csv"
#define TS "timeseries.csv"
#define TT "tenant_timeseries.csv"
#define H "health.csv"
#define D "disagg.csv"
#define AS "autoscale.csv"
#define G "groups.csv"
#define TI "tiers.csv"

static const struct kv_metric_doc docs[] = {
	{ S, "workload", "", "workload", "the workload's name" },
	{ S, "requests", "", "requests", "requests arrived" },
	{ S, "completed", "", "completed requests", "requests that generated every output token" },
	{ S, "rejected_context", "", "rejected (context)", "requests refused at arrival: prompt+output beyond the served context (oversize: reject)" },
	{ S, "rejected_pool", "", "rejected (pool)", "requests ended because their KV cache cannot fit even in an empty pool" },
	{ S, "preemptions", "", "preemptions", "times a running request was preempted (swapped or recomputed), all replicas" },
	{ S, "makespan_s", "s", "makespan", "last finish minus first arrival" },
	{ S, "throughput_tok_s", "tokens/s", "throughput", "prompt+output tokens of completed requests / makespan" },
	{ S, "output_tok_s", "tokens/s", "output throughput", "output tokens of completed requests / makespan" },
	{ S, "requests_per_s", "req/s", "completed requests per second", "completed requests / makespan" },
	{ S, "ttft_p50_s", "s", "TTFT p50", "median time to first token (arrival to first output token, front end included), completed requests; empty when none completed" },
	{ S, "ttft_p90_s", "s", "TTFT p90", "90th percentile of time to first token" },
	{ S, "ttft_p99_s", "s", "TTFT p99", "99th percentile of time to first token" },
	{ S, "tpot_p50_s", "s", "TPOT p50", "median time per output token after the first: (finish - first token) / (output tokens - 1); empty when no completed request had two" },
	{ S, "tpot_p90_s", "s", "TPOT p90", "90th percentile of time per output token" },
	{ S, "tpot_p99_s", "s", "TPOT p99", "99th percentile of time per output token" },
	{ S, "e2e_p50_s", "s", "end-to-end latency p50", "median arrival-to-finish latency, completed requests; empty when none completed" },
	{ S, "e2e_p90_s", "s", "end-to-end latency p90", "90th percentile of end-to-end latency" },
	{ S, "e2e_p99_s", "s", "end-to-end latency p99", "99th percentile of end-to-end latency" },
	{ S, "mem_reserved_util", "share of pool", "KV memory reserved", "time-average pool bytes reserved / pool bytes, all replicas, from 0 to the last finish" },
	{ S, "mem_used_util", "share of pool", "KV memory holding live tokens", "time-average bytes of live KV tokens / pool bytes" },
	{ S, "mem_useful_share", "live / reserved", "useful share of reserved KV memory", "time-integral of live bytes / time-integral of reserved bytes" },
	{ S, "ext_frag_mean", "", "external fragmentation", "time-average of 1 - (free bytes in largest-order blocks) / free bytes, mean over replicas" },
	{ S, "alloc_fail_frag", "", "allocations refused by fragmentation", "allocations refused although the pool had enough free bytes in total" },
	{ S, "cache_hit_rate", "", "cache hit rate", "prefix/cache tokens found / tokens looked up (cache models with statistics; empty otherwise)" },
	{ S, "cache_hit_rate_cross", "", "cross-request hit rate", "prefix tokens found in blocks another request computed / tokens looked up (shared and the engines' prefix cache; 0 for other models with statistics)" },
	{ S, "cache_hit_rate_self", "", "self hit rate", "prefix tokens a request resumed after a preemption found in blocks it had computed itself / tokens looked up; cross + self = cache_hit_rate" },
	{ S, "cache_bytes_saved", "bytes", "cache bytes saved", "KV bytes the cache model did not have to store or recompute" },
	{ S, "cache_recompute_tokens", "tokens", "tokens recomputed", "tokens the cache model recomputed (evicted or dropped KV)" },
	{ S, "cache_evictions", "", "cache evictions", "entries the cache model evicted" },
	{ S, "swap_out_bytes", "bytes", "bytes swapped out", "KV bytes copied to host memory by preemption by swapping" },
	{ S, "swap_in_bytes", "bytes", "bytes swapped in", "KV bytes copied back from host memory" },
	{ S, "kv_pool_bytes", "bytes", "KV pool per replica", "KV-cache pool size of one replica (memory.model)" },
	{ S, "kv_peak_reserved_bytes", "bytes", "peak KV memory reserved", "largest pool bytes reserved at once, busiest replica" },
	{ S, "jain_fairness", "", "Jain fairness index", "Jain's index (sum x)^2 / (n sum x^2) over tenants' weight-normalised service" },
	{ S, "service_diff_max", "weighted tokens", "largest service difference", "largest difference of weight-normalised service between backlogged tenants, over samples" },
	{ S, "service_diff_mean", "weighted tokens", "mean service difference", "mean of that difference over samples with two or more tenants backlogged" },
	{ S, "short_e2e_std_s", "s", "short requests' latency std", "standard deviation of end-to-end latency of requests shorter than fairness.short_tokens (default: the median length)" },
	{ S, "long_e2e_p99_s", "s", "long requests' latency p99", "p99 end-to-end latency of requests longer than fairness.long_tokens (default: the median length)" },
	{ S, "iter_mean_s", "s", "mean iteration time", "busy time / iterations, all replicas" },
	{ S, "iterations", "", "iterations", "engine iterations (batches), all replicas" },
	{ S, "events", "", "events", "simulation events processed" },
	{ S, "peak_in_flight", "requests", "peak requests in flight", "largest number of requests arrived and not ended at once" },
	{ S, "load_share", "", "offered load / capacity", "arrival rate / capacity_req_s: the offered load as a share of the cluster's saturated service rate (above 0.9 the run warns: docs/metrics.md \"Load\"); empty with under 2 arrivals, none completed or an offline burst (arrivals spanning less than 1 / capacity_req_s)" },
	{ S, "capacity_req_s", "req/s", "service capacity", "requests/s the cluster sustains when never idle, from the perf model on the completed requests' mean prompt and output lengths at the batch limits (docs/metrics.md \"Load\")" },
	{ S, "busy_share", "", "busy share", "time the replicas spend in iterations / (replicas x makespan): the measured utilisation" },
	{ S, "kv_capacity_tokens", "tokens", "KV capacity", "KV tokens one replica's pool holds (only off memory.model share)" },
	{ S, "kv_capacity_blocks", "", "KV capacity in blocks", "16-token KV blocks one replica's pool holds (only off memory.model share)" },
	/* the SLO columns (only with a workload's slo:; issue 17 section 1) */
	{ S, "slo_attainment", "share", "SLO attainment", "requests that completed meeting every per-request SLO / requests arrived (only with slo:)" },
	{ S, "goodput_req_s", "req/s", "goodput", "requests meeting every per-request SLO / makespan (DistServe's goodput; only with slo:)" },
	{ S, "goodput_tok_s", "tokens/s", "goodput in tokens", "prompt+output tokens of requests meeting every per-request SLO / makespan (only with slo:)" },
	{ S, "slo_met", "0 or 1", "percentile SLOs met", "1 when every percentile SLO (e.g. ttft p99 <= 1 s) holds over the run, 0 when one fails, empty when none is set or one has no value to judge (no completed request) and none fails (only with slo:)" },
	{ S, "gpu_hours", "GPU-hours", "GPU-hours", "sum over the replica groups of their gpu_hours (groups.csv): a static group gpus x (0 to the last finish), an autoscaled one its billed GPU-hours (only with cluster.groups)" },
	{ S, "cost_usd", "USD", "fleet cost", "sum over the groups of their GPU-hours x the device's cost_per_gpu_hour; empty when a group's price is not known (only with cluster.groups)" },
	{ S, "cost_usd_per_hour", "USD/hour", "fleet price", "sum over the groups of gpus x the device's cost_per_gpu_hour: what the fleet costs per hour, whatever the run's length; empty when a group's price is not known (only with cluster.groups)" },
	{ S, "gpus", "GPUs", "GPUs used", "GPUs the configuration occupies: replicas x tensor parallel x pipeline stages x data-parallel ranks (only with slo:)" },

	{ T, "tenant", "", "tenant", "the tenant's name" },
	{ T, "weight", "", "weight", "fairness weight (workload.tenants[].weight)" },
	{ T, "priority", "", "priority", "the tenant's rank for the preempt scheduler (workload.tenants[].priority, higher first)" },
	{ T, "arrived", "", "requests arrived", "the tenant's requests arrived" },
	{ T, "completed", "", "completed requests", "the tenant's requests completed" },
	{ T, "rejected", "", "rejected requests", "the tenant's requests rejected (context or pool)" },
	{ T, "prompt_tokens", "tokens", "prompt tokens", "prompt tokens of completed requests" },
	{ T, "output_tokens", "tokens", "output tokens", "output tokens of completed requests" },
	{ T, "service", "weighted tokens", "service", "fairness.input_weight x prefill tokens + fairness.output_weight x output tokens served" },
	{ T, "service_share", "", "service share", "the tenant's service / all tenants' service" },
	{ T, "weight_share", "", "weight share", "the tenant's weight / all tenants' weights" },
	{ T, "cost_byte_steps", "byte-steps", "cost", "sum over completed requests of alpha*M + beta*L*T (docs/cost-model.md)" },
	{ T, "ttft_p50_s", "s", "TTFT p50", "the tenant's median time to first token, completed requests; empty when it completed none" },
	{ T, "ttft_p99_s", "s", "TTFT p99", "the tenant's p99 time to first token, completed requests; empty when it completed none" },
	{ T, "e2e_p50_s", "s", "end-to-end latency p50", "the tenant's median end-to-end latency, completed requests; empty when it completed none" },
	{ T, "e2e_p99_s", "s", "end-to-end latency p99", "the tenant's p99 end-to-end latency, completed requests; empty when it completed none" },
	{ T, "slo_attainment", "share", "SLO attainment", "the tenant's requests meeting its per-request SLOs / its requests arrived (only with slo:)" },
	{ T, "goodput_req_s", "req/s", "goodput", "the tenant's requests meeting its SLOs / makespan (only with slo:)" },
	{ T, "goodput_tok_s", "tokens/s", "goodput in tokens", "their prompt+output tokens / makespan (only with slo:)" },

	{ R, "id", "", "request", "arrival order, from 0" },
	{ R, "tenant", "", "tenant", "the request's tenant" },
	{ R, "replica", "", "replica", "replica the router sent it to, from 0" },
	{ R, "status", "", "status", "completed, rejected_context or rejected_pool" },
	{ R, "arrival_s", "s", "arrival time", "when the client sent the request (simulated)" },
	{ R, "first_token_s", "s", "first token time", "when the client received the first output token (front end included, docs/frontend.md); empty when rejected" },
	{ R, "finish_s", "s", "finish time", "when the client received the last token (completed), or when the request was rejected" },
	{ R, "prompt_tokens", "tokens", "prompt length", "input tokens" },
	{ R, "output_tokens", "tokens", "output length", "tokens to generate" },
	{ R, "ttft_s", "s", "TTFT", "first_token_s - arrival_s (completed only)" },
	{ R, "tpot_s", "s", "TPOT", "(finish_s - first_token_s) / (output_tokens - 1); empty for one output token" },
	{ R, "e2e_s", "s", "end-to-end latency", "finish_s - arrival_s (completed only)" },
	{ R, "preemptions", "", "preemptions", "times the request was preempted" },
	{ R, "cost_byte_steps", "byte-steps", "cost", "alpha*M + beta*L*T, L = prompt+output, T = output tokens (docs/cost-model.md)" },
	{ R, "memtime_byte_s", "byte-s", "KV memory-time", "integral of the request's KV bytes over time" },
	{ R, "frontend_in_s", "s", "front end, way in", "client arrival to the scheduler: API-server queue, request_cpu, tokenisation, one hop (docs/frontend.md); arrival_s + frontend_in_s is the engine's arrival" },
	{ R, "session", "", "session", "the request's session id (0, 1, ... in start order); a column only with workload.sessions" },
	{ R, "turn", "", "session turn", "the request's turn in its session, 0 first; a column only with workload.sessions" },
	{ R, "frontend_out_s", "s", "front end, way out", "engine emission to the client per chunk: hops, detokenisation, SSE chunk, frontend_overhead; first_token_s and finish_s less this are the engine's (completed only)" },
	{ R, "xfer_s", "s", "KV transfer time", "only with prefill/decode disaggregation: the prefill's end to its KV's arrival at the decode replica, link queueing included (docs/cluster.md); empty when the request moved no KV" },

	{ TS, "t_s", "s", "simulated time", "sample time (outputs.sample_interval apart)" },
	{ TS, "replica", "", "replica", "replica index, from 0" },
	{ TS, "waiting", "requests", "waiting requests", "requests queued at the replica's scheduler" },
	{ TS, "running", "requests", "running requests", "requests in the replica's running set (the batch)" },
	{ TS, "kv_used_bytes", "bytes", "KV memory holding live tokens", "live KV tokens x KV bytes per token" },
	{ TS, "kv_reserved_bytes", "bytes", "KV memory reserved", "pool bytes allocated" },
	{ TS, "kv_internal_waste_bytes", "bytes", "reserved but unused KV memory", "kv_reserved_bytes - kv_used_bytes (0 when negative)" },
	{ TS, "largest_free_bytes", "bytes", "largest free block", "largest contiguous free block of the pool" },
	{ TS, "ext_frag", "", "external fragmentation", "1 - (free bytes in largest-order blocks) / free bytes" },
	{ TS, "alloc_fail_frag", "", "allocations refused by fragmentation", "refusals so far with enough free bytes in total (cumulative)" },

	{ TT, "t_s", "s", "simulated time", "sample time" },
	{ TT, "tenant", "", "tenant", "the tenant's name" },
	{ TT, "waiting", "requests", "waiting requests", "the tenant's requests queued now, all replicas" },
	{ TT, "service", "weighted tokens", "service", "weighted tokens served so far (as in tenants.csv)" },
	{ TT, "virtual_service", "weighted tokens / weight", "virtual service", "service / weight, lifted on becoming backlogged (VTC's counter)" },

	/* prefill/decode disaggregation (src/lib/out_disagg.c, docs/cluster.md): only such runs write it */
	{ D, "group", "", "group", "the replica group's name (cluster.groups[i].name)" },
	{ D, "role", "", "role", "mixed, prefill or decode" },
	{ D, "replicas", "replicas", "replicas", "the group's replicas" },
	{ D, "busy_util", "share of time", "busy share", "sum of the replicas' iteration time / (replicas x last finish)" },
	{ D, "admissions", "", "admissions", "requests its schedulers admitted (again after a preemption)" },
	{ D, "queue_mean_s", "s", "queueing before admission", "mean time from joining a scheduler's queue (arrival, KV landed, or preemption) to admission: prefill queueing on a prefill group, decode queueing on a decode group" },
	{ D, "handoffs", "", "hand-offs", "requests whose prefill ended here and whose KV left for a decode replica" },
	{ D, "links", "", "KV links", "links of a prefill group (kv_transfer.topology); empty for other groups" },
	{ D, "transfers", "", "KV transfers", "transfers submitted on its links" },
	{ D, "bytes", "bytes", "KV bytes moved", "bytes submitted on its links (all arrive: conservation is checked)" },
	{ D, "link_util_mean", "share of time", "link utilisation, mean", "mean over its links of busy time (bytes / bandwidth) / last finish" },
	{ D, "link_util_max", "share of time", "link utilisation, max", "the busiest link's utilisation" },
	{ D, "link_queue_mean_s", "s", "link queueing, mean", "mean time a transfer waited for its link (FIFO) after its first byte was ready" },
	{ D, "link_queue_max_s", "s", "link queueing, max", "the longest such wait" },
	{ D, "xfer_mean_s", "s", "KV transfer time, mean", "mean of the prefill's end (last layer ready) to the KV's arrival" },
	/* autoscaling (sim/autoscale.h, docs/cluster.md "Autoscaling"): one row per decision, then the run's end */
	{ AS, "t_s", "s", "simulated time", "the decision's time (autoscale.interval apart); the last row: the end of billing (the last request's end or later scale action)" },
	{ AS, "group", "", "group", "the autoscaled group's index (cluster.groups order; 0 without groups)" },
	{ AS, "active", "replicas", "active replicas", "replicas the router sends requests to, after the decision" },
	{ AS, "starting", "replicas", "starting replicas", "replicas in their cold start (weights / load_bandwidth + start_time), after the decision" },
	{ AS, "draining", "replicas", "draining replicas", "replicas finishing their requests before going off, after the decision" },
	{ AS, "off", "replicas", "replicas off", "replicas holding nothing and billed nothing, after the decision" },
	{ AS, "metric", "per policy", "the policy's metric", "over the window: waiting requests per active or starting replica (queue), requests in flight per active or starting replica (concurrency), mean KV use (kv_util), or share of ended requests meeting slo: (slo); empty when it has no value" },
	{ AS, "delta", "replicas", "scale action", "replicas added (> 0) or removed (< 0) by the decision" },
	{ AS, "slo_attainment", "", "SLO attainment", "share of the requests ended since the previous decision that met slo: (rejected ones did not); empty without slo: or with none ended" },
	{ AS, "gpu_hours", "GPU-h", "GPU-hours billed", "integral of (starting + active + draining) x GPUs per replica, up to t_s" },

	/* the health report (src/lib/health.c, docs/health.md) */
	{ G, "group", "", "group", "the replica group's name (cluster.groups[i].name); groups.csv is written only with cluster.groups (docs/cluster.md)" },
	{ G, "role", "", "role", "mixed, prefill or decode" },
	{ G, "model", "", "model", "the model profile the group serves" },
	{ G, "device", "", "device", "the group's device profile" },
	{ G, "replicas", "", "replicas", "the group's replicas" },
	{ G, "gpus", "GPUs", "GPUs", "replicas x tensor parallel x pipeline stages x data-parallel ranks" },
	{ G, "requests", "", "requests routed", "requests routed to the group" },
	{ G, "completed", "", "completed", "of those, completed" },
	{ G, "rejected", "", "rejected", "of those, rejected (context or pool)" },
	{ G, "prompt_tokens", "tokens", "prompt tokens", "prompt tokens of its completed requests" },
	{ G, "output_tokens", "tokens", "output tokens", "output tokens of its completed requests" },
	{ G, "iterations", "", "iterations", "iterations over its replicas" },
	{ G, "busy_share", "share", "busy share", "time in iterations / (replicas x (last finish - first arrival))" },
	{ G, "mem_reserved_util", "share of pool", "reserved memory utilisation", "reserved byte-seconds / (pool x replicas x last finish)" },
	{ G, "kv_pool_bytes", "bytes", "KV pool per replica", "one replica's KV pool" },
	{ G, "ttft_p50_s", "s", "TTFT p50", "median time to first token of its completed requests; empty when none" },
	{ G, "ttft_p99_s", "s", "TTFT p99", "99th percentile of its time to first token" },
	{ G, "e2e_p50_s", "s", "end-to-end latency p50", "median end-to-end latency of its completed requests" },
	{ G, "e2e_p99_s", "s", "end-to-end latency p99", "99th percentile of its end-to-end latency" },
	{ G, "weight_share", "share", "routing share", "its routing weight (replicas x weight) / the weights of the groups serving its model: the share of that model's arrivals it takes" },
	{ G, "cost_per_gpu_hour", "USD/GPU-hour", "GPU list price", "the device profile's cost_per_gpu_hour or the group's override; empty when not known" },
	{ G, "gpu_hours", "GPU-hours", "GPU-hours", "gpus x (0 to the last finish) / 3600 s: a static group is held for the whole run; an autoscaled group its replica-seconds billed x GPUs per replica (starting, active, draining; autoscale.csv's last gpu_hours)" },
	{ G, "cost_usd", "USD", "cost", "gpu_hours x cost_per_gpu_hour; empty when the price is not known" },
	{ H, "check", "", "check", "cache_hit_rate, mem_util, fairness, max_block_bytes, e2e_tail_ratio or mem_growth (docs/health.md)" },
	{ H, "target", "", "target", "the threshold as text, from health: (e.g. \">= 0.85\", \"0.60..0.80\")" },
	{ H, "value", "per check", "measured value", "hit rate, reserved share of the pool, Jain's index, bytes, p99/p50, or growth as a share of the pool; empty when n/a" },
	{ H, "status", "", "status", "pass or warn on the run's evidence; n/a when the check cannot judge (no hit rate, one tenant, too few samples or completed requests, a load that is not flat)" },
	{ H, "cause", "", "cause", "warn: the likely cause with this run's numbers; n/a: why; pass: empty" },
	{ TI, "group", "", "replica group", "the group's name (cluster.groups[i].name), empty for a cluster of one group and in the row all" },
	{ TI, "tier", "", "tier", "cpu, ssd or remote (a row per tier present in each group), then all (the run's totals)" },
	{ TI, "instances", "", "tier instances", "tiers of that kind summed: the replicas, or 1 for a remote tier the replicas share" },
	{ TI, "capacity_bytes", "bytes", "tier capacity", "one instance's capacity (cache.tier_*_bytes)" },
	{ TI, "read_Bps", "bytes/s", "read bandwidth", "the read link toward the GPU (0 in the options: the device's host link x GPUs)" },
	{ TI, "write_Bps", "bytes/s", "write bandwidth", "the write link from the GPU" },
	{ TI, "latency_s", "s", "tier latency", "added to every load from the tier" },
	{ TI, "lookup_blocks", "blocks", "blocks looked up", "prefix blocks looked up in the tier: missed in the pool and every tier above" },
	{ TI, "hit_blocks", "blocks", "blocks found", "of those, held by the tier (loaded, or kept when the pool had no room)" },
	{ TI, "block_hit_rate", "", "block hit rate", "hit_blocks / lookup_blocks" },
	{ TI, "hit_tokens", "tokens", "tokens loaded", "prefix tokens loaded from the tier (all: from every tier)" },
	{ TI, "token_hit_rate", "", "token hit rate", "hit_tokens / prompt tokens the group's replicas looked up (all: the run's)" },
	{ TI, "in_bytes", "bytes", "bytes in", "bytes written into the tier, from the pool or the tier above (all: bytes the pools evicted into the tiers)" },
	{ TI, "down_bytes", "bytes", "bytes moved down", "bytes moved to the next tier (its in_bytes)" },
	{ TI, "drop_bytes", "bytes", "bytes dropped", "bytes dropped: evicted from the last tier, or arriving where a copy is held; in = held + down + dropped" },
	{ TI, "read_bytes", "bytes", "bytes read", "bytes read back to a pool (copies: the tier keeps them)" },
	{ TI, "held_bytes_end", "bytes", "bytes held at the end", "bytes the tier holds when the run ends, at most the capacity" },
	{ TI, "read_busy_s", "s", "read link busy", "time the read link carried bytes" },
	{ TI, "write_busy_s", "s", "write link busy", "time the write link carried bytes (writes are asynchronous)" },
	{ TI, "loads", "", "loading admissions", "all: admissions that loaded tokens from the tiers" },
	{ TI, "load_wait_s", "s", "load wait", "all: summed waits of those admissions for their loads to land" },
	{ TI, "recompute_avoided_s", "s", "recompute avoided", "all: summed roofline time of a lone prefill of each admission's loaded tokens" },
	{ TI, "ttft_saved_s", "s", "TTFT saved (estimate)", "all: recompute_avoided_s - load_wait_s (docs/cluster.md \"Tiered KV store\")" },
};

const char *const kv_metric_files[] = { S, T, R, TS, TT, H, D, AS, G, TI, NULL };

const struct kv_metric_doc *kv_metric_doc(const char *file, const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		if (!strcmp(docs[i].file, file) && !strcmp(docs[i].name, name))
			return &docs[i];
	return NULL;
}

#define MAX_COLS 64

/* Splits a header line into cols (NULL-terminated) in buf. */
static const char *const *split(const char *header, char *buf, size_t len, const char **cols)
{
	size_t n = 0;
	char *p;

	snprintf(buf, len, "%s", header);
	buf[strcspn(buf, "\n")] = 0;
	for (p = buf; p && n + 1 < MAX_COLS; n++) {
		cols[n] = p;
		if ((p = strchr(p, ',')))
			*p++ = 0;
	}
	cols[n] = NULL;
	return cols;
}

const char *const *kv_metric_columns(const char *file)
{
	static char buf[9][1024];
	static const char *cols[9][MAX_COLS];
	static const char *sum[MAX_COLS];
	size_t i;

	if (!strcmp(file, S)) { /* the workload's name, then kv_summary_names[] */
		sum[0] = "workload";
		for (i = 0; kv_summary_names[i] && i + 2 < MAX_COLS; i++)
			sum[i + 1] = kv_summary_names[i];
		sum[i + 1] = NULL;
		return sum;
	}
	if (!strcmp(file, T)) { /* the header, then the SLO columns written with slo: */
		char hdr[1024];

		snprintf(hdr, sizeof(hdr), "%.*s,slo_attainment,goodput_req_s,goodput_tok_s",
			 (int)strcspn(kv_csv_header_tenants, "\n"), kv_csv_header_tenants);
		return split(hdr, buf[0], sizeof(buf[0]), cols[0]);
	}
	if (!strcmp(file, H))
		return split(kv_csv_header_health, buf[4], sizeof(buf[4]), cols[4]);
	if (!strcmp(file, R)) { /* the header, then xfer_s (with disaggregation) and session, turn (with sessions) */
		char hdr[1024];

		snprintf(hdr, sizeof(hdr), "%.*s,xfer_s,session,turn", (int)strcspn(kv_csv_header_requests, "\n"),
			 kv_csv_header_requests);
		return split(hdr, buf[1], sizeof(buf[1]), cols[1]);
	}
	if (!strcmp(file, D))
		return split(kv_csv_header_disagg, buf[5], sizeof(buf[5]), cols[5]);
	if (!strcmp(file, G))
		return split(kv_csv_header_groups, buf[6], sizeof(buf[6]), cols[6]);
	if (!strcmp(file, TI))
		return split(kv_csv_header_tiers, buf[8], sizeof(buf[8]), cols[8]);
	if (!strcmp(file, TS))
		return split(kv_csv_header_timeseries, buf[2], sizeof(buf[2]), cols[2]);
	if (!strcmp(file, TT))
		return split(kv_csv_header_tenant_timeseries, buf[3], sizeof(buf[3]), cols[3]);
	if (!strcmp(file, AS))
		return split(kv_csv_header_autoscale, buf[7], sizeof(buf[7]), cols[7]);
	return NULL;
}

const char *kv_metric_axis_label(const char *file, const char *name, char *buf, unsigned len)
{
	const struct kv_metric_doc *m = kv_metric_doc(file, name);

	if (!m)
		snprintf(buf, len, "%s", name);
	else if (m->unit[0] && !strstr(m->label, m->unit)) /* not "GPUs used (GPUs)" */
		snprintf(buf, len, "%s (%s)", m->label, m->unit);
	else
		snprintf(buf, len, "%s", m->label);
	return buf;
}

/*
 * Sweep axes a chart names in words: the label with its unit, and the
 * sense of the axis where a larger value does not mean more of the thing
 * (a larger time scale stretches the trace: less load).
 */
static const struct {
	const char *key, *label;
} axis_labels[] = {
	{ "workload.arrival.time_scale", "arrival time scale (\xc3\x97; lower = more load)" },
	{ "workload.arrival.rate", "arrival rate (requests/s)" },
	{ "workload.requests", "requests" },
	{ "workload.max_context", "served context (tokens)" },
	{ "cluster.replicas", "replicas" },
	{ "cluster.tensor_parallel", "tensor-parallel GPUs per replica" },
	{ "cluster.pipeline_parallel", "pipeline stages per replica" },
	{ "cluster.expert_parallel", "expert-parallel GPUs per replica" },
	{ "cluster.data_parallel", "data-parallel attention ranks per replica" },
	{ "scheduler.name", "scheduler" },
	{ "scheduler", "scheduler" },
	{ "cache.name", "cache model" },
	{ "cache", "cache model" },
	{ "engine.name", "engine" },
	{ "engine", "engine" },
	{ "device", "device" },
	{ "device.name", "device" },
	{ "model", "model" },
	{ "model.name", "model" },
	{ "memory.kv_tokens", "KV pool (tokens)" },
	{ "memory.block_tokens", "KV block size (tokens)" },
	{ "seed", "seed" },
};

const char *kv_sweep_axis_label(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(axis_labels) / sizeof(axis_labels[0]); i++)
		if (!strcmp(axis_labels[i].key, key))
			return axis_labels[i].label;
	return key;
}
