# bench/: load generators and the bench targets that drive the real binaries.
API_BENCH := $(BUILD)/bench/api-bench

$(API_BENCH): $(BUILD)/bench/api_bench.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs libcurl libpq) -lpthread

BINS += $(API_BENCH)

# Many worker nodes from one process, for bench-scale (bench/loadgen.c).
LOADGEN := $(BUILD)/bench/ringmaster-loadgen

$(LOADGEN): $(BUILD)/bench/loadgen.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs libcurl jansson) -lm -lpthread

BINS += $(LOADGEN)

# What an hour of minibatch reports leaves in the database, with the server's retention
# (bench/retention_hour.c, bench/bench-retention.py).
RETENTION_HOUR := $(BUILD)/bench/ringmaster-retention-hour

$(BUILD)/bench/retention_hour.o: CPPFLAGS += -iquote server

$(RETENTION_HOUR): $(BUILD)/bench/retention_hour.o $(BUILD)/server/live/retention.o \
                   $(BUILD)/server/store/db.o $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs libpq) -lpthread

BINS += $(RETENTION_HOUR)

bench-retention: deps all
	@python3 bench/bench-retention.py $(BUILD)

.PHONY: bench-retention

# One head node under 512 nodes x 8 GPUs and 5,000 jobs (docs/benchmarks.md, "A large
# cluster"). BENCH_NODES, BENCH_GPUS, BENCH_JOBS, BENCH_SECONDS scale it.
bench-scale: deps all
	@python3 bench/bench-scale.py $(BUILD)

# bench-scale at 512 to 16,384 GPUs, and how each cost grows (bench/bench-sweep.py; ~20 min).
bench-sweep: deps all
	@python3 bench/bench-sweep.py $(BUILD)

.PHONY: bench-scale bench-sweep

# What a heartbeat and a metrics post cost the server and PostgreSQL on a 512-node, 5,000-job
# database (bench/bench-requests.py); BENCH_BASE=DIR compares another build's ringmasterd.
bench-requests: deps all
	@python3 bench/bench-requests.py $(BUILD) $(BENCH_BASE)

.PHONY: bench-requests

bench-api: deps all
	@bench/bench-api.sh $(BUILD)

.PHONY: bench-api

# The plans of GET /api/v1/jobs with each filter on 100,000 jobs (docs/benchmarks.md, "Sweeps
# and big lists").
explain-list: all
	@bench/explain-list.sh $(BUILD)

.PHONY: explain-list

# Refits while many running jobs report (docs/benchmarks.md, "Refits ...").
bench-sched-refit: all
	@python3 bench/bench-sched-refit.py $(BUILD)/ringmasterd

# Suspend/resume of train-cuda on a real GPU against the host<->device copy floor
# (docs/benchmarks.md, "GPU suspend/resume"). Where there is no GPU it prints
# "bench-gpu: skipped: <reason>" in about a second and succeeds.
bench-gpu: all
	@python3 bench/bench-gpu.py $(BUILD)

# Every benchmark, one after the other; each prints its figures and the baseline it is
# measured against in the same run.
bench: bench-api bench-sched bench-sched-live bench-sched-refit bench-gpu

.PHONY: bench bench-sched-refit bench-gpu
