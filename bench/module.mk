# bench/: load generators and the bench targets that drive the real binaries.
API_BENCH := $(BUILD)/bench/api-bench

$(API_BENCH): $(BUILD)/bench/api_bench.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs libcurl libpq) -lpthread

BINS += $(API_BENCH)

bench-api: deps all
	@bench/bench-api.sh $(BUILD)

.PHONY: bench-api
