/*
 * gnuplot.c -- running gnuplot on a script with no shell in between, and
 * checking what it wrote before renaming it into place; see gnuplot.h.
 */
#include "gnuplot.h"
#include "outdir.h"
#include "outfault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* 1 when gnuplot is an executable file on PATH. */
static int have_gnuplot(void)
{
	const char *path = getenv("PATH"), *p, *end;
	int found = 0;

	for (p = path ? path : "/usr/bin:/bin"; !found && *p; p = *end ? end + 1 : end) {
		char *cand;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		cand = kv_xasprintf("%.*s/gnuplot", (int)(end - p), end == p ? "." : p);
		found = access(cand, X_OK) == 0;
		free(cand);
	}
	return found;
}

char *kv_gp_quote(const char *s)
{
	char *q = kv_xmalloc(2 * strlen(s) + 3), *p = q;

	*p++ = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			*p++ = '\\';
		*p++ = *s;
	}
	*p++ = '"';
	*p = 0;
	return q;
}

/*
 * 1 when path holds a whole chart: a PNG from its signature to its IEND
 * chunk, or an SVG ending in its closing tag.  gnuplot can exit 0 after a
 * failed write (disk full, file-size limit), so its status alone says
 * nothing about the file.
 */
static int chart_complete(const char *path, int svg)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	static const unsigned char iend[12] = { 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82 };
	unsigned char head[8], tail[64];
	FILE *f = fopen(path, "rb");
	long size;
	size_t n;
	int ok = 0;

	if (!f)
		return 0;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 20 && fseek(f, 0, SEEK_SET) == 0 &&
	    fread(head, 1, sizeof(head), f) == sizeof(head)) {
		n = (size_t)KV_MIN(size, (long)sizeof(tail));
		if (fseek(f, size - (long)n, SEEK_SET) == 0 && fread(tail, 1, n, f) == n) {
			if (!svg) {
				ok = !memcmp(head, sig, 8) && !memcmp(tail + n - 12, iend, 12);
			} else {
				while (n && (tail[n - 1] == '\n' || tail[n - 1] == ' '))
					n--;
				ok = n >= 6 && !memcmp(tail + n - 6, "</svg>", 6);
			}
		}
	}
	fclose(f);
	return ok;
}

/* The last non-empty line of the n bytes at buf, in out (len bytes). */
static void last_line(char *buf, size_t n, char *out, size_t len)
{
	char *p;

	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = 0;
	p = strrchr(buf, '\n');
	p = p ? p + 1 : buf;
	n = KV_MIN(strlen(p), len - 1); /* a long line is cut: it is a message, not data */
	memcpy(out, p, n);
	out[n] = 0;
}

int kv_gnuplot(const char *dir, const char *script, const char *defs, const char *name)
{
	int svg = strlen(name) > 4 && !strcmp(name + strlen(name) - 4, ".svg");
	char *tmp_rel = kv_xasprintf(".%s.tmp", name);
	char *tmp = kv_xasprintf("%s/%s", dir, tmp_rel), *out = kv_xasprintf("%s/%s", dir, name);
	char *code = kv_xasprintf("%s; out='%s'", defs, tmp_rel);
	char errbuf[4096], why[512] = "";
	FILE *err = tmpfile();
	int st = -1, rc = 0;
	pid_t pid;

	if (!have_gnuplot()) {
		fprintf(stderr, "kvsim: gnuplot not found, no chart written (install it with: sudo apt-get install gnuplot-nox)\n");
		rc = 1;
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0)
			dup2(null, STDOUT_FILENO), dup2(null, STDIN_FILENO);
		if (err)
			dup2(fileno(err), STDERR_FILENO);
		if (chdir(dir))
			_exit(126);
		execlp("gnuplot", "gnuplot", "-e", code, script, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	if (err && fseek(err, 0, SEEK_SET) == 0) {
		size_t n = fread(errbuf, 1, sizeof(errbuf) - 1, err);

		last_line(errbuf, n, why, sizeof(why));
	}
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "kvsim: %s: gnuplot failed (%s %d)%s%s; no chart written\n", out,
			pid < 0 ? "fork" : WIFSIGNALED(st) ? "signal" : "exit status",
			pid < 0 ? errno : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
			why[0] ? ": " : "", why);
	else if (!chart_complete(tmp, svg))
		fprintf(stderr, "kvsim: %s: gnuplot exited 0 but wrote an incomplete %s (disk full or a file-size limit?)%s%s; no chart written\n",
			out, svg ? "SVG" : "PNG", why[0] ? ": " : "", why);
	else if (kv_out_rename(tmp, out))
		fprintf(stderr, "kvsim: %s: cannot rename into place: %s; no chart written\n", out,
			strerror(errno));
	else
		goto out;
	unlink(tmp);
	rc = KV_EIO;
out:
	if (err)
		fclose(err);
	free(tmp_rel);
	free(tmp);
	free(out);
	free(code);
	return rc;
}
