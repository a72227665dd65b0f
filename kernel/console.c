/*
 * console.c — kernel text output, and the lock that serializes everything
 * leaving the machine: console text and the stream's frames
 * (kernel/stream.c) never interleave. Text goes to the UART as plain
 * lines until a stream starts, then to the sink the stream registers
 * (console_set_sink: CONSOLE frames on the UART transport, and on the
 * UART plus the stream with virtio). Until the
 * console UART is chosen (kernel/dev/serial.c) text is kept in a boot-log
 * buffer and replayed on it (and meanwhile written to COM1 if it
 * answers, the usual choice, so a host watching it sees the boot as it
 * happens). Text also goes to the screen (kernel/dev/fb.c)
 * when there is one, except from NMI context: an NMI may have interrupted
 * a drawing, and NMI paths keep to the lock-free stream. A CPU reporting
 * a fatal error takes the lock over rather than wait for it, so a crash is
 * always printed. The UART and the screen are reached through the outputs
 * their drivers register (console.h: CONSOLE_OUT), so printing names no
 * driver.
 */
#include "kernel/kernel.h"
#include "kernel/percpu.h"
#include "kernel/console.h"

#define EARLY_LOG_SIZE	16384

static char early_log[EARLY_LOG_SIZE];
static size_t early_len, early_lost;
static bool serial_ready;
static bool early_to_uart;		/* text before the choice also goes to COM1 */
static bool text_to_uart = true;	/* console=fb turns plain text off the UART */
static bool fb_busy;			/* a fault while drawing must not draw */
static console_sink_fn text_sink;	/* framed output started (kernel/stream.c) */
static bool sink_plain_uart;		/* ... on another transport: the UART stays plain */

static u32 console_owner = ~0u;		/* cpu holding the console, or ~0 */
static u32 console_depth;

/*
 * The lock's waits are bounded by the TSC. A fatal report takes the lock
 * over after CONSOLE_FATAL_MS; any other waiter gives up after
 * CONSOLE_LOCK_MS (far above the longest burst a holder writes: a drain
 * at 115200 baud) and its caller drops its output. Who waited, for whom
 * and how long is kept and said by the next CPU that takes the lock.
 */
#define CONSOLE_LOCK_MS		5000
#define CONSOLE_FATAL_MS	1000

#define TSC_KHZ_FASTEST		10000000ul	/* before console_set_tsc_hz */

static u64 tsc_khz = TSC_KHZ_FASTEST;

void console_set_tsc_hz(u64 hz)
{
	if (hz >= 1000)
		tsc_khz = hz / 1000;
}

static bool waited_ms(u64 t0, u64 ms)
{
	return rdtsc_ordered() - t0 >= ms * tsc_khz;
}

static struct {
	u32 waiter, holder;
	u64 ms;
	u32 n;				/* waits given up since the last report */
} gave_up;

static void say_gave_up(void)
{
	u32 n = __atomic_exchange_n(&gave_up.n, 0, __ATOMIC_RELAXED);

	if (n)
		kprintf("console: cpu %u gave up on the output lock after %lu ms, held by cpu %u "
			"(%u waits given up; their output was dropped)\n", gave_up.waiter,
			gave_up.ms, gave_up.holder, n);
}

bool console_lock_output(void)
{
	u32 me = this_cpu()->cpu;

	if (__atomic_load_n(&console_owner, __ATOMIC_RELAXED) == me) {
		console_depth++;		/* same CPU: a fault while printing */
		return true;
	}
	u64 t0 = rdtsc_ordered();
	for (;;) {
		u32 free = ~0u;
		if (__atomic_compare_exchange_n(&console_owner, &free, me, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
		if (this_cpu()->in_fatal && waited_ms(t0, CONSOLE_FATAL_MS)) {
			__atomic_store_n(&console_owner, me, __ATOMIC_RELAXED);
			break;
		}
		if (waited_ms(t0, CONSOLE_LOCK_MS)) {
			gave_up.waiter = me;
			gave_up.holder = free;
			gave_up.ms = (rdtsc_ordered() - t0) / tsc_khz;
			__atomic_add_fetch(&gave_up.n, 1, __ATOMIC_RELAXED);
			return false;
		}
		cpu_relax();
	}
	console_depth = 1;
	say_gave_up();
	return true;
}

bool console_trylock(void)
{
	u32 me = this_cpu()->cpu, free = ~0u;

	if (!__atomic_compare_exchange_n(&console_owner, &free, me, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	console_depth = 1;
	return true;
}

void console_unlock_output(void)
{
	if (--console_depth == 0)
		__atomic_store_n(&console_owner, ~0u, __ATOMIC_RELEASE);
}

/* To every registered device of a kind (console.h: CONSOLE_OUT). */
static void out_write(enum console_out_kind kind, const char *s, size_t n)
{
	for (const struct console_out *o = __start_console_outs; o < __stop_console_outs; o++)
		if (o->kind == kind)
			o->write(s, n);
}

static void serial_out(const char *s, size_t n)
{
	out_write(CONSOLE_OUT_SERIAL, s, n);
}

static void emit(const char *s, size_t n)
{
	if (!fb_busy && !this_cpu()->nmi_depth) {
		fb_busy = true;
		out_write(CONSOLE_OUT_SCREEN, s, n);
		fb_busy = false;
	}
	if (!serial_ready) {
		size_t room = EARLY_LOG_SIZE - early_len, k = MIN(room, n);
		memcpy(early_log + early_len, s, k);
		early_len += k;
		early_lost += n - k;
		if (early_to_uart && text_to_uart)
			serial_out(s, n);
		return;
	}
	if (!text_sink) {
		if (text_to_uart)
			serial_out(s, n);
		return;
	}
	if (sink_plain_uart && text_to_uart)
		serial_out(s, n);
	text_sink(s, n);
}

/* Set-up steps go ahead without the lock when its holder is stuck. */
void console_set_sink(console_sink_fn write, bool plain_uart)
{
	bool locked = console_lock_output();

	sink_plain_uart = plain_uart;
	text_sink = write;
	if (locked)
		console_unlock_output();
}

void console_text_to_uart(bool on)
{
	text_to_uart = on;
}

void console_early_uart(void)
{
	bool locked = console_lock_output();

	early_to_uart = true;
	if (text_to_uart)		/* what was printed before, then the rest as it comes */
		serial_out(early_log, early_len);
	if (locked)
		console_unlock_output();
}

void console_serial_ready(bool replay)
{
	bool locked = console_lock_output();

	serial_ready = true;
	if (text_to_uart && replay)
		serial_out(early_log, early_len);
	if (early_lost)
		kprintf("console: %lu bytes of the boot log did not fit in its %u-byte buffer\n",
			early_lost, EARLY_LOG_SIZE);
	early_len = early_lost = 0;
	if (locked)
		console_unlock_output();
}

void console_write(const char *s, size_t len)
{
	if (!console_lock_output())
		return;
	emit(s, len);
	console_unlock_output();
}

static void sink(const char *s, size_t n, void *ctx)
{
	(void)ctx;
	emit(s, n);
}

int kvprintf(const char *fmt, va_list ap)
{
	int n;

	if (!console_lock_output())
		return 0;
	n = kvprintf_sink(sink, NULL, fmt, ap);
	console_unlock_output();
	return n;
}

int kprintf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvprintf(fmt, ap);
	va_end(ap);
	return n;
}
