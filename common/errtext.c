/* errtext: errtext_set(), the printf into a caller's "char *err, size_t errlen" buffer. */
#include "errtext.h"

#include <stdarg.h>
#include <stdio.h>

void errtext_set(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
