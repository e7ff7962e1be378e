# bench/engine.mk: standalone build of build/engine_bench (bench/engine_bench.c
# and bench/engine/*.c), the engine-level GPU benchmark on a generated corpus;
# no PostgreSQL needed.
#
#   make -f bench/engine.mk          # from the repository root
#   make -f bench/engine.mk clean
#   make -f bench/engine.mk TRACE=1  # build/engine_bench_trace: stage times of
#                                    # small batches (cuda/gpuir_search_trace.cuh)
#   make -f bench/engine.mk build/test_cuda_search   # the kernels' test, linked
#                                    # with these kernels (bench/gpu-kernel-checks)
#   make -f bench/engine.mk NVCC= BIN=build/engine_bench_cpu OBJDIR=build/engine_cpu_obj \
#        build/engine_bench_cpu      # without the kernels (the main Makefile's
#                                    # engine-cpu-check)
#
# With nvcc (on PATH or /usr/local/cuda/bin/nvcc) the kernels cuda/*.cu are
# compiled here, into build/engine_obj/, with the main Makefile's NVCC flags,
# and the CUDA runtime is linked statically (as for gpuir.so and the unit
# tests).  Without nvcc the program links cuda/gpuir_cuda_stub.c: it still
# generates the corpus, builds the segment and self-checks the CPU reference,
# then reports that there is no CUDA device.

ifeq ($(origin NVCC),undefined)
NVCC := $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))

# the same flags as NVCC_FLAGS of the main Makefile
NVCC_FLAGS = -O3 --std=c++17 --fmad=false -Xcompiler -fPIC,-fvisibility=hidden \
	-Xcompiler -Wall,-Wextra \
	-gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -lpthread -ldl -lstdc++

# -ffp-contract=off: the CPU reference's BM25 (GpuirBM25Expr) must round like the kernels;
# ENGINE_SAN: sanitizer flags for the host code, the CPU engine's too (the main Makefile's
# engine-cpu-check passes -fsanitize=address,undefined where the compiler has them)
ENGINE_SAN ?=
ENGINE_CFLAGS = -O3 -Wall -Wextra -ffp-contract=off -pthread $(ENGINE_SAN)

OBJDIR = build/engine_obj
BIN = build/engine_bench
ifeq ($(TRACE),1)
NVCC_FLAGS += -DGPUIR_SEARCH_TRACE
OBJDIR = build/trace_obj
BIN = build/engine_bench_trace
endif
ENGINE_SRCS = bench/engine_bench.c bench/engine/util.c bench/engine/inputs.c \
	bench/engine/corpus.c bench/engine/segment.c bench/engine/reference.c bench/engine/gpu.c \
	bench/engine/cpu_engine.c
SRCS = $(ENGINE_SRCS) src/gpuirlist.c src/gpuircodec.c cuda/gpuir_cuda_status.c \
	cuda/gpuir_cuda_window.c
DEPS = $(SRCS) bench/engine/engine.h bench/engine/cpu_image.h src/gpuirlist.h src/gpuircodec.h \
	cuda/gpuir_cuda.h cuda/gpuir_cuda_internal.h test/ref_topk.h

# The production CPU engine (--cpu-engine, bench/engine/cpu_image.c): that
# file, test/fuzz/pgshim.c (-DPGSHIM_ENGINE) and the src/ files they run,
# compiled against PostgreSQL's server headers (PG_CONFIG, else pg_config on
# PATH) with the flags PostgreSQL builds gpuir with, then linked into one
# object whose only global symbols are cpu_image_build and cpu_image_search
# (so that they do not meet engine_bench's own src/gpuirlist.c and
# src/gpuircodec.c).  PG_INCLUDEDIR_SERVER=DIR names the headers without a
# pg_config (a configured source tree's src/include, after make -C
# src/backend generated-headers).  The shim is written against PostgreSQL
# 15: with other headers, none (libpq-dev's pg_config names a directory
# without them), or a tree without test/fuzz (bench/gpu-variants'
# archives), bench/engine/cpu_image_stub.c is linked instead and
# --cpu-engine stops with the reason.
PG_CONFIG ?= $(shell command -v pg_config 2>/dev/null)
ifneq ($(strip $(PG_CONFIG)),)
PG_INCLUDEDIR_SERVER ?= $(shell $(PG_CONFIG) --includedir-server)
endif
CPU_IMAGE_PG15 := $(if $(strip $(PG_INCLUDEDIR_SERVER)),$(shell grep -qs \
	'^\#define PG_MAJORVERSION_NUM 15$$' $(PG_INCLUDEDIR_SERVER)/pg_config.h && \
	test -f $(PG_INCLUDEDIR_SERVER)/postgres.h && test -f test/fuzz/pgshim.mk && echo yes))
