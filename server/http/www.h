/* www: serves the dashboard's static files from one directory. GET and HEAD only; "/" is
 * index.html; any path with a ".." segment is refused. */
#ifndef RINGMASTER_WWW_H
#define RINGMASTER_WWW_H

struct http_req;

/* Answers req from the files under dir (NULL: everything is 404). */
void www_serve(struct http_req *req, const char *dir);

/* The content type for a file name, by extension ("application/octet-stream" if unknown). */
const char *www_content_type(const char *name);

/* True when path is safe to join under the directory: absolute, no ".." segment, no
 * backslash, no empty segment. */
int www_path_ok(const char *path);

#endif
