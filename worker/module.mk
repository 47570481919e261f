# worker/: libringjob (what a training job links to talk to its worker) and the
# worker's end of that channel (jobchan), used by ringmaster-worker and the tests.
#
# libringjob is built position-independent, as a shared library that exports only
# ringjob_* (worker/ringjob.map) and as a static archive.
RINGJOB_SRCS := $(wildcard worker/ringjob*.c)
RINGJOB_OBJS := $(RINGJOB_SRCS:%.c=$(BUILD)/%.o)
# The shared library carries an ABI version in its soname (libringjob.so.0, bumped when
# the ABI breaks); libringjob.so is the link-time name, a symlink to it.
RINGJOB_SOVER := 0
RINGJOB_SO    := $(BUILD)/lib/libringjob.so
RINGJOB_SOREAL := $(BUILD)/lib/libringjob.so.$(RINGJOB_SOVER)
RINGJOB_A     := $(BUILD)/lib/libringjob.a

$(RINGJOB_OBJS): CFLAGS += -fPIC -fvisibility=default

$(RINGJOB_SOREAL): $(RINGJOB_OBJS) worker/ringjob.map
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libringjob.so.$(RINGJOB_SOVER) \
		-Wl,--version-script=worker/ringjob.map -Wl,--no-undefined -o $@ $(RINGJOB_OBJS) -lm

$(RINGJOB_SO): $(RINGJOB_SOREAL)
	ln -sfn $(notdir $<) $@

$(RINGJOB_A): $(RINGJOB_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

# The worker's own objects (everything in worker/ but libringjob).
WORKER_SRCS := $(filter-out $(RINGJOB_SRCS),$(wildcard worker/*.c))
WORKER_OBJS := $(WORKER_SRCS:%.c=$(BUILD)/%.o)

BINS += $(RINGJOB_SO) $(RINGJOB_A)

# Unit tests of libringjob, jobchan and the example jobs (these need the examples built).
JOB_TEST_SRCS := $(wildcard tests/unit/job/*.c)
JOB_TEST_OBJS := $(JOB_TEST_SRCS:%.c=$(BUILD)/%.o)
JOB_TEST_BIN  := $(BUILD)/tests/unit-job

ifneq ($(JOB_TEST_SRCS),)
$(JOB_TEST_OBJS): CPPFLAGS += -Iworker -DJOBTEST_SRCDIR='"$(CURDIR)"'
$(JOB_TEST_BIN): $(JOB_TEST_OBJS) $(WORKER_OBJS) $(RINGJOB_A) $(COMMON_LIB) | $(EXAMPLE_BINS) $(RINGJOB_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(JOB_TEST_OBJS) $(WORKER_OBJS) $(RINGJOB_A) $(COMMON_LIB) \
		-lcriterion -lm
TEST_BINS += $(JOB_TEST_BIN)
endif

# ringmaster-worker, the daemon of a GPU host (worker/daemon/): registration, heartbeats,
# the action long-poll, mpirun launches, reports. It links jobchan and the common helpers.
WORKERD_SRCS := $(wildcard worker/daemon/*.c)
WORKERD_OBJS := $(WORKERD_SRCS:%.c=$(BUILD)/%.o)
WORKERD_BIN  := $(BUILD)/ringmaster-worker

$(WORKERD_OBJS): CPPFLAGS += -iquote worker -iquote worker/daemon

$(WORKERD_BIN): $(WORKERD_OBJS) $(WORKER_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs jansson libcurl) -lpthread -ldl -lm

BINS += $(WORKERD_BIN)

# End-to-end tests of the worker: the server's integration harness (one PostgreSQL per
# binary, a fresh ringmasterd per test), a real worker and real mpirun jobs.
WORKER_IT_SRCS := $(wildcard tests/integration/worker/*.c)
WORKER_IT_OBJS := $(WORKER_IT_SRCS:%.c=$(BUILD)/%.o)
WORKER_IT_BIN  := $(BUILD)/tests/integration-worker

ifneq ($(WORKER_IT_SRCS),)
$(WORKER_IT_OBJS): CPPFLAGS += -iquote tests/integration \
	-DWORKER_PATH='"$(abspath $(WORKERD_BIN))"' \
	-DTRAIN_MLP_PATH='"$(abspath $(BUILD)/examples/train-mlp)"'
$(WORKER_IT_BIN): $(WORKER_IT_OBJS) $(BUILD)/tests/integration/harness.o $(COMMON_LIB) \
		| $(WORKERD_BIN) $(BUILD)/ringmasterd $(BUILD)/examples/train-mlp
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -lcriterion \
		$(shell pkg-config --libs jansson libcurl libpq) -lpthread -lm
TEST_BINS += $(WORKER_IT_BIN)

# test_torch runs examples/train_torch.py (Debian's python) on this build's libringjob.so.
$(BUILD)/tests/integration/worker/test_torch.o: CPPFLAGS += \
	-DRINGJOB_SO_PATH='"$(abspath $(RINGJOB_SO))"' \
	-DTRAIN_TORCH_PATH='"$(abspath examples/train_torch.py)"'
$(WORKER_IT_BIN): | $(RINGJOB_SO)
endif

# Unit tests of the daemon's parts that need no server.
WORKER_UNIT_SRCS := $(wildcard tests/unit/worker/*.c)
WORKER_UNIT_OBJS := $(WORKER_UNIT_SRCS:%.c=$(BUILD)/%.o)
WORKER_UNIT_BIN  := $(BUILD)/tests/unit-worker

ifneq ($(WORKER_UNIT_SRCS),)
$(WORKER_UNIT_OBJS): CPPFLAGS += -iquote worker/daemon
$(WORKER_UNIT_BIN): $(WORKER_UNIT_OBJS) $(filter-out %/main.o,$(WORKERD_OBJS)) $(WORKER_OBJS) \
		$(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(shell pkg-config --libs jansson libcurl) -lpthread -lm
TEST_BINS += $(WORKER_UNIT_BIN)
endif
