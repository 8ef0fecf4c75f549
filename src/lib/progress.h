/*
 * progress.h -- a simulation's progress on stderr, from the sink's
 * progress hook (kv_sink.progress).
 *
 * One line redrawn when stderr is a terminal; with force (--progress) or
 * KVSIM_PROGRESS=1 and stderr not a terminal (CI logs, Slurm), one line
 * every 5 s; nothing in the first second of wall time.  quiet: none.  The
 * state is one process-wide line: call kv_progress_init first, and
 * kv_progress_done to clear a terminal's line before printing.
 */
#ifndef KV_PROGRESS_H
#define KV_PROGRESS_H

#include "../../sim/engine.h"

void kv_progress_init(int quiet, int force);
void kv_progress_cb(void *ctx, const struct kv_sim *s);
void kv_progress_done(void);
/* Starts the clock again for the next simulation of the same command (its ETA and first
 * second); the mode, and when the last line came, are kept. */
void kv_progress_restart(void);
/*
 * A line about a command's own steps (calibrate's grid points, the fit's
 * replays, a sweep's points), printf-style after "kvsim: ", in the mode
 * kv_progress_init chose: redrawn on a terminal at most every 0.25 s, on a
 * log the first at once and then one line every 5 s.  last: the closing
 * line, printed in both modes.
 */
void kv_progress_note(int last, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* KV_PROGRESS_H */
