/* What keeps the appliance safe (docs/api.md, "Security"): the security headers on every
 * answer, bad tokens refused per address after a few, tokens stored only as hashes, the
 * admin token's file readable by its owner only, the system's libraries served under
 * /vendor/ from their directory only. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

TestSuite(security, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

static void expect_security_headers(struct hx_resp *r, const char *what)
{
    char v[512];
    cr_assert_not_null(hx_header(r, "Content-Security-Policy", v, sizeof(v)), "%s: no CSP", what);
    cr_assert(strstr(v, "default-src 'self'"), "%s: CSP %s", what, v);
    cr_assert(strstr(v, "frame-ancestors 'none'"), "%s: CSP %s", what, v);
    cr_assert_null(strstr(v, "unsafe-inline"), "%s: CSP %s", what, v);
    cr_assert_not_null(hx_header(r, "X-Content-Type-Options", v, sizeof(v)), "%s", what);
    cr_assert_str_eq(v, "nosniff", "%s", what);
    cr_assert_not_null(hx_header(r, "Referrer-Policy", v, sizeof(v)), "%s", what);
    cr_assert_str_eq(v, "no-referrer", "%s", what);
    cr_assert_not_null(hx_header(r, "X-Frame-Options", v, sizeof(v)), "%s", what);
    cr_assert_str_eq(v, "DENY", "%s", what);
}

Test(security, every_answer_carries_the_security_headers)
{
    static const struct {
        const char *path;
        int auth;
        long status;
    } cases[] = {
        {"/", 0, 200},
        {"/index.html", 0, 200},
        {"/missing.js", 0, 404},
        {"/api/v1/health", 0, 200},
        {"/api/v1/jobs", 1, 200},
        {"/api/v1/jobs", 0, 401},
        {"/api/v1/nowhere", 0, 404},
        {"/metrics", 0, 200},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct hx_resp *r = hx_json("GET", cases[i].path, cases[i].auth ? hx.admin : NULL, NULL);
        cr_assert_eq(r->status, cases[i].status, "%s: %ld", cases[i].path, r->status);
        expect_security_headers(r, cases[i].path);
        hx_free(r);
    }
    hx_finish();
}

/* A well-formed token that no one holds. */
static const char *const guess =
    "rm_0000000000000000000000000000000000000000000000000000000000000000";

static long whoami_as(const char *token)
{
    struct hx_resp *r = hx_json("GET", "/api/v1/whoami", token, NULL);
    long status = r->status;
    hx_free(r);
    return status;
}

Test(security, bad_tokens_are_refused_per_address)
{
    hx_source = "127.0.0.2";
    for (int i = 0; i < 10; i++)
        cr_assert_eq(whoami_as(guess), 401, "guess %d", i + 1);
    struct hx_resp *r = hx_json("GET", "/api/v1/whoami", guess, NULL);
    char retry[32];
    cr_assert_not_null(hx_header(r, "Retry-After", retry, sizeof(retry)), "no Retry-After");
    cr_assert(atoi(retry) >= 1 && atoi(retry) <= 60, "Retry-After %s", retry);
    expect_security_headers(r, "429");
    hx_expect_problem(r, 429, NULL);
    /* refused whatever it presents, so a guess that happens to be right tells nothing */
    cr_assert_eq(whoami_as(hx.admin), 429);

    /* other addresses are unaffected */
    hx_source = "127.0.0.3";
    cr_assert_eq(whoami_as(hx.admin), 200);
    cr_assert_eq(whoami_as(guess), 401);
    hx_source = NULL;
    cr_assert_eq(whoami_as(hx.admin), 200);
    /* a missing token is no guess: it is not counted */
    for (int i = 0; i < 12; i++)
        cr_assert_eq(whoami_as(NULL), 401);
    cr_assert_eq(whoami_as(hx.admin), 200);

    /* a success in between does not wipe an address's failures */
    hx_source = "127.0.0.4";
    for (int i = 0; i < 9; i++)
        cr_assert_eq(whoami_as(guess), 401);
    cr_assert_eq(whoami_as(hx.admin), 200);
    cr_assert_eq(whoami_as(guess), 401, "the tenth failure is still answered");
    cr_assert_eq(whoami_as(guess), 429, "and then the address is refused");
    hx_source = NULL;
    cr_assert_eq(hx_metric("ringmaster_auth_failures_total"), 10 + 1 + 10);
    cr_assert_eq(hx_metric("ringmaster_auth_refused_total"), 3);
    hx_finish();
}

