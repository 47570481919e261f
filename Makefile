# Ringmaster: one Makefile. Each module adds its sources, binaries and tests in
# <dir>/module.mk; this file holds the flags, the generic rules and the top targets.
#
#   make            build every binary into build/
#   make deps       install missing Debian packages (apt-get, as root or via sudo)
#   make run        deps + build + bring the appliance up on embedded defaults
#   make test       deps + build + every test, under AddressSanitizer and UBSan
#   make SANITIZER=address,undefined   a sanitizer build (objects in build/san)

BUILD     ?= build
SANITIZER ?=
CC        ?= cc
AR        ?= ar
VERSION   := 0.1.0

PG_BINDIR := $(shell pg_config --bindir 2>/dev/null)

CPPFLAGS  += -D_GNU_SOURCE -DRINGMASTER_VERSION='"$(VERSION)"' -iquote common -iquote scheduler
# Include paths of the libraries (libpq's header lives in /usr/include/postgresql).
CPPFLAGS  += $(shell pkg-config --cflags libpq jansson libmicrohttpd libcurl 2>/dev/null)
CFLAGS    ?= -O2 -g
CFLAGS    += -std=c17 -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes \
             -fno-strict-aliasing -MMD -MP
LDFLAGS   ?=
LDLIBS    ?=

ifneq ($(SANITIZER),)
CFLAGS    += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS   += -fsanitize=$(SANITIZER)
endif

# Filled in by the module fragments.
BINS       :=
TEST_BINS  :=
TEST_SCRIPTS :=
TEST_SCRIPT_DEPS :=
OBJS       :=

.DEFAULT_GOAL := all

# Libraries first, so that fragments using $(COMMON_LIB), $(SCHED_LIB) or the
# job library in their prerequisites see them defined.
FIRST_MODULES := $(wildcard common/module.mk scheduler/module.mk worker/module.mk)
include $(FIRST_MODULES)
include $(filter-out $(FIRST_MODULES),$(sort $(wildcard */module.mk)))

all: $(BINS)

# Every C file compiles the same way, into a mirror of the tree under $(BUILD).
$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

deps:
	@packaging/install-deps.sh

run: deps all
	@packaging/run-appliance.sh $(BUILD)

tests: $(TEST_BINS) $(TEST_SCRIPT_DEPS)

# The tested build is the sanitized one; the plain build must compile too: as root the
# package test does that (make deb builds it, -Werror, while other programs run), otherwise
# it is built first here. Builds use every core (TEST_BUILD_JOBS); the test programs then run
# several at a time (tests/run-tests.sh, RINGMASTER_TEST_JOBS).
TEST_BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

test: deps
	@if [ "$$(id -u)" -ne 0 ]; then $(MAKE) -j$(TEST_BUILD_JOBS) all; fi
	$(MAKE) -j$(TEST_BUILD_JOBS) BUILD=build/san SANITIZER=address,undefined all tests
	$(MAKE) BUILD=build/san SANITIZER=address,undefined check

check: all tests
	@BUILD=$(BUILD) tests/run-tests.sh $(TEST_BINS) $(TEST_SCRIPTS)

clean:
	rm -rf build

.PHONY: all deps run test tests check clean

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
