/* ckptgen: a job's checkpoint generations g<k> on the worker's side: a new generation's
 * folder restored from the newest older one's checkpoint (see ckptgen.h). */
#include "ckptgen.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_SUFFIX ".ckptgen.tmp"

/* The last component of path (trailing slashes ignored) as [*start, *start + *len). */
static void last_component(const char *path, const char **start, size_t *len)
{
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/')
        end--;
    size_t b = end;
    while (b > 0 && path[b - 1] != '/')
        b--;
    *start = path + b;
    *len = end - b;
}

/* k when name[0..len) is g<k> (digits only, k <= INT_MAX), else -1. */
static int gen_of_name(const char *name, size_t len)
{
    if (len < 2 || len > 11 || name[0] != 'g')
        return -1;
    long long k = 0;
    for (size_t i = 1; i < len; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        k = k * 10 + (name[i] - '0');
    }
    return k <= INT_MAX ? (int)k : -1;
}

int ckptgen_of(const char *dir)
{
    const char *s;
    size_t len;
    last_component(dir, &s, &len);
    return gen_of_name(s, len);
}

/* The folder holding dir ("." when dir has no slash) into buf. Returns 0 or -1 (too long). */
static int parent_of(const char *dir, char *buf, size_t len)
{
    const char *s;
    size_t n;
    last_component(dir, &s, &n);
    size_t plen = (size_t)(s - dir);
    while (plen > 1 && dir[plen - 1] == '/')
        plen--;
    if (plen == 0)
        return snprintf(buf, len, ".") < (int)len ? 0 : -1;
    return snprintf(buf, len, "%.*s", (int)plen, dir) < (int)len ? 0 : -1;
}

/* 1 when name (in the open folder dfd) is a checkpoint file: regular, not "*.tmp". */
static int is_ckpt_file(int dfd, const char *name)
{
    size_t n = strlen(name);
    struct stat st;
    if (name[0] == '.' && (n == 1 || (n == 2 && name[1] == '.')))
        return 0;
    if (n >= 4 && !strcmp(name + n - 4, ".tmp"))
        return 0;
    return fstatat(dfd, name, &st, 0) == 0 && S_ISREG(st.st_mode);
}

/* The checkpoint files of folder path: 0 when it does not exist, -1 with errno. */
static int count_files(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += is_ckpt_file(dirfd(d), e->d_name);
    closedir(d);
    return n;
}

static int by_gen_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

/* The generations below gen present in parent, highest first, into *out (malloc'd, *n of
 * them; NULL when none). Returns 0, or -1 with errno. */
static int older_gens(const char *parent, int gen, int **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(parent);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    size_t cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        int k = gen_of_name(e->d_name, strlen(e->d_name));
        if (k < 0 || k >= gen)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            int *v = realloc(*out, cap * sizeof(*v));
            if (!v) {
                closedir(d);
                free(*out);
                *out = NULL;
                return -1;
            }
            *out = v;
        }
        (*out)[(*n)++] = k;
    }
    closedir(d);
    if (*n > 1)
        qsort(*out, *n, sizeof(**out), by_gen_desc);
    return 0;
}

/* Copies every byte of fd in to fd out and syncs out. Returns 0, or -1 with errno. */
static int copy_bytes(int in, int out)
{
    char buf[65536];
    for (;;) {
        ssize_t r = read(in, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -1 : fsync(out);
        for (ssize_t w = 0; w < r;) {
            ssize_t k = write(out, buf + w, (size_t)(r - w));
            if (k < 0 && errno != EINTR)
                return -1;
            w += k > 0 ? k : 0;
        }
    }
}

/* Copies src/name to dst/name through dst/name.ckptgen.tmp. Returns 1, 0 when src/name is
 * gone (a writer removed an old file meanwhile), or -1 with err. */
static int copy_file(const char *src, const char *dst, const char *name, char *err, size_t errlen)
{
    char from[PATH_MAX], to[PATH_MAX], tmp[PATH_MAX];
    if (snprintf(from, sizeof(from), "%s/%s", src, name) >= (int)sizeof(from) ||
        snprintf(to, sizeof(to), "%s/%s", dst, name) >= (int)sizeof(to) ||
        snprintf(tmp, sizeof(tmp), "%s%s", to, TMP_SUFFIX) >= (int)sizeof(tmp)) {
        snprintf(err, errlen, "%.200s/%.200s: path too long", src, name);
        return -1;
    }
    int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
    if (in < 0 && errno == ENOENT)
        return 0;
    struct stat st;
    const char *failed = from;
    if (in >= 0 && fstat(in, &st) == 0) {
        failed = tmp;
        out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 0777);
        if (out >= 0 && copy_bytes(in, out) == 0) {
            failed = to;
            rc = close(out) == 0 && rename(tmp, to) == 0 ? 1 : -1;
            out = -1;
        }
    }
    int e = errno;
    if (out >= 0)
        close(out);
    if (in >= 0)
        close(in);
    if (rc < 0) {
        unlink(tmp);
        snprintf(err, errlen, "copying %.1000s: %s", failed, strerror(e));
    }
    return rc;
}

/* Copies the checkpoint files of src into dst. Returns how many, or -1 with err. */
static int copy_all(const char *src, const char *dst, char *err, size_t errlen)
{
    DIR *d = opendir(src);
    if (!d) {
        snprintf(err, errlen, "%.1000s: %s", src, strerror(errno));
        return -1;
    }
    int n = 0;
    for (struct dirent *e; n >= 0 && (e = readdir(d));) {
        int c = is_ckpt_file(dirfd(d), e->d_name) ? copy_file(src, dst, e->d_name, err, errlen) : 0;
        n = c < 0 ? -1 : n + c;
    }
    closedir(d);
    int dfd = n > 0 ? open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        fsync(dfd); /* the renames outlive a crash */
        close(dfd);
    }
    return n;
}

/* Copies the newest older generation with files (or the parent's own) into dir. */
static int restore_from_older(const char *dir, const char *parent, int gen, int *from, char *err,
                              size_t errlen)
{
    int *gens;
    size_t ngens;
    if (older_gens(parent, gen, &gens, &ngens) < 0) {
        snprintf(err, errlen, "%.1000s: %s", parent, strerror(errno));
        return -1;
    }
    char src[PATH_MAX + 16];
    int rc = 0;
    for (size_t i = 0; i <= ngens && rc == 0; i++) {
        int k = i < ngens ? gens[i] : -1;
        if (k >= 0)
            snprintf(src, sizeof(src), "%.4000s/g%d", parent, k);
        else
            snprintf(src, sizeof(src), "%.4000s", parent);
        int c = count_files(src);
        if (c < 0) {
            snprintf(err, errlen, "%.1000s: %s", src, strerror(errno));
            rc = -1;
        } else if (c > 0) {
            rc = copy_all(src, dir, err, errlen);
            *from = k;
        }
    }
    free(gens);
    return rc;
}

int ckptgen_restore(const char *dir, int *from, char *err, size_t errlen)
{
    char parent[PATH_MAX];
    int gen = ckptgen_of(dir);
    if (gen < 0)
        return 0;
    int have = count_files(dir);
    if (have < 0) {
        snprintf(err, errlen, "%.1000s: %s", dir, strerror(errno));
        return -1;
    }
    if (have > 0)
        return 0;
    if (parent_of(dir, parent, sizeof(parent)) < 0) {
        snprintf(err, errlen, "%.200s: path too long", dir);
        return -1;
    }
    return restore_from_older(dir, parent, gen, from, err, errlen);
}
