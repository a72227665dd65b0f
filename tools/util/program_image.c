/*
 * tools/util/program_image.c — a program's object linked into an image at
 * the addresses its run placed it (tools/util/program_image.h): the
 * linker script symtab_program_ldscript writes, then the system's GNU ld
 * with a GNU build-id of the image's own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/util/program_image.h"
#include "tools/util/util.h"

extern char **environ;

void program_image_path(const char *out, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s.%s.elf", out, name);
}

/* Run argv, its output (stdout and stderr) in out[n]: the exit status, or -1. */
static int run_captured(char *const argv[], char *out, size_t n)
{
	posix_spawn_file_actions_t fa;
	int pipefd[2], status = -1;
	size_t got = 0;
	ssize_t r;
	pid_t pid;

	out[0] = 0;
	if (pipe2(pipefd, O_CLOEXEC))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
	errno = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (errno) {
		snprintf(out, n, "%s: %s", argv[0], strerror(errno));
		close(pipefd[0]);
		return -1;
	}
	for (;;) {
		char sink[256];
		bool room = got < n - 1;
		r = read(pipefd[0], room ? out + got : sink, room ? n - 1 - got : sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (room)
			got += (size_t)r;
	}
	out[got] = 0;
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int program_image_link(const struct symtab *prog, const struct symtab *kernel, const char *image,
		       char *err, size_t errlen)
{
	char script[4200], entry[32], out[1024];
	const char *name;
	uint64_t start, end;
	FILE *f;
	int rc;

	symtab_program_range(prog, &name, &start, &end);
	snprintf(script, sizeof(script), "%s.ld", image);
	if (!(f = fopen(script, "w")))
		return fail(err, errlen, "%s: %s", script, strerror(errno));
	rc = symtab_program_ldscript(prog, kernel, f, err, errlen);
	if (fclose(f) && !rc)
		rc = fail(err, errlen, "%s: %s", script, strerror(errno));
	if (!rc) {
		char *argv[] = { "ld", "-static", "-nostdlib", "-z", "max-page-size=4096",
				 "-z", "noexecstack", "--build-id=sha1", "-e", entry, "-T", script,
				 "-o", (char *)image, (char *)symtab_path(prog), NULL };
		snprintf(entry, sizeof(entry), "0x%llx", (unsigned long long)start);
		if (run_captured(argv, out, sizeof(out)))
			rc = fail(err, errlen, "ld could not link %s at its run's addresses: %s",
				  symtab_path(prog), out[0] ? strtok(out, "\n") : "failed");
	}
	unlink(script);
	return rc;
}
