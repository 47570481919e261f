/* jsontext: JSON written straight into a growing buffer, byte for byte as jansson's compact
 * dump (JSON_COMPACT, JSON_REAL_PRECISION(precision)) writes the same values, for answers
 * too big to build as jansson objects first (a page of 1,000 jobs). Strings are escaped as
 * jansson escapes them, reals formatted as jansson formats them, and a JSON document from
 * the database (a jsonb cell's text) is written as jansson writes what it parses from it.
 * The caller writes the structure ({, "key":, commas) itself with jsontext_raw(). */
#ifndef RINGMASTER_HTTP_JSONTEXT_H
#define RINGMASTER_HTTP_JSONTEXT_H

#include <stddef.h>

/* A text being written. failed: an allocation failed; later writes do nothing. */
struct jsontext {
    char *p;
    size_t len, cap;
    int failed;
};

/* Starts an empty text with room for cap bytes (grown as needed). On ENOMEM the text is
 * failed (jsontext_take() then returns NULL). */
void jsontext_init(struct jsontext *t, size_t cap);

/* The text written (new, NUL-terminated; free()) and its length in *len, or NULL when a
 * write failed (everything freed). t is empty afterwards. */
char *jsontext_take(struct jsontext *t, size_t *len);

/* Frees what t holds. */
void jsontext_free(struct jsontext *t);

/* Appends n bytes of s as they are (structure, or text known to be JSON already). */
void jsontext_raw(struct jsontext *t, const char *s, size_t n);

/* Appends the literal string lit. */
#define jsontext_lit(t, lit) jsontext_raw((t), (lit), sizeof(lit) - 1)

/* Appends s (valid UTF-8) as a JSON string, quoted and escaped as jansson does. */
void jsontext_str(struct jsontext *t, const char *s);

/* Appends v as jansson writes a JSON integer. */
void jsontext_int(struct jsontext *t, long long v);

/* Appends v (finite: jansson has no real for NaN or infinities) as jansson writes a JSON
 * real with JSON_REAL_PRECISION(precision) (0: jansson's default, 17). */
void jsontext_real(struct jsontext *t, double v, int precision);

/* Appends the JSON document doc (an array or object, as PostgreSQL writes a jsonb value) as
 * jansson writes what json_loads(doc, 0) gives: compact, its integers and reals written
 * again; "null" when jansson would not parse it (a scalar at the top, bad syntax, an integer
 * out of range). Canonical documents are copied in one pass; anything else goes through
 * jansson itself. */
void jsontext_doc(struct jsontext *t, const char *doc, int precision);

#endif
