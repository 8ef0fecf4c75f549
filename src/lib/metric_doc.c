/*
 * metric_doc.c -- the meaning of every CSV column (metric_doc.h).  The
 * definitions restate what sim/metrics.c, sim/engine.c and src/lib/output.c
 * compute; docs/design.md and docs/cost-model.md give the models behind them.
 */
#include "metric_doc.h"
#include "output.h"

#include "../../sim/metrics.h"

#include <stdio.h>
#include <string.h>

#define S "summary.csv"
#define T "tenants.csv"
#define R "requests.csv"
#define TS "timeseries.csv"
#define TT "tenant_timeseries.csv"
#define H "health.csv"
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
	{ R, "frontend_out_s", "s", "front end, way out", "engine emission to the client per chunk: hops, detokenisation, SSE chunk, frontend_overhead; first_token_s and finish_s less this are the engine's (completed only)" },

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

	/* the health report (src/lib/health.c, docs/health.md) */
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

const char *const kv_metric_files[] = { S, T, R, TS, TT, H, TI, NULL };

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
	static char buf[6][1024];
	static const char *cols[6][MAX_COLS];
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
	if (!strcmp(file, TI))
		return split(kv_csv_header_tiers, buf[5], sizeof(buf[5]), cols[5]);
	if (!strcmp(file, R))
		return split(kv_csv_header_requests, buf[1], sizeof(buf[1]), cols[1]);
	if (!strcmp(file, TS))
		return split(kv_csv_header_timeseries, buf[2], sizeof(buf[2]), cols[2]);
	if (!strcmp(file, TT))
		return split(kv_csv_header_tenant_timeseries, buf[3], sizeof(buf[3]), cols[3]);
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
