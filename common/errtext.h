/* errtext: the "char *err, size_t errlen" convention of common/: a failing call
 * writes what went wrong for a person into the caller's buffer. */
#ifndef RINGMASTER_ERRTEXT_H
#define RINGMASTER_ERRTEXT_H

#include <stddef.h>

/* Formats into err (at most errlen bytes, always terminated); NULL or an empty
 * buffer is ignored. */
void errtext_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
