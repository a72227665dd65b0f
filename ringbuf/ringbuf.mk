# ringbuf/ build fragment (included by the top-level Makefile).
