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

#endif /* KV_PROGRESS_H */
