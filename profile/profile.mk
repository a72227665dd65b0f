# profile/ build fragment (included by the top-level Makefile).
#
# The runs (profile/profile.h) build into the kernel, over the drivers of
# pmu/ (pmu/pmu.mk): the run's state, start, tick and stop, the sampling
# NMIs, the records, the settings, the summary, and the traced run
# (profile/trace.c) over the tracers' producers in pmu/trace/.
KERNEL_C += profile/state.c profile/profile.c profile/sample.c profile/records.c \
	profile/settings.c profile/summary.c profile/trace.c profile/took.c
