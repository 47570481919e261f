/* www: serves the dashboard's static files from one directory, and under /vendor/ the
 * JavaScript libraries the system keeps (Debian installs them in /usr/share/javascript: the
 * dashboard's charts are drawn by libjs-dygraphs). GET and HEAD only; "/" is index.html;
 * any path with a ".." segment is refused. */
#ifndef RINGMASTER_WWW_H
#define RINGMASTER_WWW_H

struct http_req;

/* The path prefix of the system's libraries: /vendor/LIB/FILE is vendor_dir/LIB/FILE. */
#define WWW_VENDOR_PREFIX "/vendor"

/* Answers req: paths under WWW_VENDOR_PREFIX from the files under vendor_dir, the others from
 * those under dir (either NULL: everything it would serve is 404). Every file is sent with
 * "Cache-Control: no-cache" (revalidated, so an upgraded package is seen at once). */
void www_serve(struct http_req *req, const char *dir, const char *vendor_dir);

/* The content type for a file name, by extension ("application/octet-stream" if unknown). */
const char *www_content_type(const char *name);

/* True when path is safe to join under the directory: absolute, no ".." segment, no
 * backslash, no empty segment. */
int www_path_ok(const char *path);

#endif
