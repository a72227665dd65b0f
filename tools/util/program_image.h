/*
 * tools/util/program_image.h — a program the kernel loaded, as perf reads
 * it: its relocatable object linked by the system's GNU ld into an
 * executable image whose sections sit where the run placed them, symbols
 * and DWARF relocated for those addresses (tools/util/program_image.c).
 * convert --to perf.data maps it into the program's runs.
 *
 * Errors: 0 or -1 with one line in err.
 */
#ifndef BAREPERF_TOOLS_UTIL_PROGRAM_IMAGE_H
#define BAREPERF_TOOLS_UTIL_PROGRAM_IMAGE_H

#include <stddef.h>

#include "tools/util/symbol.h"

/* Where convert keeps the image of program name beside out: OUT.NAME.elf. */
void program_image_path(const char *out, const char *name, char *buf, size_t n);
/*
 * Link prog (symtab_load_program's) into image, the symbols it takes from
 * the kernel at their values in kernel's table; the image has a GNU
 * build-id of its own.
 */
int program_image_link(const struct symtab *prog, const struct symtab *kernel, const char *image,
		       char *err, size_t errlen);

#endif
