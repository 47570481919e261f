# sim/: ringmaster-sim, the discrete-event simulator over the scheduling core,
# its unit tests, and `make bench-sched`.
SIM_SRCS      := $(wildcard sim/*.c)
SIM_LIB_OBJS  := $(filter-out $(BUILD)/sim/main.o,$(SIM_SRCS:%.c=$(BUILD)/%.o))
SIM_BIN       := $(BUILD)/ringmaster-sim
SIM_LDLIBS    := $(shell pkg-config --libs jansson) -lm
SIM_CFLAGS    := $(shell pkg-config --cflags jansson)

$(SIM_SRCS:%.c=$(BUILD)/%.o): CFLAGS += $(SIM_CFLAGS)

$(SIM_BIN): $(BUILD)/sim/main.o $(SIM_LIB_OBJS) $(SIMENGINE_LIB) $(SCHED_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(SIM_LDLIBS)

BINS += $(SIM_BIN)

# Unit tests: every file of tests/unit/sim/ in one binary, with the sim objects
# except main().
SIM_TEST_SRCS := $(wildcard tests/unit/sim/*.c)
SIM_TEST_BIN  := $(BUILD)/tests/unit-sim

ifneq ($(SIM_TEST_SRCS),)
$(SIM_TEST_SRCS:%.c=$(BUILD)/%.o): CPPFLAGS += -Isim
$(SIM_TEST_SRCS:%.c=$(BUILD)/%.o): CFLAGS += $(SIM_CFLAGS)
$(SIM_TEST_BIN): $(SIM_TEST_SRCS:%.c=$(BUILD)/%.o) $(SIM_LIB_OBJS) $(SIMENGINE_LIB) $(SCHED_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(SIM_LDLIBS)
TEST_BINS += $(SIM_TEST_BIN)
endif

# Scheduling-core benchmark: full rounds at 100, 1,000 and 10,000 jobs on 64,
# 1,024 and 16,384 GPUs, then whole simulated runs (jobs simulated per second).
BENCH_SCHED_POLICY ?= precompute
RINGMASTER_SHARED_DIR ?= ../shared

bench-sched: $(SIM_BIN)
	@for jobs in 100 1000 10000; do for gpus in 64 1024 16384; do \
	  printf 'jobs=%-6s gpus=%-6s ' $$jobs $$gpus; \
	  $(SIM_BIN) bench-round --jobs $$jobs --gpus $$gpus --policy $(BENCH_SCHED_POLICY) \
	    --repeat 5 | tail -n 1; \
	done; done
	@for p in $(BENCH_SCHED_POLICY) exploratory; do \
	  $(SIM_BIN) run --cluster 8x8 --poisson 250,206 --policies $$p --format csv --timing \
	    >/dev/null; \
	  $(SIM_BIN) run --cluster 16x8 --trace $(RINGMASTER_SHARED_DIR)/traces/philly_pollux.csv \
	    --max-jobs 5000 --min-duration 60 --max-gpus 16 --policies $$p --format csv \
	    --timing >/dev/null; \
	done

# A round's cost against the committed baseline (bench/round-baseline): fails a policy past
# 2x. In `make test`, and on its own: make round-check; BUILD=... bench/round-check.sh --update
# after a change that is meant to make rounds dearer (or cheaper: the baseline tightens).
TEST_SCRIPTS += bench/round-check.sh

round-check: $(SIM_BIN)
	@BUILD=$(BUILD) bench/round-check.sh

.PHONY: bench-sched round-check
