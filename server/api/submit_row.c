/* submit_row: the table of a submission's parameters ({name, SQL type, value, how to encode}),
 * the encoding of a submission into them, and the statements that store it, written from the
 * table: a parameter's position is its place in the table. */
#include "submit_row.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobcols.h"
#include "log.h"
#include "store/db.h"
#include "store/pgarray.h"

/* How a parameter's text is written from the field at f (a member of the submission s) into
 * row->params[i]. Returns 0, or -1 on ENOMEM. */
typedef int (*encode_f)(const void *f, const struct submission *s, struct submit_row *row, int i);

/* One parameter. value: what the insert stores from it in its column (name), "%s" its
 * typed reference; NULL: no column (the statement reads it elsewhere). many: the value
 * when a group stores many jobs at once, when not value. */
struct param {
    const char *name;
    const char *type;
    const char *value;
    const char *many;
    encode_f encode;
    size_t off;
};

static int put_num(struct submit_row *row, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int put_num(struct submit_row *row, int i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->num[i], sizeof(row->num[i]), fmt, ap);
    va_end(ap);
    row->params[i] = row->num[i];
    return 0;
}

static int enc_int(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)s;
    return put_num(row, i, "%d", *(const int *)f);
}

static int enc_bool(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)s;
    row->params[i] = *(const bool *)f ? "true" : "false";
    return 0;
}

/* A string (const char *), NULL: SQL NULL. */
static int enc_text(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)s;
    row->params[i] = *(const char *const *)f;
    return 0;
}

static int enc_name(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)f;
    row->params[i] = s->spec.name;
    return 0;
}

static int enc_id(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)s;
    return put_num(row, i, "%lld", *(const long long *)f);
}

/* A count or an id; 0 (not declared, none): SQL NULL. */
static int enc_count(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    long long v = *(const long long *)f;
    return v > 0 ? enc_id(f, s, row, i) : 0;
}

/* An index; -1 (none): SQL NULL. */
static int enc_index(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)s;
    long v = *(const long *)f;
    return v >= 0 ? put_num(row, i, "%ld", v) : 0;
}

/* A real (17 digits: the value itself, as jansson writes it); 0 (not declared): SQL NULL. */
static int enc_real(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)s;
    double v = *(const double *)f;
    return v > 0 ? put_num(row, i, "%.17g", v) : 0;
}

static int enc_stop_loss(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)f;
    return s->spec.has_stop_loss ? put_num(row, i, "%.17g", s->spec.stop_at_loss) : 0;
}

/* j (new; NULL: SQL NULL) as compact JSON text. */
static int put_json(struct submit_row *row, int i, json_t *j)
{
    if (!j)
        return 0;
    row->owned[i] = json_dumps(j, JSON_COMPACT);
    row->params[i] = row->owned[i];
    json_decref(j);
    return row->owned[i] ? 0 : -1;
}

/* A JSON value (json_t *; NULL: SQL NULL). */
static int enc_json(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)s;
    return put_json(row, i, json_incref(*(json_t *const *)f));
}

/* The plan declaration (jobspec_plans_json()), or SQL NULL without one. */
static int enc_plans(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)f;
    return put_json(row, i, jobspec_plans_json(&s->spec));
}

/* The batch declaration (jobspec_batch_json()), or SQL NULL without one. */
static int enc_batch(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)f;
    return put_json(row, i, jobspec_batch_json(&s->spec));
}

/* The topology bound (jobspec_topology_json()), or SQL NULL without one. */
static int enc_topology(const void *f, const struct submission *s, struct submit_row *row, int i)
{
    (void)f;
    return put_json(row, i,
                    jobspec_topology_json(s->spec.max_switches, s->spec.max_switches_wait_s));
}

#define SPEC(m) offsetof(struct submission, spec.m)
#define SUB(m) offsetof(struct submission, m)

/* The parameters, in their order. idempotency_key, actor, min_gpus and id are also read by
 * name where the statements need them. */
