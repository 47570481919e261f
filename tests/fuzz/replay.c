/* The fuzz corpora replayed as a Criterion test: one test per target, which feeds every
 * file of tests/fuzz/corpus/<target>/ to the target's LLVMFuzzerTestOneInput() (compiled
 * here under the name fuzz_<target>_one). A broken invariant aborts: the test crashes.
 * FUZZ_REPLAY_VERBOSE=1 names each file as it goes. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef FUZZ_CORPUS_DIR
#define FUZZ_CORPUS_DIR "tests/fuzz/corpus"
#endif

typedef int (*fuzz_one_f)(const uint8_t *data, size_t size);

#define FUZZ_DECLARE(name) int fuzz_##name##_one(const uint8_t *data, size_t size);
FUZZ_DECLARE(jobspec)
FUZZ_DECLARE(nodespec)
FUZZ_DECLARE(fieldcheck)
FUZZ_DECLARE(decide)
FUZZ_DECLARE(trace)
FUZZ_DECLARE(jobchan)
FUZZ_DECLARE(ringjob)
FUZZ_DECLARE(profile)

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    size_t cap = 4096, n = 0, k;
    uint8_t *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    cr_assert(buf, "out of memory reading %s", path);
    *len = n;
    return buf;
}

static int visible(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

/* Feeds every file of corpus/<name>/ to one; returns how many. */
static int replay(const char *name, fuzz_one_f one)
{
    char dir[4096], path[8192];
    struct dirent **list;
    snprintf(dir, sizeof(dir), "%s/%s", FUZZ_CORPUS_DIR, name);
    int n = scandir(dir, &list, visible, alphasort);
    cr_assert(n > 0, "no corpus in %s", dir);
    int verbose = getenv("FUZZ_REPLAY_VERBOSE") != NULL;
    for (int i = 0; i < n; i++) {
        size_t len;
        snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
        if (verbose)
            fprintf(stderr, "replay %s\n", path);
        uint8_t *data = slurp(path, &len);
        one(data, len);
        free(data);
        free(list[i]);
    }
    free(list);
    return n;
}

#define FUZZ_REPLAY(name)                                                                    \
    Test(fuzz_replay, name, .timeout = 120)                                                   \
    {                                                                                        \
        cr_assert(replay(#name, fuzz_##name##_one) > 0);                                     \
    }

FUZZ_REPLAY(jobspec)
FUZZ_REPLAY(nodespec)
FUZZ_REPLAY(fieldcheck)
FUZZ_REPLAY(decide)
FUZZ_REPLAY(trace)
FUZZ_REPLAY(jobchan)
FUZZ_REPLAY(ringjob)
FUZZ_REPLAY(profile)
