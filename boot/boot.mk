# boot/ build fragment (included by the top-level Makefile).
#
#   esp     build/esp/EFI/BOOT/BOOTX64.EFI + build/esp/kernel.elf, the tree
#           QEMU boots as -drive format=raw,file=fat:rw:build/esp
#   image   build/bareperf.img: GPT + one EFI System Partition (FAT32) with
#           the same files and a commented bareperf.cfg; dd it to a USB stick.
#           make image SIGN_KEY=db.key SIGN_CERT=db.crt signs the loader with
#           sbsign (Debian sbsigntool) for a machine with Secure Boot on whose
#           db holds that certificate.
#
# The loader is a GNU-EFI application: an ELF shared object linked with
# gnu-efi's crt0 and script, then turned into a PE32+ image by objcopy.
# It is built with the kernel toolchain ($(KCC), CROSS_COMPILE applies)
# from gnu-efi's headers and libraries (Debian package gnu-efi).

EFI_INC ?= /usr/include/efi
EFI_LIB ?= /usr/lib

# gnu-efi's headers are -isystem so that $(WARN) applies to our code only.
EFI_CFLAGS := -std=gnu11 -O2 -g -ffreestanding -fpic -fshort-wchar -mno-red-zone \
	-fno-stack-protector -fno-strict-aliasing -fcf-protection=none \
	-fno-asynchronous-unwind-tables -DEFI_FUNCTION_WRAPPER \
	-nostdinc -isystem $(shell $(KCC) -print-file-name=include) \
	-isystem $(EFI_INC) -isystem $(EFI_INC)/x86_64 \
	-Iinclude -I. $(WARN) -MMD -MP

BOOT_OBJS := $(BUILD)/boot/loader.o $(BUILD)/boot/elfcheck.o $(BUILD)/boot/idmap.o

$(BOOT_OBJS): Makefile boot/boot.mk

$(BUILD)/boot/%.o: boot/%.c
	@mkdir -p $(@D)
	$(call say,EFICC,$<)
	$(Q)$(KCC) $(EFI_CFLAGS) -c $< -o $@

# gnu-efi's self-relocation (crt0's _relocate) only handles R_X86_64_RELATIVE:
# refuse a loader that needs anything else, and any undefined symbol.
$(BUILD)/boot/loader.so: $(BOOT_OBJS)
	$(call say,EFILD,$@)
	$(Q)$(KLD) -nostdlib -znocombreloc -shared -Bsymbolic --no-undefined \
		-T $(EFI_LIB)/elf_x86_64_efi.lds $(EFI_LIB)/crt0-efi-x86_64.o $(BOOT_OBJS) \
		-L$(EFI_LIB) -lefi -lgnuefi -o $@
	$(Q)if $(KOBJDUMP) -R $@ | grep R_X86_64_ | grep -v R_X86_64_RELATIVE; then \
		echo "$@: relocations gnu-efi cannot apply" >&2; rm -f $@; exit 1; fi

$(BUILD)/boot/BOOTX64.EFI: $(BUILD)/boot/loader.so
	$(call say,OBJCOPY,$@)
	$(Q)$(KOBJCOPY) -j .text -j .sdata -j .data -j .dynamic -j .dynsym -j .rel \
		-j .rela -j '.rel.*' -j '.rela.*' -j .reloc --target efi-app-x86_64 $< $@

ESP := $(BUILD)/esp

$(ESP)/EFI/BOOT/BOOTX64.EFI: $(BUILD)/boot/BOOTX64.EFI
	@mkdir -p $(@D)
	$(Q)cp $< $@

$(ESP)/kernel.elf: $(BUILD)/kernel.elf
	@mkdir -p $(@D)
	$(Q)cp $< $@

esp: $(ESP)/EFI/BOOT/BOOTX64.EFI $(ESP)/kernel.elf

