/* domain (issue 32): placement keeps a job in the smallest domain that holds it, an NVLink
 * island, a node, a switch, a rack; nodes without topology are placed as before; a job bound
 * to N switches waits for them while its wait lasts, then takes what there is. */
#include "domain.h"
#include "placement.h"
#include "sched_fixture.h"

/* Node n's GPUs in islands of size isl (island g / isl + 1). */
static void islands(struct fx *f, int n, int isl)
{
    for (int g = 0; g < f->nodes[n].ngpus; g++)
        f->nodes[n].island[g] = (unsigned char)(g / isl + 1);
}

/* The islands (of node island numbers) job i's slots span. */
static int islands_spanned(const struct fx *f, const struct placement_plan *p, size_t i)
{
    uint64_t seen[FX_MAX_NODES] = {0};
    int n = 0;
    for (int k = 0; k < p->gpus[i]; k++) {
        struct sched_slot s = p->slots[p->off[i] + (size_t)k];
        int isl = f->nodes[s.node].island[s.gpu];
        n += !((seen[s.node] >> isl) & 1);
        seen[s.node] |= UINT64_C(1) << isl;
    }
    return n;
}

/* Three 1-GPU jobs hold GPUs 0, 2 and 5 of a 2x4 node: the buddy rule alone gives a 3-GPU
 * job GPUs 1, 3, 4 (two islands); with the islands known it takes 4, 6, 7 (one). */
Test(domain, a_job_that_fits_an_island_gets_one)
{
    static struct fx f;
    int want[4] = {1, 1, 1, 3};
    for (int known = 0; known <= 1; known++) {
        fx_init(&f, 1, 8);
        if (known)
            islands(&f, 0, 4);
        const int held[3] = {0, 2, 5};
        for (int i = 0; i < 3; i++) {
            struct sched_job *j = fx_job(&f, i + 1, 1);
            fx_hold(&f, j, 0, held[i], 1);
        }
        fx_job(&f, 4, 3);
        struct placement_plan *p = fx_place(&f, want);
        cr_assert_eq(p->gpus[3], 3);
        if (known) {
            cr_assert_eq(islands_spanned(&f, p, 3), 1, "one island");
            for (int k = 0; k < 3; k++)
                cr_assert_geq(p->slots[p->off[3] + (size_t)k].gpu, 4);
        } else {
            cr_assert_eq(p->slots[p->off[3]].gpu, 1, "as before: the smallest blocks first");
        }
        placement_destroy(p);
    }
}

/* Islands need not be aligned blocks: GPUs 0, 2, 4, 6 and 1, 3, 5, 7 (as NVML may report). */
Test(domain, interleaved_islands_are_kept_whole)
{
    static struct fx f;
    int want[2] = {4, 4};
    fx_init(&f, 1, 8);
    for (int g = 0; g < 8; g++)
        f.nodes[0].island[g] = (unsigned char)(g % 2 + 1);
    fx_job(&f, 1, 4);
    fx_job(&f, 2, 4);
    struct placement_plan *p = fx_place(&f, want);
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(p->gpus[i], 4);
        cr_assert_eq(islands_spanned(&f, p, i), 1, "job %zu in one island", i);
    }
    placement_destroy(p);
}

/* A 2-GPU job takes the fuller island (best fit), leaving a whole island for a 4-GPU job. */
Test(domain, the_fullest_island_that_holds_it)
{
    static struct fx f;
    int want[3] = {2, 2, 4};
    fx_init(&f, 2, 8);
    islands(&f, 0, 4);
    islands(&f, 1, 4);
    struct sched_job *a = fx_job(&f, 1, 2);
    fx_hold(&f, a, 0, 0, 2);
    fx_job(&f, 2, 2);
    fx_job(&f, 3, 4);
    struct placement_plan *p = fx_place(&f, want);
    cr_assert_eq(p->slots[p->off[1]].node, 0);
    cr_assert_lt(p->slots[p->off[1]].gpu, 4, "into island 1 of node 0, beside job 1");
    cr_assert_eq(islands_spanned(&f, p, 2), 1);
    placement_destroy(p);
}

