# cli/: ringctl, the command-line client.
RINGCTL_SRCS := $(wildcard cli/*.c)
RINGCTL      := $(BUILD)/ringctl

$(RINGCTL): $(RINGCTL_SRCS:%.c=$(BUILD)/%.o) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs libcurl jansson)

BINS += $(RINGCTL)

# Unit tests of ringctl's pure parts (times for people, array indexes, dependencies).
CLI_UNIT_SRCS := $(wildcard tests/unit/cli/*.c)
CLI_UNIT_BIN  := $(BUILD)/tests/unit-cli

$(BUILD)/tests/unit/cli/%.o: CPPFLAGS += -iquote cli
$(CLI_UNIT_BIN): $(CLI_UNIT_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/cli/timefmt.o $(BUILD)/cli/arrayspec.o \
		$(BUILD)/cli/afterspec.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion

TEST_BINS += $(CLI_UNIT_BIN)

# The integration tests source the bash completion script and read the man page from the tree.
$(BUILD)/tests/integration/test_ringctl_cluster.o: CPPFLAGS += \
    -DRINGCTL_COMPLETION='"$(abspath packaging/bash-completion/ringctl)"' \
    -DRINGCTL_MAN='"$(abspath docs/man/ringctl.1)"'
