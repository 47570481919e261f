/* fsutil: mkdir -p and rm -rf on a temporary tree; rm -rf removes a symbolic link, never what
 * it names. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

Test(fsutil, mkdir_p_then_remove_tree)
{
    char root[] = "/tmp/rm-fsutil-XXXXXX", outside[] = "/tmp/rm-fsutil-out-XXXXXX";
    cr_assert_not_null(mkdtemp(root));
    cr_assert_not_null(mkdtemp(outside));
    char deep[256], file[300], link[300], kept[300];
    snprintf(deep, sizeof(deep), "%s/a/b/c", root);
    cr_assert_eq(fsutil_mkdir_p(deep, 0700), 0);
    cr_assert_eq(fsutil_mkdir_p(deep, 0700), 0, "an existing folder is fine");
    snprintf(file, sizeof(file), "%s/f", deep);
    close(open(file, O_WRONLY | O_CREAT, 0600));
    snprintf(kept, sizeof(kept), "%s/kept", outside);
    close(open(kept, O_WRONLY | O_CREAT, 0600));
    snprintf(link, sizeof(link), "%s/a/out", root);
    cr_assert_eq(symlink(outside, link), 0);

    cr_assert_eq(fsutil_remove_tree(root), 0);
    cr_assert(!exists(root), "the tree is gone");
    cr_assert(exists(kept), "what a link in it named is not touched");
    cr_assert_eq(fsutil_remove_tree(root), 0, "a path that does not exist is fine");
    cr_assert_eq(fsutil_remove_tree(outside), 0);
    cr_assert(!exists(outside));
}
