/*
 * bench_args.c — `bareperf bench`'s command line as nanoBench reads it
 * (tools/builtin-bench.c): unique prefixes of the option names, and the
 * words of a --batch line that carries options.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/bench_args.h"

const char *bench_opt_resolve(const char *arg, const char *const *names, int n, char *why,
			      size_t len)
{
	const char *found = NULL;
	int matches = 0;
	size_t k = strlen(arg);

	why[0] = 0;
	if (k < 2 || arg[0] != '-' || arg[1] == '-')
		return arg;
	for (int i = 0; i < n; i++)
		if (!strcmp(arg, names[i]))
			return names[i];
	for (int i = 0; i < n; i++)
		if (!strncmp(arg, names[i], k) && matches++ == 0)
			found = names[i];
	if (matches < 2)
		return matches ? found : arg;
	size_t at = (size_t)snprintf(why, len, "%s is ambiguous:", arg);
	for (int i = 0, first = 1; i < n && at < len; i++)
		if (!strncmp(arg, names[i], k)) {
			at += (size_t)snprintf(why + at, len - at, "%s %s", first ? "" : ",", names[i]);
			first = 0;
		}
	return NULL;
}

/* The word at *p into out (its end at *o); *p left past it. false: an unclosed quote. */
static bool one_word(const char **p, char *out, size_t *o)
{
	const char *s = *p;

	while (*s && *s != ' ' && *s != '\t') {
		if (*s == '\'') {
			const char *e = strchr(s + 1, '\'');
			if (!e)
				return false;
			memcpy(out + *o, s + 1, (size_t)(e - s - 1));
			*o += (size_t)(e - s - 1);
			s = e + 1;
		} else if (*s == '"') {
			for (s++; *s != '"'; s++) {
				if (!*s)
					return false;
				if (*s == '\\' && s[1] && strchr("\"\\$`", s[1]))
					s++;
				out[(*o)++] = *s;
			}
			s++;
		} else {
			if (*s == '\\' && s[1])
				s++;
			out[(*o)++] = *s++;
		}
	}
	*p = s;
	return true;
}

int bench_split_words(const char *name, const char *line, int *argc, char ***argv, char *why,
		      size_t len)
{
	/* at most one word per two characters, and name; each word shorter than line */
	size_t max = strlen(line) / 2 + 3;
	char **v = calloc(max, sizeof(*v));
	char *word = malloc(strlen(line) + 1);
	int n = 0;

	if (!v || !word) {
		snprintf(why, len, "out of memory");
		goto fail;
	}
	v[n++] = strdup(name);
	for (const char *p = line;;) {
		size_t o = 0;

		p += strspn(p, " \t");
		if (!*p)
			break;
		if (!one_word(&p, word, &o)) {
			snprintf(why, len, "a quote is not closed");
			goto fail;
		}
		word[o] = 0;
		v[n++] = strdup(word);
	}
	free(word);
	*argc = n;
	*argv = v;
	return 0;
fail:
	free(word);
	bench_free_words(n, v);
	return -1;
}

void bench_free_words(int argc, char **argv)
{
	for (int i = 0; argv && i < argc; i++)
		free(argv[i]);
	free(argv);
}
