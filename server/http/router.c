/* router: router_match(), the route table's matcher: method and path pattern ("{id}"
 * segments), with the Allow list for a 405. */
#include "router.h"

#include <stdio.h>
#include <string.h>

/* Matches path against pattern segment by segment; copies the {id} segment into id. */
static int path_matches(const char *pattern, const char *path, char *id, size_t idlen)
{
    while (*pattern && *path) {
        if (*pattern != '/' || *path != '/')
            return 0;
        pattern++;
        path++;
        size_t plen = strcspn(pattern, "/");
        size_t slen = strcspn(path, "/");
        if (plen == 4 && strncmp(pattern, "{id}", 4) == 0) {
            if (slen == 0)
                return 0;
            snprintf(id, idlen, "%.*s", slen < idlen ? (int)slen : 0, path);
        } else if (plen != slen || strncmp(pattern, path, plen) != 0) {
            return 0;
        }
        pattern += plen;
        path += slen;
    }
    return *pattern == '\0' && *path == '\0';
}

static void add_allow(char *allow, size_t len, const char *method)
{
    if (strstr(allow, method))
        return;
    size_t used = strlen(allow);
    snprintf(allow + used, len - used, "%s%s", used ? ", " : "", method);
}

enum router_result router_match(const struct route *table, size_t n, const char *method,
                                const char *path, struct router_match *m)
{
    memset(m, 0, sizeof(*m));
    int path_known = 0;
    for (size_t i = 0; i < n; i++) {
        char id[sizeof(m->id)] = "";
        if (!path_matches(table[i].pattern, path, id, sizeof(id)))
            continue;
        path_known = 1;
        add_allow(m->allow, sizeof(m->allow), table[i].method);
        if (strcmp(table[i].method, method) == 0) {
            m->route = &table[i];
            memcpy(m->id, id, sizeof(id));
            return ROUTER_FOUND;
        }
    }
    return path_known ? ROUTER_BAD_METHOD : ROUTER_NOT_FOUND;
}
