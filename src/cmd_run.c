/*
 * cmd_run.c -- `kvsim run`: load a workload, simulate, write the outputs.
 */
#include "commands.h"
#include "output.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SETS 256

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = sig;
}

static void run_usage(FILE *f)
{
	fputs("usage: kvsim run WORKLOAD.yaml [-o DIR] [--seed N] [--set key.path=value]...\n"
	      "\n"
	      "Simulates the workload and writes, in DIR (default: outputs.dir of the\n"
	      "workload, else out/NAME): requests.csv, timeseries.csv, summary.csv and\n"
	      "run.png (when gnuplot is installed); prints the summary as a table.\n"
	      "\n"
	      "options:\n"
	      "  -o, --output DIR     output directory (created when missing)\n"
	      "  -s, --seed N         random seed (overrides the workload's `seed:`)\n"
	      "  -S, --set K=V        override a workload key, e.g. --set cluster.replicas=4\n"
	      "                       or --set scheduler.name=fifo; repeatable\n"
	      "  -c, --check-pool     check every pool's integrity after every event (slow)\n"
	      "  -q, --quiet          no progress line and no table\n"
	      "  -h, --help           this help\n"
	      "\n"
	      "exit status: 0 done, 1 output error, 2 bad input, 3 out of memory, 130 interrupted\n",
	      f);
}

struct run_args {
	const char *path;
	const char *out;
	char *sets[MAX_SETS];
	size_t n_sets;
	int has_seed, quiet, check_pool;
	uint64_t seed;
};

static int parse_args(int argc, char **argv, struct run_args *a)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ "set", required_argument, NULL, 'S' },
		{ "check-pool", no_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int ch;

	memset(a, 0, sizeof(*a));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "o:s:S:cqh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			a->out = optarg;
			break;
		case 's':
			errno = 0;
			a->seed = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || optarg[0] == '-') {
				fprintf(stderr, "kvsim: run: --seed: bad value '%s': expected a non-negative integer\n", optarg);
				return 2;
			}
			a->has_seed = 1;
			break;
		case 'S':
			if (a->n_sets == MAX_SETS) {
				fprintf(stderr, "kvsim: run: --set: more than %d overrides\n", MAX_SETS);
				return 2;
			}
			a->sets[a->n_sets++] = optarg;
			break;
		case 'c':
			a->check_pool = 1;
			break;
		case 'q':
			a->quiet = 1;
			break;
		case 'h':
			run_usage(stdout);
			return -1;
		default:
			run_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "kvsim: run: expected one workload file, got %d arguments\n",
			argc - optind);
		run_usage(stderr);
		return 2;
	}
	a->path = argv[optind];
	return 0;
}

static int fail(const struct kv_diag *d, int status)
{
	kv_diag_print(d, stderr);
	return status;
}

/* Runs the simulation into the output directory; returns the exit status. */
static int simulate(struct kv_workload *w, const struct run_args *a, struct kv_sim *s)
{
	struct kv_summary sum;
	struct kv_diag d;
	struct kv_out out;
	struct kv_sink sink;
	char dir[1200];
	int rc;

	if (a->out)
		snprintf(dir, sizeof(dir), "%s", a->out);
	else if (w->out_dir[0])
		snprintf(dir, sizeof(dir), "%s", w->out_dir);
	else
		snprintf(dir, sizeof(dir), "out/%s", w->name);
	if (kv_out_open(&out, dir, w, &d)) {
		kv_out_abort(&out);
		return fail(&d, 1);
	}
	sink = kv_out_sink(&out);
	s->sink = sink;
	s->stop = &stop_flag;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	kv_progress_init(a->quiet);
	rc = kv_sim_run(s);
	kv_progress_done();
	if (rc) {
		kv_out_abort(&out);
		if (rc == KV_EINTR) {
			fprintf(stderr, "kvsim: interrupted at simulated %.3f s; no output written\n",
				(double)s->now * 1e-9);
			return 130;
		}
		if (rc == KV_EIO) {
			fprintf(stderr, "kvsim: %s: writing the outputs failed; no output written\n", dir);
			return 1;
		}
		return fail(&s->diag, 2);
	}
	if (kv_out_commit(&out, s, &sum, &d)) {
		kv_out_abort(&out);
		return fail(&d, 1);
	}
	if (!a->quiet) {
		char title[512];

		snprintf(title, sizeof(title), "%s: %s on %u x %s, %s / %s", w->name,
			 w->cfg.model.name, w->cfg.replicas, w->cfg.device.name,
			 w->cfg.sched->name, w->cfg.cache->name);
		kv_summary_print(&sum, title, stdout);
		printf("outputs in %s/\n", dir);
	}
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}

int kv_cmd_run(int argc, char **argv)
{
	struct run_args a;
	struct kv_workload w;
	struct kv_sim s;
	struct kv_diag d;
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (kv_workload_load(&w, a.path, a.sets, a.n_sets, a.has_seed, a.seed, &d)) {
		kv_workload_release(&w);
		return fail(&d, 2);
	}
	if (a.check_pool)
		w.cfg.check_pool = 1;
	if (kv_sim_init(&s, &w.cfg, NULL)) {
		if (!s.diag.file[0])
			snprintf(s.diag.file, sizeof(s.diag.file), "%s", a.path);
		rc = fail(&s.diag, 2);
	} else {
		rc = simulate(&w, &a, &s);
	}
	kv_sim_release(&s);
	kv_workload_release(&w);
	return rc;
}