/* Four 8-GPU nodes, two on each switch; a job of 12 GPUs with 4 free on node 2 (switch 2)
 * and all free on the others: it takes node 3 and the 4 of node 2 (switch 2, 12 free, the
 * fullest switch that holds it). Without the labels the emptiest node (0) goes first, and the
 * job spans both switches. */
Test(domain, a_job_spanning_nodes_stays_on_one_switch)
{
    static struct fx f;
    int want[2] = {4, 12};
    fx_init(&f, 4, 8);
    for (int n = 0; n < 4; n++)
        f.nodes[n].switch_id = n / 2 + 1;
    struct sched_job *a = fx_job(&f, 1, 4);
    fx_hold(&f, a, 2, 0, 4);
    fx_job(&f, 2, 12);
    struct placement_plan *p = fx_place(&f, want);
    cr_assert_eq(p->gpus[1], 12);
    cr_assert_eq(fx_nodes_spanned(p, 1), 2);
    cr_assert_eq(domain_switches(&f.snap, &p->slots[p->off[1]], 12), 1);
    for (int k = 0; k < 12; k++)
        cr_assert_geq(p->slots[p->off[1] + (size_t)k].node, 2);
    placement_destroy(p);
    for (int n = 0; n < 4; n++)
        f.nodes[n].switch_id = 0;
    p = fx_place(&f, want);
    cr_assert_eq(domain_switches(&f.snap, &p->slots[p->off[1]], 12), 1, "no labels: one");
    for (int n = 0; n < 4; n++)
        f.nodes[n].switch_id = n / 2 + 1;
    cr_assert_eq(domain_switches(&f.snap, &p->slots[p->off[1]], 12), 2, "as before: both");
    placement_destroy(p);
}

/* No switch holds the job: a rack that does; none: the cluster, as before. */
Test(domain, then_a_rack)
{
    static struct fx f;
    int want[1] = {24};
    fx_init(&f, 6, 8);
    for (int n = 0; n < 6; n++) {
        f.nodes[n].switch_id = n / 2 + 1; /* 16 GPUs a switch */
        f.nodes[n].rack_id = n < 2 ? 1 : 2;
    }
    fx_job(&f, 1, 24);
    struct placement_plan *p = fx_place(&f, want);
    cr_assert_eq(p->gpus[0], 24);
    for (int k = 0; k < 24; k++)
        cr_assert_geq(p->slots[p->off[0] + (size_t)k].node, 2, "in rack 2");
    cr_assert_eq(fx_nodes_spanned(p, 0), 3);
    placement_destroy(p);
}

Test(domain, numbering_of_islands_and_labels)
{
    const int raw[6] = {7, 7, -1, 3, 7, 3};
    unsigned char isl[6];
    domain_islands_from(raw, 6, isl);
    const unsigned char want[6] = {1, 1, 0, 2, 1, 2};
    cr_assert_arr_eq(isl, want, 6);
    const char *names[5] = {"s2", NULL, "s1", "s2", ""};
    int ids[5];
    domain_number(names, 5, ids);
    const int wid[5] = {1, 0, 2, 1, 0};
    cr_assert_arr_eq(ids, wid, sizeof(wid));
}

/* Slurm's --switches=1@60: a 12-GPU job with 8 free on each switch waits (its reason and its
 * explanation say so) until it has waited 60 s, then takes GPUs across switches. */
