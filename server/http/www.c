/* www: the dashboard's static files and the system's JavaScript libraries under /vendor/:
 * content types, refused ".." paths, files read and sent with no-cache. */
#include "www.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"

#define WWW_MAX_FILE (16u << 20)

static const struct {
    const char *ext;
    const char *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".map", "application/json"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"},
    {".woff2", "font/woff2"},
};

const char *www_content_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

int www_path_ok(const char *path)
{
    if (path[0] != '/' || strchr(path, '\\'))
        return 0;
    for (const char *seg = path + 1;; seg += strcspn(seg, "/") + 1) {
        size_t n = strcspn(seg, "/");
        if ((n == 0 && seg[n] == '/') || (n == 2 && strncmp(seg, "..", 2) == 0))
            return 0;
        if (seg[n] == '\0')
            return 1;
    }
}

/* Reads a regular file of at most WWW_MAX_FILE bytes into *buf (new). Returns its size or -1. */
static long read_file(const char *path, char **buf)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    long n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= WWW_MAX_FILE) {
        *buf = malloc((size_t)st.st_size + 1);
        n = *buf && read(fd, *buf, (size_t)st.st_size) == st.st_size ? (long)st.st_size : -1;
        if (n < 0) {
            free(*buf);
            *buf = NULL;
        }
    }
    close(fd);
    return n;
}

/* Answers a GET or HEAD of path with the file dir/rel (rel: "/" is index.html). */
static void serve_file(struct http_req *req, const char *path, const char *dir, const char *rel)
{
    if (!dir || !www_path_ok(rel) || strlen(rel) > 1024) {
        http_problem(req, 404, "no file %s", path);
        return;
    }
    char file[4200];
    snprintf(file, sizeof(file), "%s%s", dir, strcmp(rel, "/") == 0 ? "/index.html" : rel);
    char *buf = NULL;
    long n = read_file(file, &buf);
    if (n < 0) {
        http_problem(req, 404, "no file %s", path);
        return;
    }
    static const char *const headers[] = {"Cache-Control", "no-cache", NULL};
    http_req_respond(req, 200, www_content_type(file), buf, (size_t)n, headers);
    free(buf);
}

void www_serve(struct http_req *req, const char *dir, const char *vendor_dir)
{
    const char *method = http_req_method(req);
    const char *path = http_req_path(req);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static const char *const allow[] = {"Allow", "GET, HEAD", NULL};
        http_send_problem(req, 405, NULL, allow, "%s is not allowed on %s", method, path);
        return;
    }
    size_t n = strlen(WWW_VENDOR_PREFIX);
    if (strncmp(path, WWW_VENDOR_PREFIX, n) == 0 && (path[n] == '/' || path[n] == '\0'))
        serve_file(req, path, vendor_dir, path[n] == '/' && path[n + 1] ? path + n : "");
    else
        serve_file(req, path, dir, path);
}
