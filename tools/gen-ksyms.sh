#!/bin/sh
# Turn `nm -n` output (stdin) into the kernel's backtrace symbol table.
# Only text symbols are kept; the table is sorted by address as nm -n gives it.
awk '
BEGIN { n = 0 }
$2 ~ /^[TtWw]$/ && $3 !~ /^\.L/ { addr[n] = $1; name[n] = $3; n++ }
END {
	print "\t.section .note.GNU-stack,\"\",@progbits"
	print "\t.section .ksyms,\"a\""
	print "\t.balign 8"
	print "\t.globl ksyms_count, ksyms_addr, ksyms_name_off, ksyms_names"
	print "ksyms_count:\t.quad " n
	print "ksyms_addr:"
	for (i = 0; i < n; i++) print "\t.quad 0x" addr[i]
	print "ksyms_name_off:"
	off = 0
	for (i = 0; i < n; i++) { print "\t.long " off; off += length(name[i]) + 1 }
	print "ksyms_names:"
	for (i = 0; i < n; i++) print "\t.asciz \"" name[i] "\""
}'