Test(domain, a_switch_bound_waits_then_takes_what_there_is)
{
    static struct fx f;
    fx_init(&f, 4, 8);
    for (int n = 0; n < 4; n++)
        f.nodes[n].switch_id = n / 2 + 1;
    struct sched_job *a = fx_job(&f, 1, 8), *b = fx_job(&f, 2, 8);
    a->elastic = b->elastic = 0;
    fx_hold(&f, a, 0, 0, 8);
    fx_hold(&f, b, 2, 0, 8);
    a->last_change_time = b->last_change_time = 0;
    struct sched_job *j = fx_job(&f, 3, 12);
    j->elastic = 0;
    j->max_switches = 1;
    j->max_switches_wait_s = 60;
    j->submit_time = f.snap.now - 12;
    /* a policy that never migrates (keeps_slots): one that does gathers job 3 on one switch
     * by moving job 2 (consolidation, a_job_that_fits_one_switch_is_gathered_there) */
    const struct sched_policy_ops *fifo = sched_policy_find("tiresias");
    struct sched_decision *d = sched_decide(fifo, &f.snap);
    cr_assert_not_null(d);
    cr_assert_eq(d->assign[2].gpus, 0);
    cr_assert_str_eq(d->assign[2].reason, DOMAIN_REASON_SWITCHES);
    char text[512];
    sched_explain(&f.snap, d, 2, text, sizeof(text));
    cr_assert(strstr(text, "waiting for GPUs on at most 1 switch (12 s of 60 s)"), "%s", text);
    sched_decision_destroy(d);
    j->submit_time = f.snap.now - 61;
    d = sched_decide(fifo, &f.snap);
    cr_assert_eq(d->assign[2].gpus, 12, "%s", d->assign[2].reason);
    cr_assert_eq(domain_switches(&f.snap, d->assign[2].slots, 12), 2);
    sched_decision_destroy(d);
    /* a bound of 2 switches holds nothing */
    j->submit_time = f.snap.now - 12;
    j->max_switches = 2;
    d = sched_decide(fifo, &f.snap);
    cr_assert_eq(d->assign[2].gpus, 12);
    sched_decision_destroy(d);
}

/* Consolidation (issue 32 item 4): the decision applied, as a caller does before its next round:
 * each job holds what it was given. */
static void apply_decision(struct fx *f, const struct sched_decision *d)
{
    for (size_t i = 0; i < d->njobs; i++) {
        struct sched_job *j = &f->jobs[i];
        j->cur_gpus = 0;
        for (int k = 0; k < d->assign[i].gpus; k++)
            f->slots[i][j->cur_gpus++] = d->assign[i].slots[k];
        if (d->assign[i].changed)
            j->last_change_time = f->snap.now;
    }
    f->snap.now += 60;
}

/* The slots of assignment a as a placement plan's job 0, for islands_spanned(). */
static int assignment_islands(const struct fx *f, const struct sched_assignment *a)
{
    struct placement_plan p = {.slots = a->slots, .off = (size_t[]){0}, .gpus = (int[]){a->gpus}};
    return islands_spanned(f, &p, 0);
}

/* kueue#10815 at the island level: four 1-GPU jobs on GPUs 0, 1, 4, 5 of a 2x4 node leave a
 * 4-GPU job two GPUs in each island. The first round migrates two of them (each move names the
 * job it makes room for) and starts it on one island; the second round changes nothing. */
Test(domain, a_job_that_fits_one_island_is_gathered_there)
{
    static struct fx f;
    fx_init(&f, 1, 8);
    islands(&f, 0, 4);
    const int held[4] = {0, 1, 4, 5};
    for (int i = 0; i < 4; i++) {
        struct sched_job *j = fx_job(&f, i + 1, 1);
        j->elastic = 0;
        fx_hold(&f, j, 0, held[i], 1);
    }
    struct sched_job *big = fx_job(&f, 5, 4);
    big->elastic = 0;
    const struct sched_policy_ops *fifo = sched_policy_find("fifo");
    struct sched_decision *d = sched_decide(fifo, &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[4].gpus, 4);
    cr_assert_eq(assignment_islands(&f, &d->assign[4]), 1, "one island in the first round");
    int moved = 0;
    for (size_t i = 0; i < 4; i++) {
        if (!d->assign[i].migrated)
            continue;
        moved++;
        cr_assert_str_eq(d->assign[i].reason, "migrated: to let job 5 run on one NVLink island");
        cr_assert(d->assign[i].has_room_for);
        cr_assert_eq(d->assign[i].room_for, 5);
    }
    cr_assert_eq(moved, 2, "two small jobs move, two stay");
    apply_decision(&f, d);
    sched_decision_destroy(d);
    d = sched_decide(fifo, &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->nchanged, 0, "the second round keeps everything");
    sched_decision_destroy(d);
}

/* At the switch level: 8-GPU jobs on node 0 (switch 1) and node 2 (switch 2) leave a 12-GPU
 * job 8 free on each switch; consolidation gathers it on one switch by migrating. */
