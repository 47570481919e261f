/* The rank wrapper gives each rank its GPU: the worker's own index into RINGMASTER_RANK_GPUS,
 * mapped through the CUDA_VISIBLE_DEVICES the worker was started with. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"

/* Runs the wrapper in a child with the given variables (NULL: unset) and returns what
 * CUDA_VISIBLE_DEVICES the command saw, in out. */
static void rank_sees(const char *rank_gpus, const char *rank, const char *host_gpus, char *out,
                      size_t len)
{
    char path[] = "/tmp/rm-rankexec-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    char script[256];
    snprintf(script, sizeof(script), "printf %%s \"$CUDA_VISIBLE_DEVICES\" > %s", path);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        setenv("RINGMASTER_RANK_GPUS", rank_gpus, 1);
        setenv("OMPI_COMM_WORLD_RANK", rank, 1);
        if (host_gpus)
            setenv("RINGMASTER_HOST_GPUS", host_gpus, 1);
        else
            unsetenv("RINGMASTER_HOST_GPUS");
        char *argv[] = {"ringmaster-worker", "--rank-exec", "--", "/bin/sh", "-c", script, NULL};
        _exit(launch_rank_exec(6, argv));
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(path);
}

Test(rank_exec, gives_each_rank_its_gpu_index)
{
    char seen[64];
    rank_sees("2,3", "1", NULL, seen, sizeof(seen));
    cr_assert_str_eq(seen, "3");
    rank_sees("2,3", "0", NULL, seen, sizeof(seen));
    cr_assert_str_eq(seen, "2");
}

Test(rank_exec, maps_the_index_through_the_workers_own_visible_devices)
{
    char seen[64];
    /* A worker started with CUDA_VISIBLE_DEVICES=4,6,7 numbers those 0,1,2. */
    rank_sees("0,2", "1", "4,6,7", seen, sizeof(seen));
    cr_assert_str_eq(seen, "7");
    rank_sees("1", "0", "GPU-aa,GPU-bb", seen, sizeof(seen));
    cr_assert_str_eq(seen, "GPU-bb");
    /* An index the worker's list does not hold stays as it is. */
    rank_sees("5", "0", "4,6", seen, sizeof(seen));
    cr_assert_str_eq(seen, "5");
}

Test(rank_exec, the_worker_notes_its_devices_for_real_gpus_only)
{
    setenv("CUDA_VISIBLE_DEVICES", "3,1", 1);
    launch_note_host_gpus(0);
    cr_assert_str_eq(getenv("RINGMASTER_HOST_GPUS"), "3,1");
    launch_note_host_gpus(1);
    cr_assert_null(getenv("RINGMASTER_HOST_GPUS"));
    unsetenv("CUDA_VISIBLE_DEVICES");
    launch_note_host_gpus(0);
    cr_assert_null(getenv("RINGMASTER_HOST_GPUS"));
}

/* The worker notes the GPU model it registers; a rank it starts inherits it (train-mlp
 * --speed-by-gpu reads it); no GPU: none. */
Test(rank_exec, a_rank_sees_the_gpu_model_of_its_worker)
{
    char path[] = "/tmp/rm-rankexec-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    launch_note_gpu_model("NVIDIA A100-SXM4-80GB");
    cr_assert_str_eq(getenv("RINGMASTER_GPU_MODEL"), "NVIDIA A100-SXM4-80GB");
    char script[256];
    snprintf(script, sizeof(script), "printf %%s \"$RINGMASTER_GPU_MODEL\" > %s", path);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        setenv("RINGMASTER_RANK_GPUS", "0", 1);
        setenv("OMPI_COMM_WORLD_RANK", "0", 1);
        char *argv[] = {"ringmaster-worker", "--rank-exec", "--", "/bin/sh", "-c", script, NULL};
        _exit(launch_rank_exec(6, argv));
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char seen[64] = "";
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    seen[fread(seen, 1, sizeof(seen) - 1, f)] = '\0';
    fclose(f);
    unlink(path);
    cr_assert_str_eq(seen, "NVIDIA A100-SXM4-80GB");
    launch_note_gpu_model(NULL);
    cr_assert_null(getenv("RINGMASTER_GPU_MODEL"));
    launch_note_gpu_model("t4");
    launch_note_gpu_model("");
    cr_assert_null(getenv("RINGMASTER_GPU_MODEL"));
}
