#include "httpc.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ANSWER (64u << 20) /* answers above this are refused */

struct httpc {
    CURL *curl;
    char *base;
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
    size_t n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    c->base = strndup(base_url, n);
    if (token && asprintf(&c->auth, "Authorization: Bearer %s", token) < 0)
        c->auth = NULL;
    if (!c->curl || !c->base || (token && !c->auth))
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
    free(c->base);
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

int httpc_request_raw(struct httpc *c, const char *method, const char *path,
                      const char *content_type, const char *data, size_t len,
                      const char *extra_header, long *status, json_t **out, char *err,
                      size_t errlen)
{
    char *url = NULL;
    struct buf answer = {0};
    int rc = -1;
    *out = NULL;
    *status = 0;
    if (asprintf(&url, "%s%s", c->base, path) < 0) {
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
