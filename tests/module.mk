# tests/: tests of common/ pieces that need real outside programs (PostgreSQL).
PGC_TEST_SRCS := $(wildcard tests/pgcluster/*.c)
PGC_TEST_BIN  := $(BUILD)/tests/system-pgcluster

$(PGC_TEST_BIN): $(PGC_TEST_SRCS:%.c=$(BUILD)/%.o) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(shell pkg-config --libs libpq 2>/dev/null || echo -lpq)

TEST_BINS += $(PGC_TEST_BIN)

# Fuzz targets and the replay of their corpora (tests/fuzz/module.mk, docs/fuzzing.md).
include tests/fuzz/module.mk

# The tree's layout: server/'s and scheduler/'s arrows, no circles, no .c name twice (docs/layout.md).
TEST_SCRIPTS += tests/layout/run.sh
