/*
 * tools/util/qemu.c — the kernel in QEMU (tools/util/qemu.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/util/link.h"
#include "tools/util/qemu.h"
#include "tools/util/sigclean.h"
#include "tools/util/util.h"

#define TMP_PREFIX	"/tmp/bareperf-rec-"
#define CONNECT_S	10.0	/* QEMU opens its chardev socket before the guest runs */
#define STOP_S		2.0	/* after SIGTERM, before SIGKILL */
/* QEMU's stdout pipe: room for a whole run's stream (a suite with call
 * chains sends about 110 KiB), so that QEMU never waits on a recorder
 * that reads in batches (tools/builtin-record.c). 1 MiB is the largest
 * pipe Linux gives without privileges (fs.pipe-max-size); where it gives
 * less, the pipe keeps its 64 KiB. */
#define PIPE_SIZE	(1 << 20)

static char *qs(struct qemu *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *qs(struct qemu *q, const char *fmt, ...)
{
	va_list ap;
	char *s = q->strs[q->nstrs++];

	va_start(ap, fmt);
	vsnprintf(s, sizeof(q->strs[0]), fmt, ap);
	va_end(ap);
	return s;
}

static void qarg(struct qemu *q, const char *a)
{
	if (q->argc < 62)
		q->argv[q->argc++] = (char *)a;
}

/* The UEFI boot: a private ESP, the loader reads our command line from its bareperf.cfg. */
static int prepare_uefi(struct qemu *q, const struct qemu_config *c, char *err, size_t errlen)
{
	char from[4096], cfg[300], path[300], esp[256];
	FILE *f;

	if (access(QEMU_OVMF_CODE, R_OK))
		return fail(err, errlen, "%s is missing: apt-get install ovmf", QEMU_OVMF_CODE);
	snprintf(from, sizeof(from), "%s/esp/EFI/BOOT/BOOTX64.EFI", c->build);
	if (access(from, R_OK))
		return fail(err, errlen, "%s is missing: make esp builds it (make install "
			    "installs it)", from);
	snprintf(esp, sizeof(esp), "%s/esp", q->dir);
	snprintf(path, sizeof(path), "%s/EFI/BOOT", esp);
	if (mkdir(esp, 0755) || mkdir(qs(q, "%s/EFI", esp), 0755) || mkdir(path, 0755))
		return fail(err, errlen, "cannot make %s: %s", path, strerror(errno));
	if (copy_file(from, qs(q, "%s/BOOTX64.EFI", path), err, errlen) ||
	    copy_file(c->kernel, qs(q, "%s/kernel.elf", esp), err, errlen) ||
	    copy_file(QEMU_OVMF_VARS, qs(q, "%s/ovmf-vars.fd", q->dir), err, errlen))
		return -1;
	snprintf(cfg, sizeof(cfg), "%s/bareperf.cfg", esp);
	if (!(f = fopen(cfg, "w")) || fprintf(f, "# written by bareperf record\n%s\n",
					      q->cmdline) < 0 || fclose(f))
		return fail(err, errlen, "cannot write %s", cfg);
	qarg(q, "-drive");
	qarg(q, "if=pflash,format=raw,readonly=on,file=" QEMU_OVMF_CODE);
	qarg(q, "-drive");
	qarg(q, qs(q, "if=pflash,format=raw,file=%s/ovmf-vars.fd", q->dir));
	qarg(q, "-drive");
	qarg(q, qs(q, "format=raw,file=fat:rw:%s", esp));
	return 0;
}

int qemu_prepare(struct qemu *q, const struct qemu_config *c, char *err, size_t errlen)
{
	memset(q, 0, sizeof(*q));
	q->pid = -1;
	q->err_fd = -1;
	q->in_fd = -1;
	q->serial_in = c->serial_in;
	q->no_stderr = c->no_stderr;
	snprintf(q->dir, sizeof(q->dir), TMP_PREFIX "XXXXXX");
	if (!mkdtemp(q->dir)) {
		int e = errno;
		q->dir[0] = 0;
		return fail(err, errlen, "cannot make a temporary directory: %s", strerror(e));
	}
	sigclean_add_dir(q->dir);
	snprintf(q->cmdline, sizeof(q->cmdline), "%s", c->cmdline);
	if (strpbrk(q->cmdline, "\n"))
		return fail(err, errlen, "the kernel command line cannot hold a newline");
	if (access(c->kernel, R_OK))
		return fail(err, errlen, "%s: %s (run 'make' first, or --kernel PATH)", c->kernel,
			    strerror(errno));

	qarg(q, "qemu-system-x86_64");
	qarg(q, "-machine");
	qarg(q, "q35");
	qarg(q, "-m");
	qarg(q, qs(q, "%u", c->mem));
	/* Guest RAM backed before the boot. Otherwise the host backs it as it
	 * is first written: a transparent huge page zeroed while the vCPU
	 * waits, about 2 ms a 2 MiB page on an idle 2.5 GHz host, ten soft-PMU
	 * ticks no NMI can take. Which memory a run writes first depends on
	 * what the firmware wrote (OVMF other pages than a PVH boot), so the
	 * ticks lost depended on the boot path (the kernel's boot line "mem:
	 * first writes to free RAM" says whether a machine stalls so). */
	qarg(q, "-mem-prealloc");
	qarg(q, "-smp");
	qarg(q, qs(q, "%u", c->smp));
	qarg(q, "-no-reboot");
	qarg(q, "-display");
	qarg(q, "none");
	qarg(q, "-monitor");
	qarg(q, "none");
	qarg(q, "-serial");
	qarg(q, "stdio");
	qarg(q, "-nic");
	qarg(q, "none");
	qarg(q, "-device");
	qarg(q, "isa-debug-exit,iobase=0xf4,iosize=0x04");
	if (c->kvm) {
		qarg(q, "-enable-kvm");
		qarg(q, "-cpu");
		qarg(q, "host");
	}
	if (c->icount) {
		/* One TSC tick per retired instruction: deterministic runs (QEMU -icount). */
		qarg(q, "-icount");
		qarg(q, "shift=0,sleep=off");
	}
	if (c->uefi) {
		if (prepare_uefi(q, c, err, errlen))
			return -1;
	} else {
		if (!access(QEMU_QBOOT, R_OK)) {
			qarg(q, "-bios");
			qarg(q, QEMU_QBOOT);
		}
		qarg(q, "-kernel");
		qarg(q, c->kernel);
		qarg(q, "-append");
		qarg(q, q->cmdline);
	}
	if (c->virtio) {
		snprintf(q->sock, sizeof(q->sock), "%s/stream.sock", q->dir);
		qarg(q, "-device");
		qarg(q, "virtio-serial-pci,disable-legacy=on");
		qarg(q, "-chardev");
		qarg(q, qs(q, "socket,id=bpvc,path=%s,server=on,wait=on", q->sock));
		qarg(q, "-device");
		qarg(q, "virtserialport,chardev=bpvc,name=bareperf.0");
	}
	q->argv[q->argc] = NULL;
	snprintf(q->link, sizeof(q->link), "qemu-%s:%s%s%s", c->uefi ? "uefi" : "pvh",
		 c->virtio ? "virtio-console" : "serial-stdio", c->icount ? ",icount" : "",
		 c->kvm ? ",kvm" : "");
	return 0;
}

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
}

