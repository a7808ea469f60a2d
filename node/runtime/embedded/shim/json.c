/*
 * A strict JSON reader (RFC 8259) into a tree, for spec.json and the
 * attach protocol's small objects, and the escaping of JSON strings.
 * It accepts what Go's encoding/json accepts, and refuses what it
 * refuses: anything malformed fails the start rather than run a
 * container other than the one asked for.
 */
#include "shim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* MAX_DEPTH bounds nesting, as the reader recurses: Go's bound. */
#define MAX_DEPTH 10000

struct parser {
	const char *p, *end, *start;
};

static char *perr(struct parser *ps, const char *what)
{
	if (ps->p >= ps->end)
		return errf("unexpected end of JSON input");
	return errf("invalid JSON at offset %zu: %s", (size_t)(ps->p - ps->start), what);
}

static void skip_space(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static void add_utf8(struct buf *b, unsigned r)
{
	char u[4];
	size_t n;
	if (r < 0x80) {
		u[0] = (char)r;
		n = 1;
	} else if (r < 0x800) {
		u[0] = (char)(0xc0 | r >> 6);
		u[1] = (char)(0x80 | (r & 0x3f));
		n = 2;
	} else if (r < 0x10000) {
		u[0] = (char)(0xe0 | r >> 12);
		u[1] = (char)(0x80 | ((r >> 6) & 0x3f));
		u[2] = (char)(0x80 | (r & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | r >> 18);
		u[1] = (char)(0x80 | ((r >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((r >> 6) & 0x3f));
		u[3] = (char)(0x80 | (r & 0x3f));
		n = 4;
	}
	buf_add(b, u, n);
}

/* parse_escape decodes the escape after a backslash; a surrogate pair
 * is one rune, a lone surrogate U+FFFD, as in Go. */
static char *parse_escape(struct parser *ps, struct buf *b)
{
	if (ps->p >= ps->end)
		return perr(ps, "");
	char c = *ps->p++;
	const char *simple = strchr("\"\\/bfnrt", c);
	if (c && simple) {
		static const char decoded[] = "\"\\/\b\f\n\r\t";
		buf_add(b, &decoded[simple - "\"\\/bfnrt"], 1);
		return NULL;
	}
	unsigned r, lo;
	if (c != 'u' || ps->end - ps->p < 4 || hex4(ps->p, &r) < 0)
		return perr(ps, "invalid escape in string");
	ps->p += 4;
	if (r >= 0xd800 && r < 0xdc00) {
		if (ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u' && hex4(ps->p + 2, &lo) == 0 &&
		    lo >= 0xdc00 && lo < 0xe000) {
			ps->p += 6;
			r = 0x10000 + ((r - 0xd800) << 10) + (lo - 0xdc00);
		} else {
			r = 0xfffd;
		}
	} else if (r >= 0xdc00 && r < 0xe000) {
		r = 0xfffd;
	}
	add_utf8(b, r);
	return NULL;
}

static char *parse_string(struct parser *ps, char **out, size_t *len)
{
	struct buf b = {0};
	ps->p++; /* the opening quote */
	for (;;) {
		if (ps->p >= ps->end) {
			free(b.p);
			return perr(ps, "");
		}
		unsigned char c = (unsigned char)*ps->p;
		if (c == '"') {
			ps->p++;
			break;
		}
		if (c < 0x20) {
			free(b.p);
			return perr(ps, "control character in string");
		}
		if (c == '\\') {
			ps->p++;
			char *err = parse_escape(ps, &b);
			if (err) {
				free(b.p);
				return err;
			}
			continue;
		}
		buf_add(&b, ps->p++, 1);
	}
	*len = b.len;
	*out = buf_cstr(&b);
	return NULL;
}

static int is_digit(const struct parser *ps) { return ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9'; }

static char *parse_number(struct parser *ps, struct jval *v)
{
	const char *begin = ps->p;
	if (*ps->p == '-')
		ps->p++;
	if (!is_digit(ps))
		return perr(ps, "invalid number");
	if (*ps->p == '0')
		ps->p++;
	else
		while (is_digit(ps))
			ps->p++;
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (!is_digit(ps))
			return perr(ps, "invalid number");
		while (is_digit(ps))
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (!is_digit(ps))
			return perr(ps, "invalid number");
		while (is_digit(ps))
			ps->p++;
	}
	v->t = J_NUM;
	v->slen = (size_t)(ps->p - begin);
	v->s = xmalloc(v->slen + 1);
	memcpy(v->s, begin, v->slen);
	v->s[v->slen] = 0;
	return NULL;
}

static char *parse_value(struct parser *ps, struct jval *v, int depth);

/* parse_list parses the items of an array, or the members of an object,
 * after its opening bracket. */
static char *parse_list(struct parser *ps, struct jval *v, int depth, char close)
{
	size_t cap = 0;
	ps->p++;
	skip_space(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return NULL;
	}
	for (;;) {
		if (v->n == cap) {
			cap = cap ? cap * 2 : 4;
			v->items = xrealloc(v->items, cap * sizeof *v->items);
			if (v->t == J_OBJ)
				v->keys = xrealloc(v->keys, cap * sizeof *v->keys);
		}
		struct jval *item = &v->items[v->n];
		memset(item, 0, sizeof *item);
		skip_space(ps);
		if (v->t == J_OBJ) {
			size_t klen;
			if (ps->p >= ps->end || *ps->p != '"')
				return perr(ps, "object key is not a string");
			char *err = parse_string(ps, &v->keys[v->n], &klen);
			if (err)
				return err;
			skip_space(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				free(v->keys[v->n]);
				return perr(ps, "missing ':' after object key");
			}
			ps->p++;
		}
		v->n++;
		char *err = parse_value(ps, item, depth + 1);
		if (err)
			return err;
		skip_space(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == close) {
			ps->p++;
			return NULL;
		}
		return perr(ps, close == ']' ? "missing ',' or ']' in array" : "missing ',' or '}' in object");
	}
}

static char *parse_literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return perr(ps, "invalid character");
	ps->p += n;
	return NULL;
}

static char *parse_value(struct parser *ps, struct jval *v, int depth)
{
	if (depth > MAX_DEPTH)
		return perr(ps, "nested too deep");
	skip_space(ps);
	if (ps->p >= ps->end)
		return perr(ps, "");
	switch (*ps->p) {
	case '{':
		v->t = J_OBJ;
		return parse_list(ps, v, depth, '}');
	case '[':
		v->t = J_ARR;
		return parse_list(ps, v, depth, ']');
	case '"':
		v->t = J_STR;
		return parse_string(ps, &v->s, &v->slen);
	case 't':
		v->t = J_BOOL;
		v->b = 1;
		return parse_literal(ps, "true");
	case 'f':
		v->t = J_BOOL;
		return parse_literal(ps, "false");
	case 'n':
		v->t = J_NULL;
		return parse_literal(ps, "null");
	}
	return parse_number(ps, v);
}

char *json_parse(const char *text, size_t len, struct jval *out)
{
	struct parser ps = {text, text + len, text};
	memset(out, 0, sizeof *out);
	char *err = parse_value(&ps, out, 0);
	if (!err) {
		skip_space(&ps);
		if (ps.p != ps.end)
			err = perr(&ps, "data after the top-level value");
	}
	if (err)
		json_free(out);
	return err;
}

/* json_free frees a tree, also one a failed parse left half made: its
 * counts cover only the members made. */
void json_free(struct jval *v)
{
	for (size_t i = 0; i < v->n; i++) {
		json_free(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->s);
	free(v->items);
	free(v->keys);
	memset(v, 0, sizeof *v);
}

/* json_get matches names exactly, where Go's encoding/json also takes
 * them in other cases: what the shim reads, the Go side wrote with its
 * own struct tags. Of duplicate names the last wins, as in Go. Members of
 * other names are parsed, so checked, and ignored. */
const struct jval *json_get(const struct jval *obj, const char *name)
{
	if (obj->t != J_OBJ)
		return NULL;
	for (size_t i = obj->n; i > 0; i--)
		if (strcmp(obj->keys[i - 1], name) == 0)
			return &obj->items[i - 1];
	return NULL;
}

/* The typed accessors leave *out as it is for null, as Go does. */

char *json_bool(const struct jval *v, const char *name, int *out)
{
	if (v->t == J_NULL)
		return NULL;
	if (v->t != J_BOOL)
		return errf("%s: want a boolean", name);
	*out = v->b;
	return NULL;
}

char *json_str(const struct jval *v, const char *name, char **out)
{
	if (v->t == J_NULL)
		return NULL;
	if (v->t != J_STR)
		return errf("%s: want a string", name);
	if (strlen(v->s) != v->slen)
		return errf("%s: a string with a NUL byte", name);
	*out = v->s;
	return NULL;
}

/* is_integer says whether a number's text has no fraction or exponent:
 * Go refuses those for integer fields. */
static int is_integer(const struct jval *v) { return !strpbrk(v->s, ".eE"); }

char *json_int(const struct jval *v, const char *name, int64_t min, int64_t max, int64_t *out)
{
	if (v->t == J_NULL)
		return NULL;
	if (v->t != J_NUM || !is_integer(v))
		return errf("%s: want an integer", name);
	errno = 0;
	long long n = strtoll(v->s, NULL, 10);
	if (errno || n < min || n > max)
		return errf("%s: %s out of range", name, v->s);
	*out = n;
	return NULL;
}

char *json_uint(const struct jval *v, const char *name, uint64_t max, uint64_t *out)
{
	if (v->t == J_NULL)
		return NULL;
	if (v->t != J_NUM || !is_integer(v) || v->s[0] == '-')
		return errf("%s: want an unsigned integer", name);
	errno = 0;
	unsigned long long n = strtoull(v->s, NULL, 10);
	if (errno || n > max)
		return errf("%s: %s out of range", name, v->s);
	*out = n;
	return NULL;
}

void json_escape(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	buf_add(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf_add(b, "\\", 1);
			buf_add(b, s, 1);
		} else if (c == '\n') {
			buf_str(b, "\\n");
		} else if (c == '\t') {
			buf_str(b, "\\t");
		} else if (c < 0x20) {
			char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			buf_add(b, u, sizeof u);
		} else {
			buf_add(b, s, 1);
		}
	}
	buf_add(b, "\"", 1);
}

void json_error_line(struct buf *b, const char *error)
{
	buf_str(b, "{\"error\":");
	json_escape(b, error);
	buf_str(b, "}\n");
}
