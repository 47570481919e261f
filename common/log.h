/* log: one line per event to stderr, with a UTC timestamp and a level.
 * Safe to call from any thread (each line is written with one write()). */
#ifndef RINGMASTER_LOG_H
#define RINGMASTER_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Lines below this level are dropped. Default LOG_INFO; RINGMASTER_LOG=debug lowers it. */
void log_set_level(enum log_level level);

/* Sets the program name put on every line (borrowed; must outlive logging). */
void log_set_ident(const char *ident);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
