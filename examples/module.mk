# examples/: training jobs that run under Ringmaster through libringjob.
#
# train-mlp is a data-parallel C trainer on OpenMPI; it is linked against the shared
# libringjob with an rpath to $(BUILD)/lib, so build/examples/train-mlp runs in place.
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)

EXAMPLE_BINS :=

ifneq ($(MPI_LIBS),)
TRAIN_MLP := $(BUILD)/examples/train-mlp

$(BUILD)/examples/train-mlp.o: CPPFLAGS += -Iworker $(MPI_CFLAGS)

$(TRAIN_MLP): $(BUILD)/examples/train-mlp.o $(BUILD)/lib/libringjob.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< -L$(BUILD)/lib -lringjob -Wl,-rpath,'$$ORIGIN/../lib' \
		$(MPI_LIBS) -lm

EXAMPLE_BINS += $(TRAIN_MLP)
endif

BINS += $(EXAMPLE_BINS)
