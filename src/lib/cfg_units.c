/*
 * cfg_units.c -- numbers in config values: exact decimals, units (sizes,
 * durations), doubles (see cfg.h).
 *
 * Integer readers (u64, sizes, durations) parse the decimal text exactly --
 * at most 24 significant digits times a power of ten -- and scale by the
 * unit in 128-bit arithmetic (10^24 * 2^42 < 2^128), so "1e6" is exactly
 * 1000000 and 2^64 is rejected rather than rounded.  Rejected alternative:
 * strtod for everything, which is silently inexact above 2^53.  Doubles are
 * checked against the same grammar (no "nan", "inf", hex) and then
 * converted with strtod.
 */
#include "cfg_impl.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

__extension__ typedef unsigned __int128 u128;

/* ---- numbers ---- */

#define DEC_DIGITS 24 /* significant digits kept: 10^24 * 2^42 < 2^128 */
#define DEC_TOOLONG 1 /* dec_to_u64(): in range but more than DEC_DIGITS digits */
#define DEC_TOZERO 2 /* dec_to_u64(): a nonzero value that rounds to 0 */

/* A decimal number: sign * dig * 10^e. */
struct dec {
	char dig[DEC_DIGITS]; /* significant digits, no leading or trailing zeros */
	int n; /* digits in dig[]; 0 for zero */
	long e; /* decimal exponent */
	int neg; /* a '-' sign was given */
	int toolong; /* more than DEC_DIGITS significant digits */
};

/* Appends a significant digit; past DEC_DIGITS it is dropped and e keeps the magnitude. */
static void dec_push(struct dec *v, char c)
{
	if (v->n < DEC_DIGITS) {
		v->dig[v->n++] = c;
		return;
	}
	v->toolong = 1;
	v->e++;
}

/* One mantissa digit: zeros after the last non-zero one wait in *zeros. */
static void dec_digit(struct dec *v, char c, long *zeros)
{
	if (c == '0') {
		if (v->n)
			(*zeros)++;
		return;
	}
	for (; *zeros; (*zeros)--)
		dec_push(v, '0');
	dec_push(v, c);
}

/* Digits with single '_' between them, from *s; returns how many. */
static int dec_run(const char **s, struct dec *v, long *zeros, int frac)
{
	const char *p = *s;
	int nd = 0;

	while (isdigit((unsigned char)*p)) {
		v->e -= frac;
		dec_digit(v, *p++, zeros);
		nd++;
		if (p[0] == '_' && isdigit((unsigned char)p[1]))
			p++;
	}
	*s = p;
	return nd;
}

/* Exponent "e[+-]digits" at *s, added to *e; left unread when malformed. */
static void dec_exp(const char **s, long *e)
{
	const char *p = *s + 1;
	long x = 0;
	int neg = 0;

	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (!isdigit((unsigned char)*p))
		return;
	for (; isdigit((unsigned char)*p); p++)
		if (x < 100000)
			x = x * 10 + (*p - '0');
	*e += neg ? -x : x;
	*s = p;
}

/*
 * Parses [+-]digits[.digits][e[+-]digits] ('_' allowed between digits; one
 * side of the point may be empty) at s.  Returns the end, or NULL when there
 * is no number.
 */
static const char *dec_parse(const char *s, struct dec *v)
{
	long zeros = 0;
	int nd;

	memset(v, 0, sizeof(*v));
	if (*s == '+' || *s == '-')
		v->neg = *s++ == '-';
	nd = dec_run(&s, v, &zeros, 0);
	if (*s == '.') {
		s++;
		nd += dec_run(&s, v, &zeros, 1);
	}
	if (!nd)
		return NULL;
	v->e += zeros;
	if (*s == 'e' || *s == 'E')
		dec_exp(&s, &v->e);
	return s;
}

/*
 * v * unit into *out.  Returns 0; KV_EINVAL when negative, or not integral
 * and !round; KV_ERANGE above UINT64_MAX; DEC_TOOLONG when more digits than
 * DEC_DIGITS were given and the value is not out of range (those digits
 * were dropped, so the result would not be exact).  With round the result
 * is rounded to nearest, halves up; DEC_TOZERO when a nonzero value rounds
 * to 0 (0 often means "off" or "unbounded": "1e-12s" must not become that).
 */
