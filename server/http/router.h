/* router: a table of routes {method, path pattern, handler, roles, flags}. Patterns are
 * literal segments and "{id}", which matches any one non-empty segment. */
#ifndef RINGMASTER_ROUTER_H
#define RINGMASTER_ROUTER_H

#include <stddef.h>

struct api_call;

typedef void (*route_handler_f)(struct api_call *call);

enum route_flags {
    ROUTE_JSON_BODY = 1, /* a JSON object body is required (else 415 or 400) */
    ROUTE_ANY_BODY = 2,  /* a body of any content type (a job's log) */
    ROUTE_URGENT = 4,    /* before the others waiting for a handler's thread (http_class) */
    ROUTE_BULK = 8,      /* after them, a turn in four (http_class) */
};

struct route {
    const char *method;
    const char *pattern;
    route_handler_f handler;
    unsigned roles; /* enum auth_role bits allowed; 0: no token needed */
    unsigned flags;
};

enum router_result { ROUTER_FOUND, ROUTER_NOT_FOUND, ROUTER_BAD_METHOD };

struct router_match {
    const struct route *route; /* when FOUND */
    char id[72];               /* the {id} segment, "" when none or longer than 71 bytes */
    char allow[96];            /* when BAD_METHOD: the methods the path has, "GET, POST" */
};

/* Finds the route of method and path in table[0..n). Fills *m. */
enum router_result router_match(const struct route *table, size_t n, const char *method,
                                const char *path, struct router_match *m);

#endif