int qemu_start(struct qemu *q, int *out, char *err, size_t errlen)
{
	int p[2] = { -1, -1 }, e[2] = { -1, -1 }, in[2] = { -1, -1 };
	sigset_t stops, was;

	if (pipe2(p, O_CLOEXEC) || (!q->no_stderr && pipe2(e, O_CLOEXEC)) ||
	    (q->serial_in && pipe2(in, O_CLOEXEC))) {
		int er = errno;
		close_pair(p);
		close_pair(e);
		close_pair(in);
		return fail(err, errlen, "pipe: %s", strerror(er));
	}
	fcntl(p[0], F_SETPIPE_SZ, PIPE_SIZE);
	/* A stop signal waits until the child is registered (sigclean.h). */
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &was);
	q->pid = fork();
	if (q->pid > 0)
		sigclean_add_group(q->pid);
	else if (q->pid < 0)
		sigprocmask(SIG_SETMASK, &was, NULL);
	if (q->pid < 0) {
		int er = errno;
		close_pair(p);
		close_pair(e);
		close_pair(in);
		return fail(err, errlen, "fork: %s", strerror(er));
	}
	if (q->pid == 0) {
		int null = open("/dev/null", O_RDWR);
		/* Its own process group: Ctrl-C reaches us, and we stop QEMU. */
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &was, NULL);
		if (null < 0 || dup2(in[0] >= 0 ? in[0] : null, 0) < 0 || dup2(p[1], 1) < 0 ||
		    dup2(e[1] >= 0 ? e[1] : null, 2) < 0)
			_exit(127);
		execvp(q->argv[0], q->argv);
		fprintf(stderr, "cannot run %s: %s (apt-get install qemu-system-x86)\n",
			q->argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(q->pid, q->pid);
	sigprocmask(SIG_SETMASK, &was, NULL);
	close(p[1]);
	*out = p[0];
	if (e[1] >= 0)
		close(e[1]);
	q->err_fd = e[0];
	if (in[0] >= 0)
		close(in[0]);
	q->in_fd = in[1];
	return 0;
}

