# cli/: ringctl, the command-line client.
RINGCTL_SRCS := $(wildcard cli/*.c)
RINGCTL      := $(BUILD)/ringctl

$(RINGCTL): $(RINGCTL_SRCS:%.c=$(BUILD)/%.o) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs libcurl jansson)

BINS += $(RINGCTL)