static const struct param params[] = {
    {"user_id", "bigint", "%s", NULL, enc_id, SUB(user_id)},
    {"name", "text", "%s", NULL, enc_name, 0},
    {"command", "jsonb", "%s", NULL, enc_json, SPEC(command)},
    {"env", "jsonb", "%s", NULL, enc_json, SPEC(env)},
    {"model", "jsonb", "%s", NULL, enc_json, SPEC(model)},
    {"gpus", "int", "%s", NULL, enc_int, SPEC(gpus)},
    {"min_gpus", "int", "%s", NULL, enc_int, SPEC(min_gpus)},
    {"max_gpus", "int", "%s", NULL, enc_int, SPEC(max_gpus)},
    {"elastic", "bool", "%s", NULL, enc_bool, SPEC(elastic)},
    {"priority", "int", "%s", NULL, enc_int, SPEC(priority)},
    {"batch_per_gpu", "int", "%s", NULL, enc_int, SPEC(batch_per_gpu)},
    {"idempotency_key", "text", "%s", NULL, enc_text, SUB(key)},
    {"request_hash", "text", "sha256(convert_to(%s, 'UTF8'))", NULL, enc_text, SUB(request)},
    {"actor", "text", NULL, NULL, enc_text, SUB(actor)}, /* its first event's */
    {"plan_spec", "jsonb", "%s", NULL, enc_plans, 0},
    {"total_steps", "bigint", "%s", NULL, enc_count, SPEC(total_steps)},
    {"epochs", "float8", "%s", NULL, enc_real, SPEC(epochs)},
    {"stop_at_convergence", "bool", "%s", NULL, enc_bool, SPEC(stop_at_convergence)},
    {"stop_at_loss", "float8", "%s", NULL, enc_stop_loss, 0},
    /* drawn here when not chosen; a group draws every job's first (x.id) */
    {"id", "bigint", "COALESCE(%s, nextval('jobs_id_seq'::regclass))", "x.id", enc_count, SUB(id)},
    {"array_id", "bigint", "%s", NULL, enc_count, SUB(array_id)},
    {"array_index", "int", "%s", NULL, enc_index, SUB(array_index)},
    {"batch_spec", "jsonb", "%s", NULL, enc_batch, 0},
    {"deps", "jsonb", "%s", NULL, enc_json, SPEC(after)},
    {"topology", "jsonb", "%s", NULL, enc_topology, 0},
    {"deadline", "float8", "to_timestamp(%s)", NULL, enc_real, SPEC(deadline)}, /* sql/042 */
};

#define NPARAMS ((int)(sizeof(params) / sizeof(params[0])))
/* The admission check's parameter, after the table's: the job holds (spec.hold). */
#define HOLD NPARAMS

_Static_assert(NPARAMS + 1 <= SUBMIT_ROW_MAX, "SUBMIT_ROW_MAX: room for every parameter");

int submit_row_of(const struct submission *s, struct submit_row *row)
{
    *row = (struct submit_row){.keyed = s->key != NULL};
    for (int i = 0; i < NPARAMS; i++)
        if (params[i].encode((const char *)s + params[i].off, s, row, i) < 0) {
            submit_row_clear(row);
            return -1;
        }
    return enc_bool(&s->spec.hold, s, row, HOLD);
}

void submit_row_clear(struct submit_row *row)
{
    for (int i = 0; i < SUBMIT_ROW_MAX; i++) {
        free(row->owned[i]);
        row->owned[i] = NULL;
    }
}

/* Whether a group's statement reads parameter i (of the table, or HOLD) from its arrays: not
 * when it stores something else in its column (many). */
static int in_group(int i)
{
    return i == HOLD || !params[i].many;
}

/* Parameter i's place among a group's parameters (from 0). */
static int group_place(int i)
{
    int p = 0;
    for (int k = 0; k < i; k++)
        p += in_group(k);
    return p;
}

