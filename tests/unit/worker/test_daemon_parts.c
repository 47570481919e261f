/* The worker daemon's parts that need no server: the record of executed actions survives a
 * reopen, the outbox keeps order and drops only what may be dropped, the inventory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doneset.h"
#include "inventory.h"
#include "outbox.h"

Test(doneset, remembers_outcomes_across_a_reopen)
{
    char path[] = "/tmp/rm-doneset-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    struct doneset *d = doneset_open(path);
    cr_assert_not_null(d);
    int ok = -1;
    cr_assert_eq(doneset_has(d, 7, &ok), 0);
    cr_assert_eq(doneset_add(d, 7, 1), 0);
    cr_assert_eq(doneset_add(d, 9, 0), 0);
    doneset_close(d);
    d = doneset_open(path);
    cr_assert_eq(doneset_has(d, 7, &ok), 1);
    cr_assert_eq(ok, 1);
    cr_assert_eq(doneset_has(d, 9, &ok), 1);
    cr_assert_eq(ok, 0);
    cr_assert_eq(doneset_has(d, 8, &ok), 0);
    doneset_close(d);
    unlink(path);
}

Test(outbox, drops_the_oldest_metrics_but_never_a_state)
{
    struct outbox *o = outbox_create(3);
    cr_assert_eq(outbox_push_json(o, "POST", "/state", json_pack("{s:s}", "state", "RUNNING"), 0),
                 0);
    cr_assert_eq(outbox_push_json(o, "POST", "/metrics", json_object(), 1), 0);
    cr_assert_eq(outbox_push_raw(o, "POST", "/log", "text/plain", "abc", 3), 0);
    cr_assert_eq(outbox_len(o), 3);
    cr_assert_eq(outbox_push_json(o, "POST", "/metrics", json_object(), 1), 0);
    cr_assert_eq(outbox_len(o), 3, "a metrics batch made room");
    cr_assert_eq(outbox_dropped(o), 1);
    cr_assert_eq(outbox_push_json(o, "POST", "/result", json_object(), 0), 0,
                 "a result is never refused");
    cr_assert_eq(outbox_len(o), 4);
    outbox_destroy(o);
}

Test(inventory, simulated_gpus_are_advertised_as_such)
{
    struct inventory inv;
    inventory_probe(&inv, 3);
    cr_assert_eq(inv.ngpus, 3);
    cr_assert(inv.simulated);
    cr_assert(inv.cpus >= 1);
    cr_assert(inv.memory_bytes > 0);
    json_t *j = inventory_json(&inv, "host-x");
    cr_assert_str_eq(json_string_value(json_object_get(j, "name")), "host-x");
    cr_assert(json_is_true(json_object_get(j, "simulated")));
    json_t *g = json_array_get(json_object_get(j, "gpus"), 2);
    cr_assert_eq(json_integer_value(json_object_get(g, "index")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(g, "model")), "simulated");
    json_decref(j);
}
