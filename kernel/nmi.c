/*
 * nmi.c — the NMI registry: the handlers that drivers and the layers above
 * register (kernel/trap.h: nmi_register), and the dispatch to them that
 * kernel/trap.c's trap_dispatch hands every NMI to. Apart from trap.c so
 * that a driver taking NMIs (kernel/platform/hpet.c) needs only this, not
 * the IDT and the fatal report behind it.
 */
#include "kernel/kernel.h"
#include "kernel/percpu.h"
#include "kernel/trap.h"

#define NMI_HANDLERS_MAX 8
/* One slot more than handlers: it stays empty, so every list ends in one. */
static nmi_handler_t nmi_handlers[NMI_HANDLERS_MAX + 1];

int nmi_register(nmi_handler_t h)
{
	for (int i = 0; i < NMI_HANDLERS_MAX; i++) {
		nmi_handler_t expected = NULL;
		if (__atomic_compare_exchange_n(&nmi_handlers[i], &expected, h, false,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return 0;
	}
	return -E_BUSY;
}

/*
 * Handlers take the slots in order and never leave them: the first empty
 * slot ends the list.
 *
 * NMIs are blocked from delivery until the handler's iretq. Any iretq
 * unblocks them, so an exception handled inside an NMI handler would let a
 * second NMI reuse the IST stack the first one is still on. We avoid that
 * by rule rather than by Linux's nested-NMI dance: an exception in NMI
 * context is fatal (trap_dispatch), so nothing irets before the NMI does;
 * so is an NMI in one, which trap_dispatch checks before it calls here.
 */
void nmi_dispatch(struct trap_frame *f)
{
	struct percpu *pc = this_cpu();
	bool claimed = false;
	nmi_handler_t h;

	pc->nmi_depth = 1;
	pc->nmi_count++;
	for (nmi_handler_t *p = nmi_handlers; (h = __atomic_load_n(p, __ATOMIC_ACQUIRE)); p++)
		claimed |= h(f);
	/* Read again rather than kept across the handlers' calls: one
	 * load, against a register saved and restored. */
	pc = this_cpu();
	if (!claimed)
		pc->nmi_unclaimed++;
	pc->nmi_depth = 0;
}
