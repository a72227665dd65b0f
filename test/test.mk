# test/ build fragment: guest test apps, host unit tests, the runner.
APP_C += test/guest/report.c test/guest/test_boot.c test/guest/test_fault.c
