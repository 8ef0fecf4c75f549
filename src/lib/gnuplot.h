/*
 * gnuplot.h -- gnuplot run as a child process, for the charts (chart.c,
 * kvsim plot, the sweep's charts).
 *
 * No shell stands between kvsim and gnuplot: any character is safe in the
 * directory and in strings quoted by kv_gp_quote.  What gnuplot wrote is
 * checked (it can exit 0 after a failed write) before it is renamed into
 * place through the fault hook, so a chart is there whole or not at all.
 */
#ifndef KV_GNUPLOT_H
#define KV_GNUPLOT_H

/*
 * Runs gnuplot on script (an absolute path) in directory dir with the
 * variable definitions defs (gnuplot code, strings quoted by kv_gp_quote)
 * and out='.NAME.tmp'.  Checks what gnuplot wrote (a PNG's signature and
 * IEND chunk, an SVG's closing tag) and renames it to DIR/NAME.  Returns 0,
 * 1 when gnuplot is not installed (a note on stderr), or KV_EIO (a message
 * on stderr naming the file and gnuplot's last error line; nothing left
 * behind).
 */
int kv_gnuplot(const char *dir, const char *script, const char *defs, const char *name);

/* s as a gnuplot double-quoted string ('"' and '\\' escaped), a heap string. */
char *kv_gp_quote(const char *s);

#endif /* KV_GNUPLOT_H */
