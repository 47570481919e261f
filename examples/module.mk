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



# train-cuda: the same job with its step on the GPU and NCCL all-reduce, built only where
# nvcc is found (on PATH or in /usr/local/cuda). It exits 77 on a host without a usable
# GPU, which the tests treat as a skip. Host code is compiled by nvcc with our warnings
# (and sanitizer) and linked by $(CC) like everything else.
comma     := ,
empty     :=
space     := $(empty) $(empty)
NVCC      ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME := $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
NVCC_SAN  := $(subst $(space),,$(foreach s,$(subst $(comma), ,$(SANITIZER)),$(comma)-fsanitize=$(s)))
NVCC_HOST := -Wall,-Wextra,-Werror$(if $(SANITIZER),$(NVCC_SAN)$(comma)-fno-omit-frame-pointer)

ifneq ($(NVCC),)
ifneq ($(MPI_LIBS),)
TRAIN_CUDA := $(BUILD)/examples/train-cuda

$(BUILD)/examples/train-cuda.o: examples/train-cuda.cu
	@mkdir -p $(@D)
	$(NVCC) -std=c++17 -O2 -g $(CUDA_ARCH) -Xcompiler $(NVCC_HOST) -DOMPI_SKIP_MPICXX -Iworker \
		$(MPI_CFLAGS) \
		-MD -MP -MF $(@:.o=.d) -c -o $@ $<

$(TRAIN_CUDA): $(BUILD)/examples/train-cuda.o $(BUILD)/lib/libringjob.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< -L$(BUILD)/lib -lringjob -Wl,-rpath,'$$ORIGIN/../lib' \
		$(MPI_LIBS) -L$(CUDA_HOME)/lib64 -lnccl -lcudart -Wl,-rpath,$(CUDA_HOME)/lib64 \
		-lstdc++ -lm

EXAMPLE_BINS += $(TRAIN_CUDA)
endif
endif
BINS += $(EXAMPLE_BINS)
