/*
 * test_elfcheck.c — host tests for boot/elfcheck.c.
 *
 * Each test starts from a well-formed image built in memory (shaped like
 * linker.ld's output: RX text, RW data+bss, a PT_NOTE), breaks exactly one
 * thing and expects exactly the matching error code, so removing or
 * reordering any check in elfcheck() makes some test fail. The image is
 * handed over in a heap buffer of exactly the stated length, so ASan
 * reports any read past it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "boot/elfcheck.h"

#define TEXT_VA		0xffffffff80100000ull
#define TEXT_OFF	0x1000u
#define DATA_OFF	0x2000u
#define IMG_LEN		0x2100u		/* file size of the good image */

enum { PH_TEXT, PH_DATA, PH_NOTE, NPH };

struct image {
	_Alignas(8) uint8_t bytes[IMG_LEN];
};

static struct elf64_ehdr *ehdr(struct image *im)
{
	return (struct elf64_ehdr *)im->bytes;
}

static struct elf64_phdr *phdr(struct image *im, int i)
{
	return (struct elf64_phdr *)(im->bytes + sizeof(struct elf64_ehdr)) + i;
}

static void good_image(struct image *im)
{
	memset(im, 0, sizeof(*im));
	*ehdr(im) = (struct elf64_ehdr){
		.e_ident = { 0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_entry = TEXT_VA + 0x10, .e_phoff = sizeof(struct elf64_ehdr),
		.e_ehsize = sizeof(struct elf64_ehdr),
		.e_phentsize = sizeof(struct elf64_phdr), .e_phnum = NPH,
	};
	*phdr(im, PH_TEXT) = (struct elf64_phdr){
		.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = TEXT_OFF,
		.p_vaddr = TEXT_VA, .p_paddr = TEXT_VA - ELFCHECK_VADDR_MIN,
		.p_filesz = 0x100, .p_memsz = 0x100, .p_align = 0x1000,
	};
	*phdr(im, PH_DATA) = (struct elf64_phdr){
		.p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = DATA_OFF,
		.p_vaddr = TEXT_VA + 0x1000, .p_paddr = TEXT_VA + 0x1000 - ELFCHECK_VADDR_MIN,
		.p_filesz = 0x100, .p_memsz = 0x3000, .p_align = 0x1000,	/* bss */
	};
	*phdr(im, PH_NOTE) = (struct elf64_phdr){
		.p_type = PT_NOTE, .p_flags = PF_R, .p_offset = TEXT_OFF,
		.p_vaddr = TEXT_VA, .p_filesz = 0x10, .p_memsz = 0x10, .p_align = 4,
	};
}

/* Run elfcheck on the first len bytes of im, from a buffer of exactly len. */
static int check_len(const struct image *im, size_t len, struct elfcheck_result *r)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, im, len);
	rc = elfcheck(copy, len, r);
	free(copy);
	return rc;
}

static int check(const struct image *im)
{
	struct elfcheck_result r;
	int rc = check_len(im, IMG_LEN, &r);

	assert_non_null(r.reason);
	assert_true(strlen(r.reason) > 0);
	return rc;
}

static void test_good(void **state)
{
	struct image im;
	struct elfcheck_result r;

	(void)state;
	good_image(&im);
	assert_int_equal(check_len(&im, IMG_LEN, &r), ELFCHECK_OK);
	assert_string_equal(r.reason, "ok");
	assert_int_equal(r.nload, 2);
	assert_true(r.entry == TEXT_VA + 0x10);
	assert_true(r.vaddr_min == TEXT_VA);
	assert_true(r.span == 0x4000);		/* text page + data page + 2 bss pages */

	/* An unaligned buffer is fine: headers are copied, not dereferenced. */
	uint8_t *odd = malloc(IMG_LEN + 1);
	assert_non_null(odd);
	memcpy(odd + 1, &im, IMG_LEN);
	assert_int_equal(elfcheck(odd + 1, IMG_LEN, &r), ELFCHECK_OK);
	free(odd);
}

static void test_span_rounds_up(void **state)
{
	struct image im;
	struct elfcheck_result r;

	(void)state;
	good_image(&im);
	phdr(&im, PH_DATA)->p_memsz = 0x2001;
	assert_int_equal(check_len(&im, IMG_LEN, &r), ELFCHECK_OK);
	assert_true(r.span == 0x4000);
}

static void test_truncated_header(void **state)
{
	struct image im;
	struct elfcheck_result r;

	(void)state;
	good_image(&im);
	assert_int_equal(check_len(&im, 0, &r), ELFCHECK_ETRUNC);
	assert_int_equal(check_len(&im, sizeof(struct elf64_ehdr) - 1, &r), ELFCHECK_ETRUNC);
	assert_int_equal(elfcheck(NULL, IMG_LEN, &r), ELFCHECK_ETRUNC);
}