static int dec_to_u64(const struct dec *v, uint64_t unit, int round, uint64_t *out)
{
	u128 x = 0, p = 1, r;
	long e = v->e;
	int i;

	if (!v->n) {
		*out = 0;
		return 0;
	}
	if (v->neg)
		return KV_EINVAL;
	for (i = 0; i < v->n; i++)
		x = x * 10 + (unsigned)(v->dig[i] - '0');
	x *= unit;
	for (; e > 0; e--) {
		if (x > UINT64_MAX)
			return KV_ERANGE;
		x *= 10;
	}
	if (e < -38)
		return round ? DEC_TOZERO : KV_EINVAL;
	for (; e < 0; e++)
		p *= 10;
	r = x % p;
	x /= p;
	if (x > UINT64_MAX)
		return KV_ERANGE;
	if (v->toolong)
		return DEC_TOOLONG;
	if (r && !round)
		return KV_EINVAL;
	if (r && r >= p - r)
		x++;
	if (x > UINT64_MAX)
		return KV_ERANGE;
	if (!x)
		return DEC_TOZERO;
	*out = (uint64_t)x;
	return 0;
}


static const struct unit int_units[] = { { "", 1 }, { NULL, 0 } };

static const struct unit byte_units[] = {
	{ "", 1 },
	{ "B", 1 },
	{ "KB", 1000ULL },
	{ "MB", 1000000ULL },
	{ "GB", 1000000000ULL },
	{ "TB", 1000000000000ULL },
	{ "KiB", KV_KiB },
	{ "MiB", KV_MiB },
	{ "GiB", KV_GiB },
	{ "TiB", 1024 * KV_GiB },
	{ NULL, 0 },
};

static const struct unit ns_units[] = {
	{ "", KV_NS_PER_S },
	{ "ns", 1 },
	{ "us", KV_NS_PER_US },
	{ "\xc2\xb5s", KV_NS_PER_US },
	{ "ms", KV_NS_PER_MS },
	{ "s", KV_NS_PER_S },
	{ "min", 60 * KV_NS_PER_S },
	{ "h", 3600 * KV_NS_PER_S },
	{ NULL, 0 },
};


const struct conv conv_u64 = { "a non-negative integer", "", int_units, 0, 0, "1" };

const struct conv conv_bytes = {
	"a size", " (a number with unit B, KB, MB, GB, TB, KiB, MiB, GiB or TiB; "
		  "no unit: bytes)", byte_units, 1, 1, "1B",
};

const struct conv conv_ns = {
	"a duration", " (a number with unit ns, us, ms, s, min or h; no unit: seconds)",
	ns_units, 0, 1, "1ns",
};

/* Parses s ("number [spaces] unit") as c describes. */
static int conv_parse(const struct conv *c, const char *s, uint64_t *out)
{
	const struct unit *u;
	struct dec v;
	const char *end = dec_parse(s, &v);

	if (!end)
		return KV_EINVAL;
	while (*end == ' ' && c->units != int_units)
		end++;
	for (u = c->units; u->name; u++)
		if (!(c->icase ? strcasecmp : strcmp)(end, u->name))
			return dec_to_u64(&v, u->mult, c->round, out);
	return KV_EINVAL;
}

/* x with the largest named unit dividing it ("80GB", "200ms"), else plain. */
static const char *conv_fmt(const struct conv *c, uint64_t x, char *buf, size_t len)
{
	const struct unit *u, *best = NULL;

	for (u = c->units; u->name && x; u++)
		if (u->name[0] && x % u->mult == 0 && (!best || u->mult > best->mult))
			best = u;
	if (best)
		snprintf(buf, len, "%llu%s", (unsigned long long)(x / best->mult), best->name);
	else
		snprintf(buf, len, "%llu", (unsigned long long)x);
	return buf;
}

