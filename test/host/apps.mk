# test/host/apps.mk — host tests of apps/ code built as it is:
#   test_program_elf   a program's object checked, laid out and linked
#                      (apps/program_elf.c), and refused when damaged at
#                      random; the object is test/programs/hello.c built
#                      with the SDK's flags (include/bareperf.h)

SDK_CFLAGS := -std=gnu11 -O2 -g -ffreestanding -fno-pic -fno-pie -mcmodel=kernel \
	-mno-red-zone -fno-stack-protector -fno-omit-frame-pointer \
	-fno-asynchronous-unwind-tables -msse2 -Iinclude

HOST_TESTS += $(BUILD)/host/program_elf

$(BUILD)/host/programs/hello.o: test/programs/hello.c include/bareperf.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(KCC) $(SDK_CFLAGS) -c $< -o $@.c.o && ld -r --build-id=sha1 $@.c.o -o $@

$(BUILD)/host/test_program_elf: $(BUILD)/h/test/host/test_program_elf.o \
		$(BUILD)/h/apps/program_elf.o $(KLIB_HOST)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

$(BUILD)/host/program_elf: $(BUILD)/host/test_program_elf $(BUILD)/host/programs/hello.o
	$(call gen_script,$(BUILD)/host/test_program_elf $(BUILD)/host/programs/hello.o)
