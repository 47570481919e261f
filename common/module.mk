# common/: helpers shared by the server, the worker, the simulator and the tests
# (never by scheduler/, which stays pure).
COMMON_SRCS := $(wildcard common/*.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/%.o)
COMMON_LIB  := $(BUILD)/lib/libringcommon.a

$(COMMON_LIB): $(COMMON_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^
