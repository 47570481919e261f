# server/: ringmasterd, the appliance's HTTP API and database front.
# (The top Makefile puts the libraries' include paths into CPPFLAGS.)
SERVER_PKGS  := libmicrohttpd jansson libpq
SERVER_LIBS  := $(shell pkg-config --libs $(SERVER_PKGS)) -lpthread -lm

SERVER_SRCS  := $(wildcard server/http/*.c server/spec/*.c server/store/*.c server/live/*.c \
                           server/api/*.c)
SERVER_OBJS  := $(SERVER_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/sql_bundle.o $(BUILD)/gen/openapi_doc.o
SERVER_BIN   := $(BUILD)/ringmasterd
SQL_FILES    := $(sort $(wildcard sql/[0-9][0-9][0-9]_*.sql))

# The migrations are embedded in the binary: it needs no sql/ directory at run time.
$(BUILD)/gen/sql_bundle.c: $(SQL_FILES) server/store/embed-sql.sh
	@mkdir -p $(@D)
	server/store/embed-sql.sh $(SQL_FILES) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/sql_bundle.o: $(BUILD)/gen/sql_bundle.c
	$(CC) $(CPPFLAGS) -iquote server/store -iquote server/api $(CFLAGS) -c -o $@ $<

# The OpenAPI document, embedded the same way.
$(BUILD)/gen/openapi_doc.c: server/api/openapi.json server/api/embed-file.sh
	@mkdir -p $(@D)
	server/api/embed-file.sh openapi_doc openapi.h server/api/openapi.json > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/openapi_doc.o: $(BUILD)/gen/openapi_doc.c
	$(CC) $(CPPFLAGS) -iquote server/store -iquote server/api $(CFLAGS) -c -o $@ $<

# The forecasts (live/forecast_thread.c) run the simulation engine: libringsimengine.a.
$(SERVER_BIN): $(BUILD)/server/main.o $(SERVER_OBJS) $(COMMON_LIB) $(SIMENGINE_LIB) $(SCHED_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(SERVER_LIBS)

BINS += $(SERVER_BIN)

# Inside server/, a file names another folder's header by its folder: "store/db.h".
$(BUILD)/server/%.o: CPPFLAGS += -iquote server

# Unit tests of the pure parts (validation, JSON mapping, routing, the state machine).
SERVER_UNIT_SRCS := $(wildcard tests/unit/server/*.c)
SERVER_UNIT_BIN  := $(BUILD)/tests/unit-server
SERVER_PURE_OBJS := $(addprefix $(BUILD)/server/,spec/fieldcheck.o spec/jobspec.o spec/jobafter.o \
                      spec/jobspec_topology.o spec/jobspec_deadline.o spec/nodespec.o http/router.o \
                      http/www.o http/problem.o http/jsontext.o live/wake.o live/fit.o live/duty.o api/authlimit.o \
                      api/authcache.o store/pgarray.o)

ifneq ($(SERVER_UNIT_SRCS),)
$(BUILD)/tests/unit/server/%.o: CPPFLAGS += -iquote server
$(SERVER_UNIT_BIN): $(SERVER_UNIT_SRCS:%.c=$(BUILD)/%.o) $(SERVER_PURE_OBJS) $(BUILD)/server/http/http.o \
                    $(BUILD)/server/http/guard.o $(BUILD)/server/http/workq.o $(COMMON_LIB) $(SCHED_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(SERVER_LIBS)
TEST_BINS += $(SERVER_UNIT_BIN)
endif

# Integration tests: a real PostgreSQL per binary, a real ringmasterd per test, HTTP by curl.
SERVER_IT_SRCS := $(wildcard tests/integration/*.c)
SERVER_IT_BIN  := $(BUILD)/tests/integration-server

ifneq ($(SERVER_IT_SRCS),)
$(BUILD)/tests/integration/%.o: CPPFLAGS += -DRINGMASTERD_PATH='"$(abspath $(SERVER_BIN))"' \
                                       -DRINGCTL_PATH='"$(abspath $(BUILD)/ringctl)"'
$(BUILD)/tests/integration/test_db_stmt.o: CPPFLAGS += -iquote server
$(BUILD)/tests/integration/test_sched.o: CPPFLAGS += -iquote server
$(SERVER_IT_BIN): $(SERVER_IT_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/server/store/db.o \
                  $(BUILD)/server/live/forecast_read.o $(COMMON_LIB) | \
                  $(SERVER_BIN) $(BUILD)/ringctl
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -lcriterion -lcurl $(SERVER_LIBS)
TEST_BINS += $(SERVER_IT_BIN)
endif

# The live scheduler's round latency with 1,000 jobs on 64 simulated GPUs, and the
# submit-to-scheduled latency on an idle cluster, inside a real ringmasterd.
bench-sched-live: all
	@python3 bench/bench-sched-live.py $(BUILD)

.PHONY: bench-sched-live
