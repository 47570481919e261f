/* Fuzz target: the profile loader (common/profile.c), on files written from the input
 * into a private folder. Input: the text of placements.csv, then optionally sections
 * "==> NAME <==\n" (as head(1) prints them) for other files: scalability.csv,
 * validation-<batch>.csv. A loaded profile must meet profile.h's shapes; a refusal must
 * say why. */
#include <dirent.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "profile.h"

static void clear_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
}

static void write_file(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    FUZZ_CHECK(f, "cannot write %s", path);
    fwrite(p, 1, n, f);
    fclose(f);
}

/* A section header "==> NAME <==" at p (len bytes, without its newline): NAME into name. */
static int header(const uint8_t *p, size_t len, char *name, size_t max)
{
    if (len < 9 || memcmp(p, "==> ", 4) || memcmp(p + len - 4, " <==", 4) || len - 8 >= max)
        return 0;
    memcpy(name, p + 4, len - 8);
    name[len - 8] = '\0';
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789.-_") == len - 8 && name[0] != '.';
}

static void write_files(const char *dir, const uint8_t *data, size_t size)
{
    char name[64] = "placements.csv", next[64];
    size_t start = 0, pos = 0;
    while (pos < size) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t end = nl ? (size_t)(nl - data) : size;
        if (header(data + pos, end - pos, next, sizeof(next))) {
            write_file(dir, name, data + start, pos - start);
            snprintf(name, sizeof(name), "%s", next);
            start = end < size ? end + 1 : size;
        }
        pos = end + 1;
    }
    write_file(dir, name, data + start, size - start);
}

static void check_points(const struct profile_points *p)
{
    for (size_t i = 0; i < p->n; i++) {
        FUZZ_CHECK(p->nodes[i] >= 1 && p->w[i] >= p->nodes[i], "row %zu: w %d nodes %d", i,
                   p->w[i], p->nodes[i]);
        FUZZ_CHECK(p->max_per_node[i] >= 1 && p->max_per_node[i] <= p->w[i] &&
                       (long long)p->max_per_node[i] * p->nodes[i] >= p->w[i],
                   "row %zu: max_per_node %d", i, p->max_per_node[i]);
        FUZZ_CHECK(p->local_bsz[i] >= 1, "row %zu: local_bsz", i);
        FUZZ_CHECK(isfinite(p->step_time[i]) && p->step_time[i] > 0, "row %zu: step_time", i);
        FUZZ_CHECK(isfinite(p->sync_time[i]) && p->sync_time[i] >= 0, "row %zu: sync_time", i);
    }
}

static void check_profile(const struct profile *p)
{
    FUZZ_CHECK(p->placements.n > 0, "no placements");
    check_points(&p->placements);
    check_points(&p->scalability);
    for (size_t i = 0; i < p->nvalidations; i++) {
        const struct profile_validation *v = &p->validations[i];
        FUZZ_CHECK(v->global_bsz >= 1, "validation %zu batch %d", i, v->global_bsz);
        FUZZ_CHECK(i == 0 || v->global_bsz >= p->validations[i - 1].global_bsz, "not sorted");
        for (size_t k = 0; k < v->n; k++)
            FUZZ_CHECK(v->progress[k] >= 0 && v->iteration[k] >= 0 && isfinite(v->metric[k]),
                       "validation %zu row %zu", i, k);
    }
    int common = profile_common_local_bsz(p), found = 0;
    for (size_t i = 0; i < p->placements.n; i++)
        found |= p->placements.local_bsz[i] == common;
    FUZZ_CHECK(found, "common local_bsz %d is no row's", common);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[64], err[512] = "";
    snprintf(dir, sizeof(dir), "/tmp/fuzz-profile-%d", (int)getpid());
    mkdir(dir, 0700);
    clear_dir(dir);
    write_files(dir, data, size);
    struct profile *p = profile_load_dir(dir, "fuzz", err, sizeof(err));
    if (p)
        check_profile(p);
    else
        FUZZ_CHECK(err[0], "refused without a message");
    profile_destroy(p);
    clear_dir(dir);
    rmdir(dir);
    return 0;
}