ifeq ($(CPU_IMAGE_PG15),yes)
include test/fuzz/pgshim.mk
CPU_IMAGE_SRCS = bench/engine/cpu_image.c $(PGSHIM_SRCS) src/gpuirfree.c
CPU_IMAGE_CFLAGS = -O2 -Wall -Wextra -Wno-unused-parameter -ffp-contract=off -fno-strict-aliasing \
	-fwrapv -fexcess-precision=standard -D_GNU_SOURCE -DPGSHIM_ENGINE -Isrc -Itest/fuzz \
	-I$(PG_INCLUDEDIR_SERVER) $(ENGINE_SAN)
CPU_IMAGE = $(OBJDIR)/cpu_image.o
else
CPU_IMAGE_SRCS =
CPU_IMAGE = bench/engine/cpu_image_stub.c
endif

ifneq ($(strip $(NVCC)),)
CUDA_SRCS = $(wildcard cuda/*.cu)
CUDA_OBJS = $(patsubst cuda/%.cu,$(OBJDIR)/%.o,$(CUDA_SRCS))
ENGINE_CPPFLAGS = -DENGINE_BENCH_HAVE_CUDA -isystem $(CUDA_HOME)/include
ENGINE_LINK = $(CUDA_OBJS) $(CUDA_LIBS)
else
CUDA_OBJS =
ENGINE_CPPFLAGS =
ENGINE_LINK = cuda/gpuir_cuda_stub.c
endif

.PHONY: all clean
all: $(BIN)

# the main Makefile's test/test_cuda_search, without PostgreSQL (-ffp-contract=off:
# the CPU reference's BM25 must round like GpuirBM25)
build/test_cuda_search: test/test_cuda_search.c test/test_util.h test/test_size.h \
		test/ref_topk.h src/gpuircodec.c src/gpuirlist.c src/gpuirlist.h $(CUDA_OBJS) bench/engine.mk
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -ffp-contract=off -Isrc -Icuda -o $@ test/test_cuda_search.c \
		src/gpuircodec.c src/gpuirlist.c cuda/gpuir_cuda_status.c cuda/gpuir_cuda_window.c \
		$(ENGINE_LINK) -lm

$(BIN): $(DEPS) $(CUDA_OBJS) $(CPU_IMAGE) bench/engine.mk
	@mkdir -p $(dir $@)
	$(CC) $(ENGINE_CFLAGS) $(ENGINE_CPPFLAGS) -Isrc -Icuda -o $@ $(SRCS) $(CPU_IMAGE) \
		$(ENGINE_LINK) -lm

$(OBJDIR)/cpu_image.o: $(CPU_IMAGE_SRCS) bench/engine/cpu_image.h test/fuzz/pgshim.h \
		$(wildcard src/*.h) bench/engine.mk
	@mkdir -p $(OBJDIR)/cpu_image
	for f in $(CPU_IMAGE_SRCS); do \
		$(CC) $(CPU_IMAGE_CFLAGS) -c $$f -o $(OBJDIR)/cpu_image/$$(basename $$f .c).o || exit 1; \
	done
	ld -r -o $@.all $(patsubst %.c,$(OBJDIR)/cpu_image/%.o,$(notdir $(CPU_IMAGE_SRCS)))
	objcopy --keep-global-symbol=cpu_image_build --keep-global-symbol=cpu_image_search $@.all $@
	rm -f $@.all

$(OBJDIR)/%.o: cuda/%.cu $(wildcard cuda/*.h cuda/*.cuh) src/gpuircodec.h src/gpuirlist.h
	@mkdir -p $(OBJDIR)
	$(NVCC) $(NVCC_FLAGS) -Isrc -c $< -o $@

clean:
	rm -rf build/engine_obj build/trace_obj build/engine_cpu_obj build/engine_bench \
		build/engine_bench_trace build/engine_bench_cpu build/test_cuda_search