/* " in [a, b]", " of at least a" or "" (full range). */
static const char *conv_range(const struct conv *c, uint64_t min, uint64_t max, char *buf,
			      size_t len)
{
	char a[48], b[48];

	conv_fmt(c, min, a, sizeof(a));
	conv_fmt(c, max, b, sizeof(b));
	if (max == UINT64_MAX && !min)
		buf[0] = '\0';
	else if (max == UINT64_MAX)
		snprintf(buf, len, " of at least %s", a);
	else
		snprintf(buf, len, " in [%s, %s]", a, b);
	return buf;
}

/* Scalar n converted by c and checked against [min, max]. */
int node_conv(struct kv_cfg_node *n, const struct conv *c, uint64_t min, uint64_t max,
		     uint64_t *out, struct kv_diag *d)
{
	char range[128], what[80];
	uint64_t x = 0;
	int err;

	n->used = 1;
	conv_range(c, min, max, range, sizeof(range));
	if (n->type != KV_CFG_SCALAR)
		return node_err(n, d, KV_EINVAL, 0, "expected %s%s, got %s", c->what, range,
				describe(n, what, sizeof(what)));
	err = conv_parse(c, n->value, &x);
	if (err == DEC_TOOLONG)
		return node_err(n, d, KV_EINVAL, 0,
				"bad value '%s': more than %d significant digits",
				shown(n->value, what, sizeof(what)), DEC_DIGITS);
	if (err == DEC_TOZERO)
		return node_err(n, d, KV_EINVAL, 0,
				"bad value '%s': nonzero but rounds to 0 (the resolution is %s): expected 0 or at least %s",
				shown(n->value, what, sizeof(what)), c->res, c->res);
	if (!err && (x < min || x > max))
		err = KV_ERANGE;
	if (err)
		return node_err(n, d, err, 0, "bad value '%s': expected %s%s%s",
				shown(n->value, what, sizeof(what)), c->what, range,
				err == KV_EINVAL ? c->hint : "");
	*out = x;
	return 0;
}

int kv_cfg_node_u64(struct kv_cfg_node *n, uint64_t min, uint64_t max, uint64_t *out,
		    struct kv_diag *d)
{
	return node_conv(n, &conv_u64, min, max, out, d);
}

/* Parses a finite double in the dec_parse() grammar. */
static int parse_dbl(const char *s, double *out)
{
	struct dec v;
	const char *end = dec_parse(s, &v);
	char *buf, *q;

	if (!end || *end)
		return KV_EINVAL;
	buf = kv_xmalloc(strlen(s) + 1);
	for (q = buf; *s; s++)
		if (*s != '_')
			*q++ = *s;
	*q = '\0';
	*out = strtod(buf, NULL);
	free(buf);
	return isfinite(*out) ? 0 : KV_ERANGE;
}

/* " in [a, b]", " >= a", " <= b" or "" for infinite bounds. */
static const char *dbl_range(double min, double max, char *buf, size_t len)
{
	int lo = min > -DBL_MAX, hi = max < DBL_MAX;

	if (lo && hi)
		snprintf(buf, len, " in [%g, %g]", min, max);
	else if (lo || hi)
		snprintf(buf, len, " %s %g", lo ? ">=" : "<=", lo ? min : max);
	else
		buf[0] = '\0';
	return buf;
}

int kv_cfg_node_dbl(struct kv_cfg_node *n, double min, double max, double *out,
		    struct kv_diag *d)
{
	char range[128], what[80];
	double x = 0;
	int err;

	n->used = 1;
	dbl_range(min, max, range, sizeof(range));
	if (n->type != KV_CFG_SCALAR)
		return node_err(n, d, KV_EINVAL, 0, "expected a number%s, got %s", range,
				describe(n, what, sizeof(what)));
	err = parse_dbl(n->value, &x);
	if (!err && !(x >= min && x <= max))
		err = KV_ERANGE;
	if (err)
		return node_err(n, d, err, 0, "bad value '%s': expected a number%s",
				shown(n->value, what, sizeof(what)), range);
	*out = x;
	return 0;
}

