/* The fault file a simulated GPU's faults come from (worker/daemon/gpuhealth.h): the forms, the
 * last line of a GPU winning, bad lines skipped and named, and the report's body. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuhealth.h"

static struct inventory four(void)
{
    struct inventory inv = {.ngpus = 4, .simulated = 1};
    for (int k = 0; k < 4; k++)
        inv.gpus[k].index = k;
    return inv;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

Test(health, the_fault_file_gives_each_gpu_its_last_state)
{
    char path[] = "/tmp/rm-health-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    write_file(path, "# injected\n"
                     "gpu 2 xid 79\n"
                     "gpu 1 ecc double-bit errors\n"
                     "\n"
                     "gpu 3 lost\n"
                     "gpu 3 ok\n"
                     "gpu 9 xid 1\n"
                     "gpu 0 melted\n");
    struct inventory inv = four();
    char faults[INVENTORY_MAX_GPUS][HEALTH_FAULT_MAX], bad[256];
    cr_assert_eq(health_read(path, &inv, faults, bad, sizeof(bad)), 0);
    cr_expect_str_eq(faults[0], "");
    cr_expect_str_eq(faults[1], "ecc: double-bit errors");
    cr_expect_str_eq(faults[2], "xid 79");
    cr_expect_str_eq(faults[3], "", "cleared by its last line");
    cr_expect_str_eq(bad, "gpu 9 xid 1", "the first bad line (no GPU 9) is named");

    json_t *body = health_json(&inv, faults);
    json_t *gpus = json_object_get(body, "gpus");
    cr_assert_eq(json_array_size(gpus), 2, "the GPUs with a fault only");
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(gpus, 0), "index")), 1);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(gpus, 1), "fault")),
                     "xid 79");
    json_decref(body);

    unlink(path);
    cr_assert_eq(health_read(path, &inv, faults, bad, sizeof(bad)), 0, "no file: no fault");
    for (int k = 0; k < 4; k++)
        cr_expect_str_eq(faults[k], "");
}