/* Every truncation of the good image is refused (and read in bounds). */
static void test_every_truncation(void **state)
{
	struct image im;
	struct elfcheck_result r;

	(void)state;
	good_image(&im);
	for (size_t len = 0; len < DATA_OFF + 0x100; len++)
		assert_int_not_equal(check_len(&im, len, &r), ELFCHECK_OK);
	assert_int_equal(check_len(&im, DATA_OFF + 0x100, &r), ELFCHECK_OK);
}

static void test_bad_magic(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	ehdr(&im)->e_ident[3] = 'X';
	assert_int_equal(check(&im), ELFCHECK_EMAGIC);
	good_image(&im);
	memcpy(im.bytes, "MZ\x90\x00", 4);	/* someone copied BOOTX64.EFI */
	assert_int_equal(check(&im), ELFCHECK_EMAGIC);
}

static void test_elf32(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	ehdr(&im)->e_ident[EI_CLASS] = 1;	/* ELFCLASS32 */
	assert_int_equal(check(&im), ELFCHECK_ECLASS);
}

static void test_big_endian(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	ehdr(&im)->e_ident[EI_DATA] = 2;	/* ELFDATA2MSB */
	assert_int_equal(check(&im), ELFCHECK_EDATA);
}

static void test_version(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	ehdr(&im)->e_ident[EI_VERSION] = 0;
	assert_int_equal(check(&im), ELFCHECK_EVERSION);
	good_image(&im);
	ehdr(&im)->e_version = 2;
	assert_int_equal(check(&im), ELFCHECK_EVERSION);
}

static void test_not_exec(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	ehdr(&im)->e_type = 3;			/* ET_DYN */
	assert_int_equal(check(&im), ELFCHECK_ETYPE);
	good_image(&im);
	ehdr(&im)->e_type = 1;			/* ET_REL: a kernel .o */
	assert_int_equal(check(&im), ELFCHECK_ETYPE);
}

static void test_wrong_machine(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	ehdr(&im)->e_machine = 183;		/* EM_AARCH64 */
	assert_int_equal(check(&im), ELFCHECK_EMACHINE);
	ehdr(&im)->e_machine = 3;		/* EM_386 */
	assert_int_equal(check(&im), ELFCHECK_EMACHINE);
}

static void test_phentsize(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	ehdr(&im)->e_phentsize = 32;		/* Elf32_Phdr */
	assert_int_equal(check(&im), ELFCHECK_EPHENT);
}

static void test_phdrs_past_eof(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	ehdr(&im)->e_phoff = IMG_LEN - sizeof(struct elf64_phdr);	/* 1 of 3 fits */
	assert_int_equal(check(&im), ELFCHECK_EPHDRS);
	ehdr(&im)->e_phoff = IMG_LEN + 1;
	assert_int_equal(check(&im), ELFCHECK_EPHDRS);
	ehdr(&im)->e_phoff = UINT64_MAX - 8;	/* offset + size wraps */
	assert_int_equal(check(&im), ELFCHECK_EPHDRS);
	good_image(&im);
	ehdr(&im)->e_phnum = 0xffff;
	assert_int_equal(check(&im), ELFCHECK_EPHDRS);
}

static void test_filesz_gt_memsz(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	phdr(&im, PH_TEXT)->p_memsz = 0xff;
	assert_int_equal(check(&im), ELFCHECK_EFILESZ);
}

static void test_segment_past_eof(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	phdr(&im, PH_DATA)->p_offset = IMG_LEN - 0xff;	/* one byte too far */
	assert_int_equal(check(&im), ELFCHECK_EOFFSET);
	good_image(&im);
	phdr(&im, PH_DATA)->p_offset = IMG_LEN + 0x1000;
	assert_int_equal(check(&im), ELFCHECK_EOFFSET);
	good_image(&im);
	phdr(&im, PH_DATA)->p_filesz = IMG_LEN;		/* memsz 0x3000 still bigger */
	assert_int_equal(check(&im), ELFCHECK_EOFFSET);
}

static void test_segment_offset_overflow(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	/* offset + filesz wraps to 0xf0: inside the file if added naively. */
	phdr(&im, PH_DATA)->p_offset = UINT64_MAX - 0xf;
	assert_int_equal(check(&im), ELFCHECK_EOFFSET);
}