Test(security, tokens_are_stored_only_as_hashes)
{
    char token[128];
    hx_user("hashed", "user", token);
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM users WHERE token_hash = sha256(convert_to('%s', 'UTF8'))",
             token);
    cr_assert_eq(hx_sql_num(sql), 1);
    /* neither token appears anywhere in the users table, whatever its columns */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM users u WHERE strpos(row_to_json(u)::text, '%s') > 0"
             " OR strpos(row_to_json(u)::text, '%s') > 0",
             token + 3, hx.admin + 3);
    cr_assert_eq(hx_sql_num(sql), 0);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM information_schema.columns"
                            " WHERE table_name = 'users' AND column_name = 'token'"),
                 0);
    hx_finish();
}

Test(security, the_admin_token_file_is_for_its_owner_only)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/admin.token", hx.dir);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", (unsigned)(st.st_mode & 0777));
    hx_finish();
}

static void put_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* A request that must be answered 404 with the security headers. */
static void expect_no_file(const char *path)
{
    struct hx_resp *r = hx_json("GET", path, NULL, NULL);
    cr_assert_eq(r->status, 404, "%s: %ld %s", path, r->status, r->body);
    cr_assert_null(strstr(r->body, "SECRET"), "%s leaked: %s", path, r->body);
    expect_security_headers(r, path);
    hx_free(r);
}

/* /vendor/LIB/FILE is --vendor-dir's LIB/FILE (Debian's /usr/share/javascript, where the
 * dashboard's chart library is installed), through the links Debian's packages make, with
 * its type and the static files' cache header; nothing outside that directory. */
Test(security, vendor_files_come_from_the_vendor_dir_only)
{
    char vendor[400], lib[420];
    snprintf(vendor, sizeof(vendor), "%s/vendor", hx.dir);
    snprintf(lib, sizeof(lib), "%s/chartlib", vendor);
    cr_assert_eq(mkdir(vendor, 0755), 0);
    cr_assert_eq(mkdir(lib, 0755), 0);
    put_file(lib, "chart.min.js", "window.ChartLib = 1;\n");
    put_file(lib, "chart.css", ".chart { color: red }\n");
    put_file(hx.dir, "secret.txt", "SECRET\n");
    char link[440];
    snprintf(link, sizeof(link), "%s/dist", lib);
    cr_assert_eq(symlink(".", link), 0);
    cr_assert_eq(hx_stop_server(SIGTERM, 10), 0);
    const char *saved[2] = {hx_server_args[0], hx_server_args[1]};
    hx_server_args[0] = "--vendor-dir";
    hx_server_args[1] = vendor;
    hx_start_server();
    hx_server_args[0] = saved[0];
    hx_server_args[1] = saved[1];

    static const struct {
        const char *path, *type, *body;
    } files[] = {
        {"/vendor/chartlib/chart.min.js", "text/javascript; charset=utf-8",
         "window.ChartLib = 1;\n"},
        {"/vendor/chartlib/dist/chart.min.js", "text/javascript; charset=utf-8",
         "window.ChartLib = 1;\n"},
        {"/vendor/chartlib/chart.css", "text/css; charset=utf-8", ".chart { color: red }\n"},
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        struct hx_resp *r = hx_json("GET", files[i].path, NULL, NULL);
        cr_assert_eq(r->status, 200, "%s: %ld", files[i].path, r->status);
        cr_assert_str_eq(r->content_type, files[i].type, "%s", files[i].path);
        cr_assert_str_eq(r->body, files[i].body, "%s", files[i].path);
        char v[64];
        cr_assert_not_null(hx_header(r, "Cache-Control", v, sizeof(v)), "%s", files[i].path);
        cr_assert_str_eq(v, "no-cache");
        expect_security_headers(r, files[i].path);
        hx_free(r);
    }
    static const char *const missing[] = {
        "/vendor/chartlib/nothing.js",
        "/vendor/nolib/chart.min.js",
        "/vendor/chartlib",
        "/vendor/",
        "/vendor",
        "/vendor/../secret.txt",
        "/vendor/chartlib/../../secret.txt",
        "/vendor/%2e%2e/secret.txt",
        "/vendor//chartlib/chart.min.js",
        "/vendor/chartlib\\..\\..\\secret.txt",
        "/chartlib/chart.min.js",
    };
    for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++)
        expect_no_file(missing[i]);
    /* the dashboard's own files are still the --www-dir's */
    struct hx_resp *r = hx_json("GET", "/index.html", NULL, NULL);
    cr_assert_eq(r->status, 200);
    hx_free(r);
    hx_finish();
}
