/* A program built for an SDK newer than the kernel's. */
#include <bareperf.h>

static const uint32_t future_sdk __attribute__((used, section(".bareperf.sdk"))) = 99;

int main(void)
{
	return 0;
}
