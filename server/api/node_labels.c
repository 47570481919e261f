/* node_labels: an admin's labels on a node (nodes.h), merged as a JSON merge patch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "http/problem.h"
#include "log.h"
#include "nodes.h"
#include "spec/fieldcheck.h"
#include "store/db.h"

#define LABELS_MAX 32
#define LABEL_MAX 63 /* characters of a key or a value */

/* 1 if k is a label key: 1..63 of [A-Za-z0-9._/-], beginning with a letter or digit. */
static int key_ok(const char *k)
{
    size_t n = strlen(k);
    return n >= 1 && n <= LABEL_MAX &&
           strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") == n &&
           strchr("._/-", k[0]) == NULL;
}

/* Checks the body ({"labels": {KEY: VALUE or null}}); returns its labels (borrowed) or NULL
 * after a 400. */
static const json_t *labels_or_respond(struct api_call *call, const json_t *body)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v)
    {
        if (strcmp(k, "labels")) {
            api_field_error(call, strlen(k) > 64 ? "(long name)" : k, "unknown field (labels)");
            return NULL;
        }
    }
    const json_t *l = json_object_get(body, "labels");
    if (!json_is_object(l) || json_object_size(l) > LABELS_MAX) {
        api_field_error(call, "labels",
                        "required: an object of at most 32 labels, {\"switch\": \"s1\"}"
                        " (null removes one)");
        return NULL;
    }
    json_object_foreach((json_t *)l, k, v)
    {
        char field[96];
        snprintf(field, sizeof(field), "labels.%.64s", k);
        long n = json_is_string(v) ? fieldcheck_text_chars(json_string_value(v)) : 0;
        if (!key_ok(k)) {
            api_field_error(call, field,
                            "a key is 1..63 of letters, digits and . _ / -, beginning with a"
                            " letter or digit");
            return NULL;
        }
        if (!json_is_null(v) && (n < 1 || n > LABEL_MAX)) {
            api_field_error(call, field,
                            "expected 1..63 characters of text, or null to remove"
                            " it");
            return NULL;
        }
    }
    return l;
}

void nodes_patch(struct api_call *call)
{
    long long nid;
    json_t *body;
    if (api_id_or_respond(call, "node", &nid) < 0 || api_body_or_respond(call, &body) < 0)
        return;
    const json_t *l = labels_or_respond(call, body);
    char *text = l ? json_dumps(l, JSON_COMPACT) : NULL;
    if (l && !text)
        http_problem(call->req, 500, "out of memory");
    if (text) {
        char id[24];
        snprintf(id, sizeof(id), "%lld", nid);
        const char *p[] = {id, text};
        /* set the labels with a value, remove those given null; at most 32 after it */
        PGresult *r = db_exec(call->db,
                              "UPDATE nodes n SET labels = jsonb_strip_nulls(n.labels || $2::jsonb)"
                              " WHERE n.id = $1 AND (SELECT count(*) FROM jsonb_object_keys("
                              "jsonb_strip_nulls(n.labels || $2::jsonb))) <= 32"
                              " RETURNING n.name",
                              2, p);
        if (!db_ok(r))
            api_db_error(call, r);
        else if (PQntuples(r) != 1)
            nodes_missing_or_field(call, id, "labels", "a node has at most 32 labels");
        else {
            log_info("node %s labelled by %s: %s", PQgetvalue(r, 0, 0), call->who.name, text);
            nodes_respond(call, id, 200);
        }
        PQclear(r);
    }
    free(text);
    json_decref(body);
}
