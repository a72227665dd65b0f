/*
 * tools/util/sigclean.c — what a stop signal must not leave behind
 * (tools/util/sigclean.h). The handler runs only async-signal-safe calls
 * (signal-safety(7)): kill, waitpid, nanosleep, open, getdents64, unlinkat;
 * the registry is fixed slots, each marked used only once it is filled.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/util/sigclean.h"

#define SLOTS		8
#define STOP_NS		2000000000L	/* after SIGTERM, before SIGKILL */
#define TICK_NS		10000000L
#define DEPTH_MAX	8		/* the deepest: a UEFI ESP copy, esp/EFI/BOOT */

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };

static struct {
	char path[96];
	volatile sig_atomic_t used;
} dirs[SLOTS];
static volatile pid_t groups[SLOTS];	/* 0: a free slot */
static pid_t owner;			/* who installed the handler: 0 not yet */

/* What getdents64(2) fills the buffer with. */
struct dent64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* Everything in the directory dfd, depth first; links are removed, never followed. */
static void remove_in(int dfd, int depth)
{
	char buf[2048];
	bool again = true;

	/* From the start again while a pass removed something: what a
	 * directory lists while it shrinks is the filesystem's choice. */
	while (again) {
		long n;
		again = false;
		lseek(dfd, 0, SEEK_SET);
		while ((n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
			for (long at = 0; at < n; ) {
				struct dent64 *d = (struct dent64 *)(buf + at);
				at += d->reclen;
				if (!strcmp(d->name, ".") || !strcmp(d->name, ".."))
					continue;
				if (!unlinkat(dfd, d->name, 0)) {
					again = true;
					continue;
				}
				int sub = errno == EISDIR && depth < DEPTH_MAX ?
					  openat(dfd, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW) : -1;
				if (sub < 0)
					continue;
				remove_in(sub, depth + 1);
				close(sub);
				if (!unlinkat(dfd, d->name, AT_REMOVEDIR))
					again = true;
			}
		}
	}
}

/* Every group still registered: SIGTERM, then SIGKILL after STOP_NS; reaped. */
static void stop_groups(void)
{
	const struct timespec tick = { 0, TICK_NS };
	long waited = 0;
	bool left = true;

	for (int i = 0; i < SLOTS; i++)
		if (groups[i] > 0)
			kill(-groups[i], SIGTERM);
	while (left) {
		left = false;
		for (int i = 0; i < SLOTS; i++) {
			if (groups[i] <= 0)
				continue;
			if (waited >= STOP_NS) {
				kill(-groups[i], SIGKILL);
				waitpid(groups[i], NULL, 0);
			} else if (!waitpid(groups[i], NULL, WNOHANG)) {
				left = true;
				continue;
			}
			groups[i] = 0;
		}
		if (left) {
			nanosleep(&tick, NULL);
			waited += TICK_NS;
		}
	}
}

static void on_stop(int sig)
{
	sigset_t set;

	if (getpid() != owner)
		_exit(128 + sig);
	stop_groups();
	for (int i = 0; i < SLOTS; i++) {
		if (!dirs[i].used)
			continue;
		int fd = open(dirs[i].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		if (fd >= 0) {
			remove_in(fd, 0);
			close(fd);
		}
		rmdir(dirs[i].path);
		dirs[i].used = 0;
	}
	/* Die of the signal itself, as without the handler. */
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}

/* The handler, over each stop signal's default action only. */
static void install(void)
{
	struct sigaction sa, old;

	owner = getpid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		sigaddset(&sa.sa_mask, stop_signals[i]);
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		if (!sigaction(stop_signals[i], NULL, &old) && old.sa_handler == SIG_DFL)
			sigaction(stop_signals[i], &sa, NULL);
}

int sigclean_add_dir(const char *dir)
{
	install();
	if (strlen(dir) >= sizeof(dirs[0].path))
		return -1;
	for (int i = 0; i < SLOTS; i++) {
		if (dirs[i].used)
			continue;
		strcpy(dirs[i].path, dir);
		dirs[i].used = 1;
		return 0;
	}
	return -1;
}

void sigclean_del_dir(const char *dir)
{
	for (int i = 0; i < SLOTS; i++)
		if (dirs[i].used && !strcmp(dirs[i].path, dir))
			dirs[i].used = 0;
}

int sigclean_add_group(pid_t pgid)
{
	install();
	for (int i = 0; i < SLOTS; i++) {
		if (groups[i])
			continue;
		groups[i] = pgid;
		return 0;
	}
	return -1;
}

void sigclean_del_group(pid_t pgid)
{
	for (int i = 0; i < SLOTS; i++)
		if (groups[i] == pgid)
			groups[i] = 0;
}
