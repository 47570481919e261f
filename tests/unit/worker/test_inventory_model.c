/* --simulate-gpu-model: simulated GPUs take the model name asked for, so that the scheduler
 * sees nodes of different GPU models; names it would mangle are refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "inventory.h"

Test(inventory_model, simulated_gpus_take_the_name_asked_for)
{
    struct inventory inv;
    inventory_probe(&inv, 2);
    cr_assert_eq(inventory_simulate_model(&inv, "a100"), 0);
    json_t *j = inventory_json(&inv, "host-a");
    for (size_t i = 0; i < 2; i++) {
        json_t *g = json_array_get(json_object_get(j, "gpus"), i);
        cr_assert_str_eq(json_string_value(json_object_get(g, "model")), "a100");
    }
    json_decref(j);
}

Test(inventory_model, bad_names_and_real_gpus_are_refused)
{
    struct inventory inv;
    char long_name[200];
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    inventory_probe(&inv, 1);
    cr_assert_eq(inventory_simulate_model(&inv, ""), -1);
    cr_assert_eq(inventory_simulate_model(&inv, "a100\n"), -1);
    cr_assert_eq(inventory_simulate_model(&inv, long_name), -1);
    cr_assert_str_eq(inv.gpus[0].model, "simulated", "a refused name changes nothing");
    memset(&inv, 0, sizeof(inv)); /* as if CUDA had found real GPUs */
    cr_assert_eq(inventory_simulate_model(&inv, "a100"), -1);
}
