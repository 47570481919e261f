/* gpuhealth: GPU faults from the fault file, as the server's health report (gpuhealth.h). */
#include "gpuhealth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The position in inv of the GPU of index idx, or -1. */
static int position(const struct inventory *inv, long idx)
{
    for (int k = 0; k < inv->ngpus; k++)
        if (inv->gpus[k].index == idx)
            return k;
    return -1;
}

/* One line into faults; 0, or -1 when it is not one of the forms. */
static int parse_line(const char *line, const struct inventory *inv,
                      char faults[][HEALTH_FAULT_MAX])
{
    char word[16];
    long idx;
    int used = 0;
    if (sscanf(line, " gpu %ld %15s %n", &idx, word, &used) < 2 || used == 0)
        return -1;
    int k = position(inv, idx);
    if (k < 0)
        return -1;
    const char *rest = line + used;
    size_t n = strcspn(rest, "\r\n");
    if (!strcmp(word, "ok") && n == 0) {
        faults[k][0] = '\0';
    } else if (!strcmp(word, "xid")) {
        char *end;
        long code = strtol(rest, &end, 10);
        if (end == rest || code < 0 || (*end && *end != '\n' && *end != '\r' && *end != ' '))
            return -1;
        snprintf(faults[k], HEALTH_FAULT_MAX, "xid %ld", code);
    } else if (!strcmp(word, "ecc") || !strcmp(word, "lost")) {
        snprintf(faults[k], HEALTH_FAULT_MAX, "%s%s%.*s", word, n ? ": " : "",
                 (int)(n < 100 ? n : 100), rest);
        for (char *p = faults[k]; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = ' ';
    } else {
        return -1;
    }
    return 0;
}

int health_read(const char *path, const struct inventory *inv, char faults[][HEALTH_FAULT_MAX],
                char *bad, size_t len)
{
    for (int k = 0; k < inv->ngpus; k++)
        faults[k][0] = '\0';
    if (bad && len)
        bad[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        const char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
            continue;
        if (parse_line(p, inv, faults) < 0 && bad && len && !bad[0])
            snprintf(bad, len, "%.*s", (int)strcspn(p, "\r\n"), p);
    }
    fclose(f);
    return 0;
}

json_t *health_json(const struct inventory *inv, char faults[][HEALTH_FAULT_MAX])
{
    json_t *gpus = json_array();
    for (int k = 0; gpus && k < inv->ngpus; k++)
        if (faults[k][0])
            json_array_append_new(
                gpus, json_pack("{s:i, s:s}", "index", inv->gpus[k].index, "fault", faults[k]));
    return json_pack("{s:o}", "gpus", gpus ? gpus : json_array());
}
