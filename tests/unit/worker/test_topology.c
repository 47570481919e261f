/* topology: --simulate-topology AxB parsed and checked against the GPUs; GPUs grouped by a
 * link relation as NVML's pairs are; the NVML path skipped cleanly where there is none. */
#include <criterion/criterion.h>
#include <string.h>

#include "inventory.h"
#include "topology.h"

Test(topology, two_islands_of_four)
{
    int island[8];
    char err[160];
    cr_assert_eq(topology_parse("2x4", 8, island, err, sizeof(err)), 0);
    for (int g = 0; g < 8; g++)
        cr_assert_eq(island[g], g / 4, "GPU %d", g);
    cr_assert_eq(topology_parse("8x1", 8, island, err, sizeof(err)), 0);
    cr_assert_eq(island[7], 7);
}

Test(topology, bad_specs_are_refused_with_a_reason)
{
    int island[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    char err[160];
    cr_assert_eq(topology_parse("2x4", 6, island, err, sizeof(err)), -1);
    cr_assert(strstr(err, "8 GPUs, but --simulate-gpus is 6"), "%s", err);
    static const char *const bad[] = {"", "2", "x4", "2x", "2x4x", "0x8", "2x-4", "2*4", "a x b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(topology_parse(bad[i], 8, island, err, sizeof(err)), -1, "'%s'", bad[i]);
        cr_assert(strstr(err, "expected AxB"), "'%s': %s", bad[i], err);
    }
    cr_assert_eq(island[0], 9, "a refused spec changes nothing");
}

/* NVLink pairs of a DGX-like host split in two halves, with GPU 5 on its own. */
static int halves(void *ctx, int a, int b)
{
    (void)ctx;
    if (a == 5 || b == 5)
        return 0;
    return (a < 4) == (b < 4) && (a + 1 == b || b + 1 == a);
}

Test(topology, groups_follow_chains_of_links)
{
    int group[8];
    topology_group(8, halves, NULL, group);
    int want[8] = {0, 0, 0, 0, 1, 2, 3, 3};
    for (int g = 0; g < 8; g++)
        cr_assert_eq(group[g], want[g], "GPU %d: %d", g, group[g]);
}

Test(topology, simulated_topology_is_reported_per_gpu)
{
    struct inventory inv;
    char err[160];
    inventory_probe(&inv, 4);
    json_t *j = inventory_json(&inv, "h");
    cr_assert_null(json_object_get(json_array_get(json_object_get(j, "gpus"), 0), "island"),
                   "unknown: not reported");
    json_decref(j);
    cr_assert_eq(inventory_simulate_topology(&inv, "3x2", err, sizeof(err)), -1);
    cr_assert_eq(inventory_simulate_topology(&inv, "2x2", err, sizeof(err)), 0);
    j = inventory_json(&inv, "h");
    json_t *g3 = json_array_get(json_object_get(j, "gpus"), 3);
    cr_assert_eq(json_integer_value(json_object_get(g3, "island")), 1);
    cr_assert_null(json_object_get(g3, "numa"));
    json_decref(j);
}

Test(topology, no_nvml_is_skipped_cleanly)
{
    const char *pci[2] = {"0000:3b:00.0", "0000:5e:00.0"};
    int island[2] = {-1, -1}, numa[2] = {-1, -1};
    char note[160] = "";
    /* this host has no driver; where one exists the call may succeed, and then fills both */
    if (topology_probe_nvml(2, pci, island, numa, note, sizeof(note)) < 0) {
        cr_assert(note[0]);
        cr_assert_eq(island[0], -1);
        cr_assert_eq(numa[1], -1);
    }
    cr_assert_eq(topology_probe_nvml(0, pci, island, numa, note, sizeof(note)), -1);
    struct inventory inv;
    memset(&inv, 0, sizeof(inv)); /* real GPUs: no simulated topology */
    cr_assert_eq(inventory_simulate_topology(&inv, "1x1", note, sizeof(note)), -1);
}