int submit_rows_of(const struct submit_row *const *rows, int n, struct submit_rows *g)
{
    *g = (struct submit_rows){0};
    size_t room = 0;
    for (int i = 0; i <= HOLD; i++)
        if (in_group(i)) {
            room += PGARRAY_ROOM;
            for (int k = 0; k < n; k++)
                room += pgarray_room(rows[k]->params[i]);
        }
    char *at = g->text = malloc(room);
    if (!at)
        return -1;
    for (int i = 0, p = 0; i <= HOLD; i++)
        if (in_group(i)) {
            struct pgarray a;
            g->params[p++] = at;
            pgarray_start(&a, at);
            for (int k = 0; k < n; k++)
                pgarray_add(&a, rows[k]->params[i]);
            at = pgarray_end(&a);
        }
    return 0;
}

void submit_rows_clear(struct submit_rows *g)
{
    free(g->text);
    g->text = NULL;
}

/* ---- the statements, written from the table ---- */

/* A statement's text being written (fixed room: a statement that does not fit is a bug). */
struct sql {
    char *p;
    size_t len, cap;
};

static void add(struct sql *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct sql *q, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(q->p + q->len, q->cap - q->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= q->cap - q->len) {
        log_error("submit_row: a statement longer than %zu bytes", q->cap);
        abort();
    }
    q->len += (size_t)n;
}

/* How a statement reads its parameters: $n each (alone), or, for a group's job x, the
 * element x.i of the group's array of the parameter, ($n::type[])[x.i] (many). */
enum form { ALONE, MANY };

/* Parameter i's SQL type (the admission check's too). */
static const char *type_of(int i)
{
    return i == HOLD ? "bool" : params[i].type;
}

/* The typed reference of parameter i in form f, into out. */
static const char *ref(char *out, size_t len, enum form f, int i)
{
    if (f == ALONE)
        snprintf(out, len, "$%d::%s", i + 1, type_of(i));
    else
        snprintf(out, len, "($%d::%s[])[x.i]", group_place(i) + 1, type_of(i));
    return out;
}

/* The place of the parameter named name in the table. */
static int param_of(const char *name)
{
    for (int i = 0; i < NPARAMS; i++)
        if (strcmp(params[i].name, name) == 0)
            return i;
    log_error("submit_row: no parameter %s", name);
    abort();
}

/* "INSERT INTO jobs (columns)" and then values, each column's value in form f. */
static void add_insert(struct sql *q, enum form f, const char *values)
{
    char r[48];
    add(q, "INSERT INTO jobs (");
    for (int i = 0, n = 0; i < NPARAMS; i++)
        if (params[i].value)
            add(q, "%s%s", n++ ? ", " : "", params[i].name);
    add(q, ")%s", values);
    for (int i = 0, n = 0; i < NPARAMS; i++) {
        const char *v = f == MANY && params[i].many ? params[i].many : params[i].value;
        if (!v)
            continue;
        add(q, "%s", n++ ? ", " : "");
        add(q, v, ref(r, sizeof(r), f, i));
    }
}

#define CONFLICT " ON CONFLICT (user_id, idempotency_key) DO NOTHING RETURNING *"
#define EVENT "INSERT INTO job_events (job_id, from_state, to_state, event, actor)"

/* SUBMIT_ROW_INSERT: VALUES, then the job as JOB_COLS. */
static void write_insert(struct sql *q)
{
    char actor[48];
    ref(actor, sizeof(actor), ALONE, param_of("actor"));
    add(q, "WITH ins AS (");
    add_insert(q, ALONE, " VALUES (");
    add(q,
        ")" CONFLICT "), ev AS (" EVENT " SELECT id, NULL, 'PENDING', 'submit', %s FROM ins)"
        " SELECT " JOB_COLS " FROM ins j JOIN users u ON u.id = j.user_id",
        actor);
}

/* The admission check of form f: the job holds, no node is up, or it fits. */
static void add_admission(struct sql *q, enum form f)
{
    char hold[48], min[48];
    add(q, " WHERE %s OR cl.nodes = 0 OR %s <= cl.gpus", ref(hold, sizeof(hold), f, HOLD),
        ref(min, sizeof(min), f, param_of("min_gpus")));
}