Test(domain, a_job_that_fits_one_switch_is_gathered_there)
{
    static struct fx f;
    fx_init(&f, 4, 8);
    for (int n = 0; n < 4; n++)
        f.nodes[n].switch_id = n / 2 + 1;
    struct sched_job *a = fx_job(&f, 1, 8), *b = fx_job(&f, 2, 8), *j = fx_job(&f, 3, 12);
    a->elastic = b->elastic = j->elastic = 0;
    fx_hold(&f, a, 0, 0, 8);
    fx_hold(&f, b, 2, 0, 8);
    struct sched_decision *d = sched_decide(sched_policy_find("fifo"), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[2].gpus, 12);
    cr_assert_eq(domain_switches(&f.snap, d->assign[2].slots, 12), 1, "one switch");
    int moved = d->assign[0].migrated + d->assign[1].migrated;
    cr_assert_geq(moved, 1);
    cr_assert_leq(moved, PLACEMENT_MAX_MIGRATIONS);
    for (size_t i = 0; i < 2; i++)
        if (d->assign[i].migrated)
            cr_assert_str_eq(d->assign[i].reason, "migrated: to let job 3 run on one switch");
    sched_decision_destroy(d);
}

/* The bound: gathering a 16-GPU job on one island of a 3x16 node takes 8 migrations when 8
 * 1-GPU jobs sit in each island (allowed), 9 when 9 do (more than PLACEMENT_MAX_MIGRATIONS: the
 * job starts spread, and nothing moves). */
Test(domain, consolidation_moves_at_most_the_bound)
{
    static struct fx f;
    for (int per = 8; per <= 9; per++) {
        fx_init(&f, 1, 48);
        islands(&f, 0, 16);
        int id = 1;
        for (int isl = 0; isl < 3; isl++)
            for (int k = 0; k < per; k++) {
                struct sched_job *s = fx_job(&f, id++, 1);
                s->elastic = 0;
                fx_hold(&f, s, 0, isl * 16 + k, 1);
            }
        struct sched_job *big = fx_job(&f, 100, 16);
        big->elastic = 0;
        struct sched_decision *d = sched_decide(sched_policy_find("fifo"), &f.snap);
        fx_check_feasible(&f.snap, d);
        size_t last = f.snap.njobs - 1;
        int moved = 0;
        for (size_t i = 0; i < last; i++)
            moved += d->assign[i].migrated;
        cr_assert_eq(d->assign[last].gpus, 16);
        if (per == 8) {
            cr_assert_eq(assignment_islands(&f, &d->assign[last]), 1);
            cr_assert_leq(moved, PLACEMENT_MAX_MIGRATIONS);
        } else {
            cr_assert_gt(assignment_islands(&f, &d->assign[last]), 1);
            cr_assert_eq(moved, 0, "over the bound: no move");
        }
        sched_decision_destroy(d);
    }
}

/* kueue#4329 (node level, kept): two 8-GPU nodes with four 1-GPU jobs on each, an 8-GPU job
 * waiting: four of the small jobs move, the big one starts on one node, and each move names it. */
Test(domain, the_node_level_case_names_the_job_too)
{
    static struct fx f;
    fx_init(&f, 2, 8);
    for (int i = 0; i < 8; i++) {
        struct sched_job *s = fx_job(&f, i + 1, 1);
        s->elastic = 0;
        fx_hold(&f, s, i / 4, i % 4 * 2, 1);
    }
    struct sched_job *big = fx_job(&f, 9, 8);
    big->elastic = 0;
    struct sched_decision *d = sched_decide(sched_policy_find("fifo"), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[8].gpus, 8);
    cr_assert_eq(d->assign[8].slots[0].node, d->assign[8].slots[7].node, "one node");
    int moved = 0;
    for (size_t i = 0; i < 8; i++)
        if (d->assign[i].migrated) {
            moved++;
            cr_assert_str_eq(d->assign[i].reason, "migrated: to let job 9 span fewer nodes");
        }
    cr_assert_eq(moved, 4);
    sched_decision_destroy(d);
}
