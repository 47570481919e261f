# common/: helpers shared by the server, the worker, the simulator and the tests
# (never by scheduler/, which stays pure).
COMMON_SRCS := $(wildcard common/*.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/%.o)
COMMON_LIB  := $(BUILD)/lib/libringcommon.a

$(COMMON_LIB): $(COMMON_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

# Unit tests of common/ (the profile loader also checks the scheduler's models against the
# measured profiles, so the binary links the core too).
COMMON_TEST_SRCS := $(wildcard tests/unit/common/*.c)
COMMON_TEST_BIN  := $(BUILD)/tests/unit-common

ifneq ($(COMMON_TEST_SRCS),)
# The core library is named literally: scheduler/module.mk is read after this file.
$(COMMON_TEST_BIN): $(COMMON_TEST_SRCS:%.c=$(BUILD)/%.o) $(COMMON_LIB) $(BUILD)/lib/libringsched.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion -lm
TEST_BINS += $(COMMON_TEST_BIN)
endif
