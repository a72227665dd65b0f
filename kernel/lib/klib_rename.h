/*
 * klib_rename.h — lets the host tests link the kernel's string functions
 * next to the host libc: included before kernel/lib/string.h when
 * KLIB_HOST_TEST is set, it renames them k_memcpy etc. Function-like
 * macros, so a test can still reach libc's as (memcpy)(...).
 */
#define memcpy(...)	k_memcpy(__VA_ARGS__)
#define memmove(...)	k_memmove(__VA_ARGS__)
#define memset(...)	k_memset(__VA_ARGS__)
#define memcmp(...)	k_memcmp(__VA_ARGS__)
#define strlen(...)	k_strlen(__VA_ARGS__)
#define strnlen(...)	k_strnlen(__VA_ARGS__)
#define strcmp(...)	k_strcmp(__VA_ARGS__)
#define strncmp(...)	k_strncmp(__VA_ARGS__)
#define strchr(...)	k_strchr(__VA_ARGS__)
#define strlcpy(...)	k_strlcpy(__VA_ARGS__)
