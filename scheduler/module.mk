# scheduler/: the pure scheduling core, built as one static library that the
# server, the simulator and the tests link; and scheduler/simulate/, the
# discrete-event simulator's engine over it, a library of its own that only the
# simulator and its tests link.
SCHED_SRCS := $(wildcard scheduler/*.c scheduler/policies/*.c)
SCHED_OBJS := $(SCHED_SRCS:%.c=$(BUILD)/%.o)
SCHED_LIB  := $(BUILD)/lib/libringsched.a

$(SCHED_LIB): $(SCHED_OBJS)
	@mkdir -p $(@D)
	@rm -f $@
	$(AR) rcs $@ $^

SIMENGINE_SRCS := $(wildcard scheduler/simulate/*.c)
SIMENGINE_OBJS := $(SIMENGINE_SRCS:%.c=$(BUILD)/%.o)
SIMENGINE_LIB  := $(BUILD)/lib/libringsimengine.a

$(SIMENGINE_LIB): $(SIMENGINE_OBJS)
	@mkdir -p $(@D)
	@rm -f $@
	$(AR) rcs $@ $^

# Unit tests of the core: every file in tests/unit/scheduler/ is one binary's part.
SCHED_TEST_SRCS := $(wildcard tests/unit/scheduler/*.c)
SCHED_TEST_BIN  := $(BUILD)/tests/unit-scheduler

ifneq ($(SCHED_TEST_SRCS),)
$(SCHED_TEST_BIN): $(SCHED_TEST_SRCS:%.c=$(BUILD)/%.o) $(SCHED_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion -lm
TEST_BINS += $(SCHED_TEST_BIN)
endif

BINS += $(SCHED_LIB) $(SIMENGINE_LIB)
