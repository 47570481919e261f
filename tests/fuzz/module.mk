# tests/fuzz/: coverage-guided fuzz targets of the parsers that take outside input
# (docs/fuzzing.md), and the replay of their committed corpora in `make check`.
#
#   make fuzz                 build every target with clang + libFuzzer (ASan, UBSan) into
#                             build/fuzz and run each FUZZ_SECONDS (60) into build/fuzz/corpus
#   make fuzz-build           only build them
#   make fuzz FUZZ_TARGETS=jobspec FUZZ_SECONDS=600   one target, longer
#
# `make check` needs no clang: tests/fuzz-replay (gcc, under the check's sanitizers) feeds
# every file of tests/fuzz/corpus/<target>/ to the same target code.
FUZZ_ALL     := jobspec nodespec fieldcheck decide trace jobchan ringjob profile
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 1
FUZZ_CC      ?= clang
FUZZ_BUILD   := build/fuzz
FUZZ_INC     := -iquote server -iquote server/spec -iquote sim -iquote worker -iquote tests/fuzz
FUZZ_CFLAGS  := -O1 -g -std=c17 -Wall -Wextra -Werror -fno-omit-frame-pointer \
                -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
                $(shell pkg-config --cflags jansson 2>/dev/null) -MMD -MP
FUZZ_LDFLAGS := -fsanitize=fuzzer,address,undefined
FUZZ_LIBS    := $(shell pkg-config --libs jansson 2>/dev/null) -lpthread -lm

# Parser sources each target links, besides the core and common archives.
FUZZ_SRCS_jobspec    := server/spec/jobspec.c server/spec/jobafter.c \
                        server/spec/jobspec_topology.c server/spec/jobspec_deadline.c \
                        server/spec/fieldcheck.c
FUZZ_SRCS_nodespec   := server/spec/nodespec.c server/spec/fieldcheck.c
FUZZ_SRCS_fieldcheck := server/spec/fieldcheck.c
FUZZ_SRCS_decide     := sim/decide_input.c sim/decide_int.c sim/decide_observe.c \
                        sim/decide_topology.c sim/options.c
FUZZ_SRCS_trace      := sim/workload.c sim/template.c
FUZZ_SRCS_jobchan    := worker/jobchan.c
FUZZ_SRCS_ringjob    := worker/ringjob.c
FUZZ_SRCS_profile    :=
# libFuzzer options per target: dictionaries of tokens and extreme numbers (merged into
# build/fuzz/<target>.dict); ringjob's channel-lost notes would flood stderr, so its
# stderr is closed (rerun a crash file alone to read the broken invariant).
FUZZ_DICTS_jobspec   := json numbers
FUZZ_DICTS_nodespec  := json numbers
FUZZ_DICTS_decide    := json numbers
FUZZ_DICTS_trace     := numbers
FUZZ_DICTS_profile   := numbers
FUZZ_OPTS_ringjob    := -close_fd_mask=2

$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_INC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_BUILD)/libsched.a: $(patsubst %.c,$(FUZZ_BUILD)/%.o,$(wildcard scheduler/*.c scheduler/policies/*.c))
	$(AR) rcs $@ $^

$(FUZZ_BUILD)/libsimengine.a: $(patsubst %.c,$(FUZZ_BUILD)/%.o,$(wildcard scheduler/simulate/*.c))
	$(AR) rcs $@ $^

$(FUZZ_BUILD)/libcommon.a: $(patsubst %.c,$(FUZZ_BUILD)/%.o,$(wildcard common/*.c))
	$(AR) rcs $@ $^

define FUZZ_TARGET_RULES
$(FUZZ_BUILD)/fuzz-$(1): $(FUZZ_BUILD)/tests/fuzz/fuzz_$(1).o \
		$(patsubst %.c,$(FUZZ_BUILD)/%.o,$(FUZZ_SRCS_$(1))) \
		$(FUZZ_BUILD)/libsimengine.a $(FUZZ_BUILD)/libsched.a $(FUZZ_BUILD)/libcommon.a
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $$@ $$^ $(FUZZ_LIBS)

# The replay build: the same target code under another name, beside the others.
$(BUILD)/tests/fuzz/fuzz_$(1).o: CPPFLAGS += -DLLVMFuzzerTestOneInput=fuzz_$(1)_one
endef
$(foreach t,$(FUZZ_ALL),$(eval $(call FUZZ_TARGET_RULES,$(t))))

$(FUZZ_BUILD)/%.dict: $(wildcard tests/fuzz/*.dict)
	@mkdir -p $(@D)
	cat /dev/null $(FUZZ_DICTS_$*:%=tests/fuzz/%.dict) > $@

fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz-%) $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/%.dict)

# Each target runs FUZZ_SECONDS on its work corpus (seeded from the committed one); new
# findings are saved as build/fuzz/crash-<target>-*. Exits non-zero when one crashed.
FUZZ_PAR  = $(if $(filter-out 1,$(FUZZ_JOBS)),-jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS))
FUZZ_DICT = $(if $(FUZZ_DICTS_$(1)),-dict=$(FUZZ_BUILD)/$(1).dict)
FUZZ_RUN  = mkdir -p $(FUZZ_BUILD)/corpus/$(1); echo "=== fuzz-$(1): $(FUZZ_SECONDS) s"; \
  $(FUZZ_BUILD)/fuzz-$(1) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 $(FUZZ_PAR) $(call FUZZ_DICT,$(1)) \
    -artifact_prefix=$(FUZZ_BUILD)/crash-$(1)- $(FUZZ_OPTS_$(1)) \
    $(FUZZ_BUILD)/corpus/$(1) tests/fuzz/corpus/$(1) || rc=1;

fuzz: fuzz-build
	@rc=0; $(foreach t,$(FUZZ_TARGETS),$(call FUZZ_RUN,$(t))) exit $$rc

.PHONY: fuzz fuzz-build

# ---- the replay, part of `make check` ----
FUZZ_REPLAY_BIN  := $(BUILD)/tests/fuzz-replay
FUZZ_REPLAY_OBJS := $(BUILD)/tests/fuzz/replay.o $(FUZZ_ALL:%=$(BUILD)/tests/fuzz/fuzz_%.o)

$(BUILD)/tests/fuzz/%.o: CPPFLAGS += $(FUZZ_INC) $(shell pkg-config --cflags jansson 2>/dev/null)
$(BUILD)/tests/fuzz/replay.o: CPPFLAGS += -DFUZZ_CORPUS_DIR='"$(CURDIR)/tests/fuzz/corpus"'

$(FUZZ_REPLAY_BIN): $(FUZZ_REPLAY_OBJS) \
		$(sort $(foreach t,$(FUZZ_ALL),$(patsubst %.c,$(BUILD)/%.o,$(FUZZ_SRCS_$(t))))) \
		$(SIMENGINE_LIB) $(SCHED_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(FUZZ_LIBS)

TEST_BINS += $(FUZZ_REPLAY_BIN)
