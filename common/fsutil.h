/* fsutil: small file-system helpers shared by the daemons. */
#ifndef RINGMASTER_FSUTIL_H
#define RINGMASTER_FSUTIL_H

#include <sys/types.h>

/* mkdir -p: makes path and its missing parents, each new one with mode (an
 * existing directory is fine). Returns 0, or -1 with errno (ENAMETOOLONG for a
 * path of 4096 bytes or more; mkdir's errors). */
int fsutil_mkdir_p(const char *path, mode_t mode);

/* rm -rf: removes path and everything under it, following no symbolic link (a link is
 * removed, not what it names). A path that does not exist is fine. Returns 0, or -1 with
 * errno of the first entry that could not be removed. */
int fsutil_remove_tree(const char *path);

#endif
