/* A program of about 100 KB of object, for the load time. */
#include <bareperf.h>

static const unsigned char blob[100 * 1024] = { 1, 2, 3 };

int main(int argc, char **argv)
{
	(void)argv;
	return blob[argc];
}
