/* fsutil: fsutil_mkdir_p(), mkdir -p for the daemons' state and checkpoint folders. */
#include "fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

int fsutil_mkdir_p(const char *path, mode_t mode)
{
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, mode) < 0 && errno != EEXIST ? -1 : 0;
}
