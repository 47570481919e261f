/* fuzz: what every fuzz target of tests/fuzz/ shares (docs/fuzzing.md).
 *
 * Each fuzz_<name>.c defines LLVMFuzzerTestOneInput() over one parser. `make fuzz` links it
 * with libFuzzer (clang); the replay test (replay.c, gcc) compiles it again with
 * -DLLVMFuzzerTestOneInput=fuzz_<name>_one and feeds it every file of corpus/<name>/. */
#ifndef RINGMASTER_FUZZ_H
#define RINGMASTER_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant of the parser under test: when it does not hold, says which and aborts
 * (a crash for libFuzzer, which then saves the input; a crashed test for the replay). */
#define FUZZ_CHECK(cond, ...)                                                                  \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: invariant '%s' broken: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

#endif