int qemu_connect(struct qemu *q, char *err, size_t errlen)
{
	int fd = link_unix_connect(q->sock, q->pid, CONNECT_S, err, errlen);

	if (fd == -2)
		return fail(err, errlen, "QEMU did not open its virtio-console socket %s", q->sock);
	return fd;
}

static void err_line(struct qemu *q, qemu_line_fn fn, void *ctx)
{
	q->errline[q->errlen] = 0;
	if (q->errlen && !strstr(q->errline, "terminating on signal")) {
		q->err_lines++;
		fn(ctx, q->errline);
	}
	q->errlen = 0;
}

void qemu_err_read(struct qemu *q, qemu_line_fn fn, void *ctx)
{
	char buf[1024];
	ssize_t n = read(q->err_fd, buf, sizeof(buf));

	if (n <= 0) {
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return;
		err_line(q, fn, ctx);
		close(q->err_fd);
		q->err_fd = -1;
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == '\n' || q->errlen == sizeof(q->errline) - 1)
			err_line(q, fn, ctx);
		if (buf[i] != '\n' && buf[i] != '\r')
			q->errline[q->errlen++] = buf[i];
	}
}

int qemu_reap(struct qemu *q, bool kill_it)
{
	double t0 = now_s();
	int st = -1;

	if (q->pid <= 0)
		return -1;
	if (kill_it)
		kill(-q->pid, SIGTERM);
	while (now_s() - t0 < STOP_S) {
		pid_t r = waitpid(q->pid, &st, WNOHANG);
		if (r == q->pid) {
			sigclean_del_group(q->pid);
			q->pid = -1;
			return st;
		}
		if (r < 0)
			break;
		usleep(10000);
	}
	kill(-q->pid, SIGKILL);
	waitpid(q->pid, &st, 0);
	sigclean_del_group(q->pid);
	q->pid = -1;
	return st;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path) && errno != ENOENT ? -1 : 0;
}

void qemu_cleanup(struct qemu *q)
{
	/* Our own mkdtemp directory, depth first; never follows a link out of it. */
	if (q->dir[0] && !strncmp(q->dir, TMP_PREFIX, strlen(TMP_PREFIX)))
		nftw(q->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	sigclean_del_dir(q->dir);
}