# The image: 64 MiB; the partition starts at 1 MiB (LBA 2048, hence
# mkfs.fat -h 2048 hidden sectors) and is 62 MiB long, leaving the last
# 1 MiB for the backup GPT. FAT32 needs >= 65525 clusters: 512-byte
# clusters give ~125000. The file system is made in a separate file and
# copied into place; the image appears only when complete. mkfs.fat and
# sgdisk live in /usr/sbin, which is not on a normal user's PATH on Debian.
IMG     := $(BUILD)/bareperf.img
IMG_MIB := 64
IMG_FAT := $(BUILD)/boot/esp.fat
SIGN_KEY  ?=
SIGN_CERT ?=
# The loader that goes into the image: signed when a key is given (UEFI
# 2.10 32.2: Secure Boot verifies the image's Authenticode signature
# against db). sbsign warns about gaps between PE/COFF sections in
# gnu-efi's objcopy'd image: they are padding outside every section, and
# the signature covers the image as PE/COFF hashing defines it. The
# firmware checks only BOOTX64.EFI; kernel.elf is read
# by the loader as a file and is not verified.
IMG_LOADER := $(if $(SIGN_KEY),$(BUILD)/boot/BOOTX64.signed.EFI,$(ESP)/EFI/BOOT/BOOTX64.EFI)

image: $(IMG)

$(IMG): export PATH := $(PATH):/usr/sbin:/sbin

$(BUILD)/boot/BOOTX64.signed.EFI: $(BUILD)/boot/BOOTX64.EFI FORCE
	$(call say,SBSIGN,$@)
	$(Q)[ -n "$(SIGN_CERT)" ] || { echo "make image: SIGN_KEY needs SIGN_CERT too" >&2; exit 1; }
	$(Q)command -v sbsign > /dev/null || \
		{ echo "make image SIGN_KEY=... needs sbsign: apt-get install sbsigntool" >&2; exit 1; }
	$(Q)sbsign --key $(SIGN_KEY) --cert $(SIGN_CERT) --output $@.tmp $< 2>&1 | \
		grep -v -e '^Signing Unsigned original image$$' -e 'gaps between PE/COFF sections' >&2; \
		[ -s $@.tmp ] && mv $@.tmp $@
	$(Q)sbverify --cert $(SIGN_CERT) $@ 2>&1 | grep -q '^Signature verification OK$$' || \
		{ echo "make image: sbverify does not accept $@" >&2; rm -f $@; exit 1; }

FORCE:
.PHONY: FORCE

$(IMG): $(IMG_LOADER) $(ESP)/kernel.elf boot/bareperf.cfg.example boot/boot.mk $(if $(SIGN_KEY),FORCE)
	$(call say,IMAGE,$@)
	$(Q)command -v sgdisk > /dev/null || \
		{ echo "make image needs sgdisk: apt-get install gdisk" >&2; exit 1; }
	$(Q)rm -f $@ $@.tmp $(IMG_FAT)
	$(Q)mkfs.fat -F 32 -s 1 -h 2048 -n BAREPERF \
		-C $(IMG_FAT) $$(( ($(IMG_MIB) - 2) * 1024 )) > /dev/null
	$(Q)mmd -i $(IMG_FAT) ::/EFI ::/EFI/BOOT
	$(Q)mcopy -i $(IMG_FAT) $(IMG_LOADER) ::/EFI/BOOT/BOOTX64.EFI
	$(Q)mcopy -i $(IMG_FAT) $(ESP)/kernel.elf ::/kernel.elf
	$(Q)mcopy -i $(IMG_FAT) boot/bareperf.cfg.example ::/bareperf.cfg
	$(Q)truncate -s $(IMG_MIB)M $@.tmp
	$(Q)sgdisk --clear --new=1:2048:+$$(( $(IMG_MIB) - 2 ))MiB --typecode=1:ef00 \
		--change-name=1:"EFI system partition" $@.tmp > /dev/null
	$(Q)dd if=$(IMG_FAT) of=$@.tmp bs=1M seek=1 conv=notrunc status=none
	$(Q)rm -f $(IMG_FAT)
	$(Q)mv $@.tmp $@

# Host unit test of the ELF checks (the same elfcheck.c as in the loader).
HOST_TESTS += $(BUILD)/host/test_elfcheck

$(BUILD)/host/test_elfcheck: $(BUILD)/h/test/host/test_elfcheck.o $(BUILD)/h/boot/elfcheck.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# Host unit test of the identity map (the same idmap.c as in the loader).
HOST_TESTS += $(BUILD)/host/test_idmap

$(BUILD)/host/test_idmap: $(BUILD)/h/test/host/test_idmap.o $(BUILD)/h/boot/idmap.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@