/* SUBMIT_ROW_ONE. */
static void write_one(struct sql *q)
{
    char actor[48];
    ref(actor, sizeof(actor), ALONE, param_of("actor"));
    add(q, "WITH cl AS (" SUBMIT_CLUSTER_SQL "), ins AS (");
    add_insert(q, ALONE, " SELECT ");
    add(q, " FROM cl");
    add_admission(q, ALONE);
    add(q, CONFLICT "), ev AS (" EVENT " SELECT id, NULL, 'PENDING', 'submit', %s FROM ins)",
        actor);
    add(q, " SELECT " JOB_COLS_NEW("%s") ", cl.nodes, cl.gpus FROM cl LEFT JOIN ins j ON true",
        actor);
}

/* The group's jobs x: i, each one's place in the arrays (from 1, in the rows' order), and
 * id, its id, drawn in that order. Returns how many parameters the group has. */
static int add_group_rows(struct sql *q)
{
    int first = 0;
    while (!in_group(first))
        first++;
    add(q,
        "x AS MATERIALIZED (SELECT i, nextval('jobs_id_seq'::regclass) AS id"
        " FROM generate_subscripts($1::%s[], 1) AS i)",
        type_of(first));
    return group_place(HOLD) + 1;
}

/* SUBMIT_ROW_MANY (conflict: CONFLICT) and SUBMIT_ROW_MANY_KEYLESS (conflict: only the
 * RETURNING). Returns how many parameters it reads. */
static int write_many(struct sql *q, const char *conflict)
{
    char actor[48];
    ref(actor, sizeof(actor), MANY, param_of("actor"));
    add(q, "WITH cl AS (" SUBMIT_CLUSTER_SQL "), ");
    int n = add_group_rows(q);
    add(q, ", ins AS (");
    add_insert(q, MANY, " SELECT ");
    add(q, " FROM x, cl");
    add_admission(q, MANY);
    add(q,
        " ORDER BY x.i%s), ev AS (" EVENT " SELECT ins.id, NULL, 'PENDING', 'submit', %s"
        " FROM ins JOIN x ON x.id = ins.id)",
        conflict, actor);
    add(q, " SELECT " JOB_COLS_NEW("%s") ", cl.nodes, cl.gpus", actor);
    add(q, " FROM x CROSS JOIN cl LEFT JOIN ins j ON j.id = x.id ORDER BY x.i");
    return n;
}

#define SQL_ROOM 4096
#define NSTMTS (SUBMIT_ROW_MANY_KEYLESS + 1)

static char texts[NSTMTS][SQL_ROOM];
static struct db_stmt stmts[NSTMTS] = {
    [SUBMIT_ROW_INSERT] = {"submit_insert", texts[SUBMIT_ROW_INSERT], NPARAMS, 0},
    [SUBMIT_ROW_ONE] = {"submit_one", texts[SUBMIT_ROW_ONE], NPARAMS + 1, 0},
    /* their parameters counted as they are written */
    [SUBMIT_ROW_MANY] = {"submit_many", texts[SUBMIT_ROW_MANY], 0, 0},
    [SUBMIT_ROW_MANY_KEYLESS] = {"submit_many_keyless", texts[SUBMIT_ROW_MANY_KEYLESS], 0, 0},
};
static pthread_once_t written = PTHREAD_ONCE_INIT;

static void write_all(void)
{
    struct sql q[NSTMTS];
    for (int k = 0; k < NSTMTS; k++)
        q[k] = (struct sql){.p = texts[k], .cap = SQL_ROOM};
    write_insert(&q[SUBMIT_ROW_INSERT]);
    write_one(&q[SUBMIT_ROW_ONE]);
    stmts[SUBMIT_ROW_MANY].nparams = write_many(&q[SUBMIT_ROW_MANY], CONFLICT);
    stmts[SUBMIT_ROW_MANY_KEYLESS].nparams =
        write_many(&q[SUBMIT_ROW_MANY_KEYLESS], " RETURNING *");
}

const struct db_stmt *submit_row_stmt(enum submit_row_stmt which)
{
    pthread_once(&written, write_all);
    return &stmts[which];
}