static void test_vaddr_outside_kernel_range(void **state)
{
	static const struct { uint64_t vaddr, memsz; } bad[] = {
		{ 0x100000, 0x1000 },				/* identity/PVH address */
		{ ELFCHECK_VADDR_MIN - 0x1000, 0x1000 },	/* just below */
		{ ELFCHECK_VADDR_END, 0x1000 },			/* at the end */
		{ ELFCHECK_VADDR_END, 0 },			/* empty, at the end */
		{ ELFCHECK_VADDR_END - 0x1000, 0x1001 },	/* crosses the end */
		{ 0xfffffffffffff000ull, 0x2000 },		/* vaddr + memsz wraps */
		{ ELFCHECK_VADDR_MIN, UINT64_MAX },		/* absurd memsz */
	};
	struct image im;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		good_image(&im);
		phdr(&im, PH_TEXT)->p_vaddr = bad[i].vaddr;
		phdr(&im, PH_TEXT)->p_memsz = bad[i].memsz;
		if (bad[i].memsz < phdr(&im, PH_TEXT)->p_filesz)
			phdr(&im, PH_TEXT)->p_filesz = bad[i].memsz;
		ehdr(&im)->e_entry = bad[i].vaddr;
		assert_int_equal(check(&im), ELFCHECK_EVADDR);
	}
}

static void test_overlap(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	phdr(&im, PH_TEXT)->p_memsz = 0x1001;	/* runs into the data segment */
	assert_int_equal(check(&im), ELFCHECK_EORDER);
	good_image(&im);
	/* swap text and data: unsorted */
	struct elf64_phdr t = *phdr(&im, PH_TEXT);
	*phdr(&im, PH_TEXT) = *phdr(&im, PH_DATA);
	*phdr(&im, PH_DATA) = t;
	assert_int_equal(check(&im), ELFCHECK_EORDER);
}

static void test_unaligned_start(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	phdr(&im, PH_TEXT)->p_vaddr += 0x10;
	assert_int_equal(check(&im), ELFCHECK_EALIGN);
}

static void test_span_too_big(void **state)
{
	struct image im;
	struct elfcheck_result r;

	(void)state;
	good_image(&im);
	/* data ends exactly 256 MiB after text: the limit, accepted */
	phdr(&im, PH_DATA)->p_vaddr = TEXT_VA + ELFCHECK_SPAN_MAX - 0x3000;
	assert_int_equal(check_len(&im, IMG_LEN, &r), ELFCHECK_OK);
	assert_true(r.span == ELFCHECK_SPAN_MAX);
	/* one byte more is refused */
	phdr(&im, PH_DATA)->p_memsz += 1;
	assert_int_equal(check(&im), ELFCHECK_ESPAN);
	/* a huge bss alone is refused too */
	good_image(&im);
	phdr(&im, PH_DATA)->p_memsz = ELFCHECK_SPAN_MAX;
	assert_int_equal(check(&im), ELFCHECK_ESPAN);
}

static void test_entry_outside_code(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	ehdr(&im)->e_entry = TEXT_VA + 0x1000;	/* data segment: not executable */
	assert_int_equal(check(&im), ELFCHECK_EENTRY);
	ehdr(&im)->e_entry = TEXT_VA + 0x100;	/* one past the text bytes */
	assert_int_equal(check(&im), ELFCHECK_EENTRY);
	ehdr(&im)->e_entry = 0;
	assert_int_equal(check(&im), ELFCHECK_EENTRY);
	good_image(&im);
	phdr(&im, PH_TEXT)->p_memsz = 0x200;	/* entry in zero fill, not code */
	ehdr(&im)->e_entry = TEXT_VA + 0x100;
	assert_int_equal(check(&im), ELFCHECK_EENTRY);
	good_image(&im);
	phdr(&im, PH_TEXT)->p_flags = PF_R;	/* text lost its X bit */
	assert_int_equal(check(&im), ELFCHECK_EENTRY);
}

static void test_no_load(void **state)
{
	struct image im;

	(void)state;
	good_image(&im);
	phdr(&im, PH_TEXT)->p_type = PT_NOTE;
	phdr(&im, PH_DATA)->p_type = PT_NOTE;
	assert_int_equal(check(&im), ELFCHECK_ENOLOAD);
	good_image(&im);
	ehdr(&im)->e_phnum = 0;
	assert_int_equal(check(&im), ELFCHECK_ENOLOAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_span_rounds_up),
		cmocka_unit_test(test_truncated_header),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_elf32),
		cmocka_unit_test(test_big_endian),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_not_exec),
		cmocka_unit_test(test_wrong_machine),
		cmocka_unit_test(test_phentsize),
		cmocka_unit_test(test_phdrs_past_eof),
		cmocka_unit_test(test_filesz_gt_memsz),
		cmocka_unit_test(test_segment_past_eof),
		cmocka_unit_test(test_segment_offset_overflow),
		cmocka_unit_test(test_vaddr_outside_kernel_range),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_unaligned_start),
		cmocka_unit_test(test_span_too_big),
		cmocka_unit_test(test_entry_outside_code),
		cmocka_unit_test(test_no_load),
	};

	return cmocka_run_group_tests_name("elfcheck", tests, NULL, NULL);
}
