/* httpc: the JSON-over-HTTP client (libcurl, jansson) of ringctl, the worker and the
 * benchmarks: a kept-alive handle, bearer token, failover across several base URLs. */
#include "httpc.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ANSWER (64u << 20) /* answers above this are refused */

#define MAX_BASES 8

struct httpc {
    CURL *curl;
    char *bases[MAX_BASES]; /* the servers, in the order given */
    int nbases, cur;        /* requests go to bases[cur] until it cannot be reached */
    char *auth; /* "Authorization: Bearer ..." or NULL */
    long timeout;
};

struct buf {
    char *data;
    size_t len, cap;
    int too_big;
};

static size_t collect(char *p, size_t size, size_t n, void *ud)
{
    struct buf *b = ud;
    size_t add = size * n;
    if (b->len + add + 1 > MAX_ANSWER) {
        b->too_big = 1;
        return 0;
    }
    if (b->len + add + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + add + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, add);
    b->len += add;
    b->data[b->len] = '\0';
    return add;
}

struct httpc *httpc_create(const char *base_url, const char *token)
{
    struct httpc *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->timeout = 30;
    c->curl = curl_easy_init();
    for (const char *p = base_url; c->nbases < MAX_BASES;) {
        size_t n = strcspn(p, ",");
        size_t k = n;
        while (k > 0 && p[k - 1] == '/')
            k--;
        if (k > 0 && !(c->bases[c->nbases++] = strndup(p, k)))
            goto error;
        if (!p[n])
            break;
        p += n + 1;
    }
    if (token && asprintf(&c->auth, "Authorization: Bearer %s", token) < 0)
        c->auth = NULL;
    if (!c->curl || c->nbases == 0 || (token && !c->auth))
        goto error;
    return c;
error:
    httpc_destroy(c);
    return NULL;
}

void httpc_destroy(struct httpc *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    for (int i = 0; i < c->nbases; i++)
        free(c->bases[i]);
    free(c->auth);
    free(c);
}

void httpc_set_timeout(struct httpc *c, long seconds)
{
    c->timeout = seconds;
}

static struct curl_slist *headers_for(const struct httpc *c, const char *extra,
                                      const char *content_type)
{
    struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
    char ct[160];
    if (content_type) {
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
        h = curl_slist_append(h, ct);
    }
    if (c->auth)
        h = curl_slist_append(h, c->auth);
    if (extra)
        h = curl_slist_append(h, extra);
    return h;
}

int httpc_request(struct httpc *c, const char *method, const char *path, json_t *body,
                  const char *extra_header, long *status, json_t **out, char *err,
                  size_t errlen)
{
    char *payload = NULL;
    *out = NULL;
    *status = 0;
    if (body && !(payload = json_dumps(body, JSON_COMPACT))) {
        snprintf(err, errlen, "cannot encode the request body");
        return -1;
    }
    int rc = httpc_request_raw(c, method, path, payload ? "application/json" : NULL, payload,
                               payload ? strlen(payload) : 0, extra_header, status, out, err,
                               errlen);
    free(payload);
    return rc;
}

/* 1 when cc says the request never reached a server (so sending it to another is safe). */
static int not_sent(CURLcode cc)
{
    return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST;
}

static int request_once(struct httpc *c, const char *method, const char *path,
                        const char *content_type, const char *data, size_t len,
                        const char *extra_header, long *status, json_t **out, char *err,
                        size_t errlen, CURLcode *ccp);

int httpc_request_raw(struct httpc *c, const char *method, const char *path,
                      const char *content_type, const char *data, size_t len,
                      const char *extra_header, long *status, json_t **out, char *err,
                      size_t errlen)
{
    /* With several servers: one that cannot be reached is left for the next (and the request
     * goes there at once when it never left); one that failed after the request was sent is
     * left too, but the request is not repeated (it may have been done). */
    for (int tries = 0;; tries++) {
        CURLcode cc = CURLE_OK;
        int rc = request_once(c, method, path, content_type, data, len, extra_header, status,
                              out, err, errlen, &cc);
        if (rc == 0 || c->nbases < 2 || cc == CURLE_OK)
            return rc;
        c->cur = (c->cur + 1) % c->nbases;
        if (!not_sent(cc) || tries + 1 >= c->nbases)
            return rc;
    }
}

static int request_once(struct httpc *c, const char *method, const char *path,
                        const char *content_type, const char *data, size_t len,
                        const char *extra_header, long *status, json_t **out, char *err,
                        size_t errlen, CURLcode *ccp)
{
    char *url = NULL;
    struct buf answer = {0};
    int rc = -1;
    *out = NULL;
    *status = 0;
    if (asprintf(&url, "%s%s", c->bases[c->cur], path) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct curl_slist *h = headers_for(c, extra_header, data ? content_type : NULL);
    curl_easy_reset(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, c->timeout);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &answer);
    if (data) {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, data);
    }
    CURLcode cc = curl_easy_perform(c->curl);
    *ccp = cc;
    curl_slist_free_all(h);
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s %s: %s", method, url,
                 answer.too_big ? "answer too large" : curl_easy_strerror(cc));
        goto done;
    }
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
    if (answer.len > 0)
        *out = json_loadb(answer.data, answer.len, 0, NULL);
    rc = 0;
done:
    free(url);
    free(answer.data);
    return rc;
}
