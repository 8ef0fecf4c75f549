/*
 * progress.c -- a simulation's progress on stderr; see progress.h.
 */
#include "progress.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int progress_on; /* 0 off, 1 a terminal (one line redrawn), 2 a log (a line every 5 s) */
static double progress_t0, progress_last;
static int progress_noted; /* kv_progress_note printed since kv_progress_init: the first one is at once */

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void kv_progress_init(int quiet, int force)
{
	const char *env = getenv("KVSIM_PROGRESS");

	force |= env && !strcmp(env, "1");
	progress_on = quiet ? 0 : isatty(STDERR_FILENO) ? 1 : force ? 2 : 0;
	progress_t0 = progress_last = wall_now();
	progress_noted = 0;
}

void kv_progress_cb(void *ctx, const struct kv_sim *s)
{
	double now;

	(void)ctx;
	if (!progress_on)
		return;
	now = wall_now();
	if (now - progress_last < (progress_on == 1 ? 0.25 : 5.0) || now - progress_t0 < 1.0)
		return;
	progress_last = now;
	fprintf(stderr, "%skvsim: simulated %.1f s, %llu requests arrived, %llu in flight, %.2f M events/s",
		progress_on == 1 ? "\r\033[K" : "", (double)s->now * 1e-9,
		(unsigned long long)s->arrived, (unsigned long long)s->n_live,
		(double)s->events / (now - progress_t0) / 1e6);
	if (s->cfg->source.requests && s->arrived) {
		double frac = (double)s->arrived / (double)s->cfg->source.requests;

		fprintf(stderr, ", %.0f%%, ETA %.0f s", 100.0 * frac,
			(now - progress_t0) * (1.0 - frac) / frac);
	}
	if (progress_on == 2)
		fputc('\n', stderr);
}

void kv_progress_done(void)
{
	if (progress_on == 1 && wall_now() - progress_t0 >= 1.0)
		fputs("\r\033[K", stderr);
}

void kv_progress_restart(void)
{
	progress_t0 = wall_now(); /* progress_last kept: the notes between keep their cadence */
}

void kv_progress_note(int last, const char *fmt, ...)
{
	va_list ap;
	double now;

	if (!progress_on)
		return;
	now = wall_now();
	if (!last && progress_noted && now - progress_last < (progress_on == 1 ? 0.25 : 5.0))
		return;
	progress_last = now;
	progress_noted = 1;
	fputs(progress_on == 1 ? "\r\033[Kkvsim: " : "kvsim: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (last || progress_on == 2)
		fputc('\n', stderr);
}
