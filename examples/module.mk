# examples/: training jobs that run under Ringmaster through libringjob.
#
# train-mlp is a data-parallel C trainer on OpenMPI; it is linked against the shared
# libringjob with an rpath to $(BUILD)/lib, so build/examples/train-mlp runs in place.
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)

EXAMPLE_BINS :=

ifneq ($(MPI_LIBS),)
TRAIN_MLP := $(BUILD)/examples/train-mlp

TRAIN_MLP_OBJS := $(BUILD)/examples/train-mlp.o $(BUILD)/examples/train-mlp-model.o

$(TRAIN_MLP_OBJS): CPPFLAGS += -Iworker $(MPI_CFLAGS)

$(TRAIN_MLP): $(TRAIN_MLP_OBJS) $(BUILD)/lib/libringjob.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(TRAIN_MLP_OBJS) -L$(BUILD)/lib -lringjob -Wl,-rpath,'$$ORIGIN/../lib' \
		$(MPI_LIBS) -lm

EXAMPLE_BINS += $(TRAIN_MLP)
endif



# train-cuda: the same job with its step on the GPU and NCCL all-reduce, built only where
# nvcc and the CUDA runtime and NCCL libraries are found. nvcc may be a wrapper script
# (CI has /usr/local/bin/nvcc exec'ing the real one), so the toolkit's root is asked of
# nvcc itself (--dryrun prints TOP=) rather than derived from its path. It exits 77 on a
# host without a usable GPU, which the tests treat as a skip. Host code is compiled by
# nvcc with our warnings (and sanitizer) and linked by $(CC) like everything else.
comma     := ,
empty     :=
space     := $(empty) $(empty)
ifeq ($(origin NVCC),undefined)
NVCC      := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
endif
CUDA_TOP  := $(if $(NVCC),$(shell $(NVCC) --dryrun -c -x cu /dev/null 2>&1 | sed -n 's/^\#\$$ TOP=//p' | head -n1))
CUDA_TOP  := $(if $(CUDA_TOP),$(realpath $(CUDA_TOP)))
CUDA_LIBDIRS := $(CUDA_TOP)/targets/x86_64-linux/lib $(CUDA_TOP)/lib64 $(CUDA_TOP)/lib \
		/usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu
cuda_find  = $(firstword $(foreach d,$(CUDA_LIBDIRS),$(if $(wildcard $(d)/$(1)),$(d))))
CUDART_DIR := $(call cuda_find,libcudart.so)
NCCL_DIR   := $(call cuda_find,libnccl.so)
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
NVCC_SAN  := $(subst $(space),,$(foreach s,$(subst $(comma), ,$(SANITIZER)),$(comma)-fsanitize=$(s)))
NVCC_HOST := -Wall,-Wextra,-Werror$(if $(SANITIZER),$(NVCC_SAN)$(comma)-fno-omit-frame-pointer)

ifneq ($(NVCC),)
ifneq ($(MPI_LIBS),)
ifneq ($(CUDART_DIR),)
ifneq ($(NCCL_DIR),)
TRAIN_CUDA := $(BUILD)/examples/train-cuda

$(BUILD)/examples/train-cuda.o: examples/train-cuda.cu
	@mkdir -p $(@D)
	$(NVCC) -std=c++17 -O2 -g $(CUDA_ARCH) -Xcompiler $(NVCC_HOST) -DOMPI_SKIP_MPICXX -Iworker \
		$(MPI_CFLAGS) \
		-MD -MP -MF $(@:.o=.d) -c -o $@ $<

$(TRAIN_CUDA): $(BUILD)/examples/train-cuda.o $(BUILD)/lib/libringjob.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< -L$(BUILD)/lib -lringjob -Wl,-rpath,'$$ORIGIN/../lib' \
		$(MPI_LIBS) -L$(NCCL_DIR) -lnccl -L$(CUDART_DIR) -lcudart \
		-Wl,-rpath,$(NCCL_DIR) -Wl,-rpath,$(CUDART_DIR) -lstdc++ -lm

EXAMPLE_BINS += $(TRAIN_CUDA)
endif
endif
endif
endif
BINS += $(EXAMPLE_BINS)
