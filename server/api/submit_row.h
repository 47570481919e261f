/* submit_row: a submission (submission.h) as the parameters of the statement that stores it,
 * and the statements themselves, both made from one table of {column, SQL type, how to
 * encode} (submit_row.c): a parameter's position is its place in the table, and every
 * statement's text is written from the table once. The statements: a batch's insert of one
 * job (SUBMIT_ROW_INSERT), a single submission's insert with its admission check (SUBMIT_ROW_ONE)
 * and a group's many single submissions at once (SUBMIT_ROW_MANY, SUBMIT_ROW_MANY_KEYLESS:
 * submit_group.h). */
#ifndef RINGMASTER_API_SUBMIT_ROW_H
#define RINGMASTER_API_SUBMIT_ROW_H

#include "submission.h"

struct db_stmt;

/* The cluster up: its nodes with GPUs and their GPUs, for the admission check, as the
 * database keeps them (sql/029_cluster_up.sql): counting them here cost 0.77 ms a statement at
 * 512 nodes of 8 GPUs. */
#define SUBMIT_CLUSTER_SQL "SELECT nodes, gpus FROM cluster_up WHERE id = 1"

/* Room for the parameters of the table, and the one more the admission check takes. */
#define SUBMIT_ROW_MAX 28

/* A submission's parameters, as text (NULL: SQL NULL). */
struct submit_row {
    const char *params[SUBMIT_ROW_MAX];
    char num[SUBMIT_ROW_MAX][24]; /* the numbers' text */
    char *owned[SUBMIT_ROW_MAX];  /* the JSON texts made for it */
    int keyed;                    /* it has an Idempotency-Key */
};

/* Fills *row from s (borrowed: row points into it, and must not outlive it), with the
 * admission check's parameter (hold) after the table's. Returns 0, or -1 on ENOMEM (nothing
 * then to free). */
int submit_row_of(const struct submission *s, struct submit_row *row);

/* Frees what row made. */
void submit_row_clear(struct submit_row *row);

enum submit_row_stmt {
    /* A batch's job, the cluster checked before: JOB_COLS of the job stored (jobcols.h), no
     * row when an earlier request with its Idempotency-Key made it. */
    SUBMIT_ROW_INSERT,
    /* A single submission, in one statement: the insert only when the job fits the cluster up
     * (it holds; no node up: not known, nothing refused), and the cluster's nodes up and
     * their GPUs after the job's columns (JOB_COLS_NEW: its user is the submitter; the id and
     * the others null when nothing was stored: refused, or an earlier request with its
     * Idempotency-Key made it). Not the users table nor job_last_report: a job just stored
     * has reported nothing, and reading them was a tenth of a group's statement (pgbench). */
    SUBMIT_ROW_ONE,
    /* SUBMIT_ROW_ONE for many jobs at once, run with submit_rows_of() of their rows: an array
     * a column. Each job's id is drawn first, so that every job has its row in the answer, in
     * the arrays' order, as SUBMIT_ROW_ONE answers it. */
    SUBMIT_ROW_MANY,
    /* SUBMIT_ROW_MANY for a group in which no job has an Idempotency-Key: none can conflict
     * (a null key equals no other), so without the conflict's arbiter (its check was a tenth
     * of the statement's time, pgbench). */
    SUBMIT_ROW_MANY_KEYLESS,
};

/* The statement (borrowed, static; its text written from the table at the first call), to
 * run with a row's params (SUBMIT_ROW_INSERT, SUBMIT_ROW_ONE) or a group's
 * (submit_rows_of(): SUBMIT_ROW_MANY, SUBMIT_ROW_MANY_KEYLESS). */
const struct db_stmt *submit_row_stmt(enum submit_row_stmt which);

/* A group's parameters: for each parameter of the table that the group's statement reads
 * (not the id: it draws every job's), then the admission check's, the array of its rows'
 * values in their order, as a PostgreSQL array literal (store/pgarray.h). */
struct submit_rows {
    const char *params[SUBMIT_ROW_MAX];
    char *text; /* the literals, one after the other */
};

/* Fills *g from rows[0..n) (n >= 1; g does not point into them). Returns 0, or -1 on ENOMEM
 * (nothing then to free). */
int submit_rows_of(const struct submit_row *const *rows, int n, struct submit_rows *g);

/* Frees what g holds. */
void submit_rows_clear(struct submit_rows *g);

#endif
