/* problem: RFC 9457 problem documents: the title of each status, the document built and
 * written as compact text with its errors[]. */
#include "problem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    unsigned status;
    const char *slug;
    const char *title;
} kinds[] = {
    {400, "bad-request", "Bad Request"},
    {401, "unauthorized", "Unauthorized"},
    {403, "forbidden", "Forbidden"},
    {404, "not-found", "Not Found"},
    {405, "method-not-allowed", "Method Not Allowed"},
    {409, "conflict", "Conflict"},
    {413, "payload-too-large", "Content Too Large"},
    {414, "uri-too-long", "URI Too Long"},
    {415, "unsupported-media-type", "Unsupported Media Type"},
    {422, "unprocessable", "Unprocessable Content"},
    {429, "too-many-requests", "Too Many Requests"},
    {431, "request-header-fields-too-large", "Request Header Fields Too Large"},
    {500, "internal-error", "Internal Server Error"},
    {503, "unavailable", "Service Unavailable"},
};

static int kind_index(unsigned status)
{
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (kinds[i].status == status)
            return (int)i;
    return -1;
}

const char *problem_title(unsigned status)
{
    int i = kind_index(status);
    return i < 0 ? "Error" : kinds[i].title;
}

json_t *problem_build(unsigned status, const char *detail, const char *instance)
{
    int i = kind_index(status);
    char type[128];
    snprintf(type, sizeof(type), "urn:ringmaster:problem:%s", i < 0 ? "error" : kinds[i].slug);
    json_t *p = json_pack("{s:s, s:s, s:i, s:s}", "type", type, "title", problem_title(status),
                          "status", (int)status, "detail", detail ? detail : "");
    if (p && instance)
        json_object_set_new(p, "instance", json_string(instance));
    return p;
}

char *problem_text(unsigned status, json_t *errors, const char *detail, const char *instance)
{
    json_t *p = problem_build(status, detail, instance);
    if (p && errors)
        json_object_set_new(p, "errors", errors);
    else
        json_decref(errors);
    char *text = p ? json_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    return text;
}
