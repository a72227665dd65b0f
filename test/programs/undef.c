/* A program calling what the SDK does not have. */
#include <bareperf.h>

void nosuch_function(void);
int another_missing(int);

int main(void)
{
	nosuch_function();
	return another_missing(3);
}
