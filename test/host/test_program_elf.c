/*
 * test_program_elf.c — host tests for apps/program_elf.c, the checks a
 * program's object goes through before anything of it is placed.
 *
 * The object is a real one: test/programs/hello.c built with the SDK's
 * flags and `ld -r` (test/host/apps.mk passes its path). It is parsed,
 * laid out and linked into memory mapped at a low fixed address (the
 * relocations of -mcmodel=kernel hold 32-bit addresses); then copies of it,
 * each in a heap buffer of exactly its length (ASan sees any read past
 * it), are damaged at random and cut short, thousands of times: each must
 * be refused with a message or linked inside the memory it laid out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "apps/program_elf.h"

#define AREA		((void *)0x20000000ul)
#define AREA_SIZE	(16ul << 20)
#define FUZZ_ROUNDS	20000

static const char *object_path;
static u8 *object;
static size_t object_len;
static u8 *area;

/* Every exported name resolves to the area's last page. */
static u64 resolve(const char *name)
{
	return strncmp(name, "nosuch", 6) ? (u64)area + AREA_SIZE - 4096 : 0;
}

/* Parse, lay out and link buf; 0 or -1 with err. Placed inside the area
 * when it fits, else refused as too large. */
static int load(const u8 *buf, size_t len, char *err, size_t n)
{
	struct elf_obj o;
	u64 size[ELF_CLASSES], base[ELF_CLASSES];

	if (elf_parse(&o, buf, len, err, n))
		return -1;
	u64 *addr = calloc(o.shnum + o.nsym + 1, sizeof(u64)), *val = addr + o.shnum;
	int e = elf_layout(&o, addr, val, size, err, n);
	if (!e && size[0] + size[1] + size[2] + 3 * 4096 > AREA_SIZE - 4096) {
		snprintf(err, n, "too large");
		e = -1;
	}
	if (!e) {
		base[0] = (u64)area;
		base[1] = (base[0] + size[0] + 4095) & ~4095ul;
		base[2] = (base[1] + size[1] + 4095) & ~4095ul;
		elf_place(&o, base, addr);
		e = elf_link(&o, base, addr, val, resolve, err, n);
	}
	free(addr);
	return e;
}

static void test_good_object(void **state)
{
	char err[ELF_ERR_MAX] = "";
	struct elf_obj o;
	u8 id[20];

	(void)state;
	assert_int_equal(load(object, object_len, err, sizeof(err)), 0);
	assert_int_equal(elf_parse(&o, object, object_len, err, sizeof(err)), 0);
	assert_int_not_equal(elf_find_global(&o, "main"), 0);
	assert_int_equal(elf_sdk_version(&o), 1);
	assert_int_equal(elf_build_id(&o, id, sizeof(id)), 20);
}

static int refused(const u8 *bytes, size_t len, char *err, size_t n)
{
	u8 *copy = malloc(len ? len : 1);

	memcpy(copy, bytes, len);
	int e = load(copy, len, err, n);
	free(copy);
	return e;
}

static void test_header_refusals(void **state)
{
	char err[ELF_ERR_MAX];
	u8 *bad = malloc(object_len);

	(void)state;
	assert_int_equal(refused((const u8 *)"hello", 5, err, sizeof(err)), -1);
	assert_string_equal(err, "not an ELF object");
	memcpy(bad, object, object_len);
	bad[0x12] = 3;				/* e_machine: EM_386 */
	assert_int_equal(refused(bad, object_len, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "ELF machine 3"));
	memcpy(bad, object, object_len);
	bad[0x10] = 2;				/* e_type: ET_EXEC, not ET_REL */
	assert_int_equal(refused(bad, object_len, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a relocatable object"));
	assert_int_equal(refused(object, object_len / 2, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "truncated?"));
	free(bad);
}

/* Random damage: a few bytes changed, or the object cut short. */
static void test_fuzz(void **state)
{
	char err[ELF_ERR_MAX];
	u8 *bad = malloc(object_len);
	unsigned accepted = 0, seed = 12345;

	(void)state;
	for (int round = 0; round < FUZZ_ROUNDS; round++) {
		size_t len = object_len;
		memcpy(bad, object, object_len);
		int changes = 1 + rand_r(&seed) % 8;
		for (int i = 0; i < changes; i++)
			bad[rand_r(&seed) % object_len] = rand_r(&seed);
		if (rand_r(&seed) % 4 == 0)
			len = rand_r(&seed) % object_len;
		err[0] = 0;
		if (!refused(bad, len, err, sizeof(err)))
			accepted++;
		else
			assert_true(err[0] != 0);
	}
	printf("# %u of %d damaged objects still linked\n", accepted, FUZZ_ROUNDS);
	free(bad);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_object),
		cmocka_unit_test(test_header_refusals),
		cmocka_unit_test(test_fuzz),
	};

	object_path = argc > 1 ? argv[1] : "build/host/programs/hello.o";
	FILE *f = fopen(object_path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", object_path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	object_len = ftell(f);
	rewind(f);
	object = malloc(object_len);
	if (fread(object, 1, object_len, f) != object_len)
		return 1;
	fclose(f);
	area = mmap(AREA, AREA_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (area != AREA) {
		fprintf(stderr, "cannot map the link area at %p\n", AREA);
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
