/* ckptgen: a launch into an empty checkpoint generation restores the newest older one that
 * has files (else the folder before generations), copying whole files, never writing into an
 * older generation. Real folders under /tmp. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckptgen.h"

static char root[64];

static void mk_root(void)
{
    snprintf(root, sizeof(root), "/tmp/rm-ckptgen-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
}

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
        if (unlink(p) < 0)
            rm_tree(p);
    }
    if (d)
        closedir(d);
    rmdir(path);
}

static void rm_root(void)
{
    rm_tree(root);
}

TestSuite(ckptgen, .init = mk_root, .fini = rm_root, .timeout = 10);

/* root/<rel> as a path (static storage, two alternating buffers). */
static const char *at(const char *rel)
{
    static char buf[2][512];
    static int k;
    k ^= 1;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", root, rel);
    return buf[k];
}

static void mkdir_at(const char *rel)
{
    cr_assert_eq(mkdir(at(rel), 0755), 0, "mkdir %s", rel);
}

static void put(const char *rel, const char *text)
{
    FILE *f = fopen(at(rel), "w");
    cr_assert_not_null(f, "%s", rel);
    fputs(text, f);
    fclose(f);
}

/* The content of root/rel ("" when missing; static storage). */
static const char *get(const char *rel)
{
    static char buf[256];
    buf[0] = '\0';
    FILE *f = fopen(at(rel), "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

static int entries(const char *rel)
{
    int n = 0;
    DIR *d = opendir(at(rel));
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

Test(ckptgen, names_the_generation_of_a_folder)
{
    cr_assert_eq(ckptgen_of("/ckpt/job-7/g0"), 0);
    cr_assert_eq(ckptgen_of("/ckpt/job-7/g12/"), 12);
    cr_assert_eq(ckptgen_of("g3"), 3);
    cr_assert_eq(ckptgen_of("/ckpt/job-7/g2147483647"), 2147483647);
    cr_assert_eq(ckptgen_of("/ckpt/job-7/g2147483648"), -1, "past INT_MAX");
    cr_assert_eq(ckptgen_of("/ckpt/job-7"), -1);
    cr_assert_eq(ckptgen_of("/ckpt/job-7/g"), -1);
    cr_assert_eq(ckptgen_of("/ckpt/job-7/g1x"), -1);
    cr_assert_eq(ckptgen_of("/var/worker/checkpoints/42"), -1, "the worker's own default");
}

Test(ckptgen, restores_the_newest_older_generation_with_files)
{
    mkdir_at("job");
    mkdir_at("job/g0");
    mkdir_at("job/g1");
    mkdir_at("job/g3");
    mkdir_at("job/g2");
    mkdir_at("job/g4");
    put("job/g0/model.ckpt", "gen0");
    put("job/g1/model.ckpt", "gen1");
    put("job/g1/optim.ckpt", "adam1");
    put("job/g1/model.ckpt.tmp", "half");
    put("job/g2/only.tmp", "half"); /* a writer's temporary only: no checkpoint */
    put("job/g3/model.ckpt", "gen3, written by a stale copy");
    put("job/model.ckpt", "legacy");
    char err[256] = "";
    int from = 99;
    /* g3 is newer than g2, but g4's launch must not take a generation above itself */
    cr_assert_eq(ckptgen_restore(at("job/g2"), &from, err, sizeof(err)), 2, "%s", err);
    cr_assert_eq(from, 1, "g1: the newest below 2 with files");
    cr_assert_str_eq(get("job/g2/model.ckpt"), "gen1");
    cr_assert_str_eq(get("job/g2/optim.ckpt"), "adam1");
    cr_assert_eq(access(at("job/g2/model.ckpt.tmp"), F_OK), -1, "temporaries are not copied");
    cr_assert_eq(entries("job/g2"), 3, "model, optim and the old only.tmp; no copy temporaries");
    cr_assert_eq(ckptgen_restore(at("job/g4"), &from, err, sizeof(err)), 1, "%s", err);
    cr_assert_eq(from, 3);
    cr_assert_str_eq(get("job/g4/model.ckpt"), "gen3, written by a stale copy");
    /* the older generations are untouched */
    cr_assert_eq(entries("job/g1"), 3);
    cr_assert_str_eq(get("job/g1/model.ckpt"), "gen1");
    cr_assert_str_eq(get("job/g0/model.ckpt"), "gen0");
}

Test(ckptgen, a_generation_with_a_checkpoint_is_left_alone)
{
    mkdir_at("job");
    mkdir_at("job/g0");
    mkdir_at("job/g1");
    put("job/g0/model.ckpt", "gen0");
    put("job/g1/model.ckpt", "gen1, its own");
    char err[256] = "";
    int from = 99;
    cr_assert_eq(ckptgen_restore(at("job/g1"), &from, err, sizeof(err)), 0);
    cr_assert_eq(from, 99, "nothing copied");
    cr_assert_str_eq(get("job/g1/model.ckpt"), "gen1, its own");
    cr_assert_eq(ckptgen_restore(at("job/g0"), &from, err, sizeof(err)), 0);
}

Test(ckptgen, falls_back_to_the_folder_before_generations)
{
    mkdir_at("job-5");
    mkdir_at("job-5/g0");
    mkdir_at("job-5/g1");
    put("job-5/train.ckpt", "legacy");
    char err[256] = "";
    int from = 99;
    cr_assert_eq(ckptgen_restore(at("job-5/g1/"), &from, err, sizeof(err)), 1, "%s", err);
    cr_assert_eq(from, -1, "the parent: generation -1");
    cr_assert_str_eq(get("job-5/g1/train.ckpt"), "legacy");
    cr_assert_eq(entries("job-5/g0"), 0, "g0, empty and older, untouched");
}

Test(ckptgen, nothing_to_restore_is_no_error)
{
    mkdir_at("fresh");
    mkdir_at("fresh/g0");
    mkdir_at("plain");
    char err[256] = "";
    int from = 99;
    cr_assert_eq(ckptgen_restore(at("fresh/g0"), &from, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(entries("fresh/g0"), 0);
    put("model.ckpt", "not this job's"); /* above a folder that is no generation */
    cr_assert_eq(ckptgen_restore(at("plain"), &from, err, sizeof(err)), 0);
    cr_assert_eq(entries("plain"), 0, "no generation folder: nothing done");
    cr_assert_eq(from, 99);
}

Test(ckptgen, skips_what_is_no_file_and_fails_with_text)
{
    mkdir_at("job");
    mkdir_at("job/g0");
    mkdir_at("job/g0/sub");
    mkdir_at("job/g1");
    cr_assert_eq(symlink(at("job/nowhere"), at("job/g0/dangling.ckpt")), 0);
    put("job/g0/ok.ckpt", "x");
    char err[256] = "";
    int from = 99;
    /* a dangling link and a folder are no checkpoint files: only ok.ckpt is copied */
    cr_assert_eq(ckptgen_restore(at("job/g1"), &from, err, sizeof(err)), 1, "%s", err);
    cr_assert_eq(from, 0);
    cr_assert_eq(entries("job/g1"), 1);
    /* a generation folder that does not exist cannot be filled: an error naming the file */
    cr_assert_eq(ckptgen_restore(at("job/g2"), &from, err, sizeof(err)), -1);
    cr_assert(strstr(err, "job/g2/") && strstr(err, ".ckptgen.tmp"), "%s", err);
}
