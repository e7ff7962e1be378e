# gpuir: BM25 full-text index access method for PostgreSQL (PGXS build)
#
#   make                 build gpuir.so (CUDA objects too when nvcc is found)
#   make install         install into the PostgreSQL of PG_CONFIG
#   make unittest        standalone C tests (codec; CUDA kernels when built)
#   make installcheck    pg_regress suite against a running server (and, as a
#                        non-root user, the TAP tests: TAP_TESTS below)
#   make prove_installcheck  the TAP tests t/*.pl alone (PostgreSQL::Test::Cluster
#                        clusters of their own; initdb refuses to run as root)

EXTENSION = gpuir
EXTVERSION = 0.2.0
MODULE_big = gpuir
# the full install script of each version and the upgrade scripts between them
# CREATE EXTENSION installs 0.1.0 and applies the update scripts: one copy
# of every object's definition
DATA = sql/gpuir--0.1.0.sql sql/gpuir--0.1.0--$(EXTVERSION).sql
PGFILEDESC = "gpuir - BM25 ranked full-text search index"

# every C file of src/ (pure C ones such as gpuircodec.c and gpuirlist.c too)
SRCS = $(sort $(wildcard src/*.c))
OBJS = $(SRCS:.c=.o)

PG_CONFIG ?= pg_config
# -Wextra minus unused-parameter: AM callbacks and PostgreSQL headers have fixed signatures
PG_CFLAGS += -Wall -Wextra -Wno-unused-parameter
# scores are exact float32 sums: no fused multiply-add (GpuirBM25Expr in
# src/gpuirlist.h), whatever -march the server was built with; the LLVM
# bitcode installed for JIT inlining too (clang contracts by default)
PG_CFLAGS += -ffp-contract=off
override BITCODE_CFLAGS += -ffp-contract=off

# pg_regress wants DIR/sql and DIR/expected: stage symlinks to sql_tests/ and expected/
REGRESS = $(patsubst sql_tests/%.sql,%,$(sort $(wildcard sql_tests/*.sql)))
REGRESS_OPTS = --inputdir=build/regress --outputdir=build/regress

# TAP tests in t/ (PostgreSQL::Test::Cluster of postgresql-server-dev, needs
# IPC::Run: Debian's libipc-run-perl).  PGXS runs them in installcheck after
# pg_regress (scripts/test runs them separately: make installcheck TAP_TESTS=).
TAP_TESTS = 1

# CUDA: built when nvcc is found; the runtime is linked statically so that
# gpuir.so loads on machines without a GPU or driver.
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_SRCS = $(wildcard cuda/*.cu)
NVCC_FLAGS = -O3 --std=c++17 --fmad=false -Xcompiler -fPIC,-fvisibility=hidden \
	-Xcompiler -Wall,-Wextra \
	-gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -lpthread -ldl -lstdc++

# cuda/gpuir_cuda_status.c and gpuir_cuda_window.c (host code) always; the
# device code with nvcc, else the stub that reports "no device" (pure C, so
# PGXS compiles it like src/)
OBJS += cuda/gpuir_cuda_status.o cuda/gpuir_cuda_window.o
ifneq ($(strip $(NVCC)),)
ifneq ($(strip $(CUDA_SRCS)),)
CUDA_OBJS = $(CUDA_SRCS:.cu=.o)
PG_CPPFLAGS += -DGPUIR_HAVE_CUDA
# linked through SHLIB_LINK rather than OBJS: PGXS would want LLVM bitcode for OBJS
SHLIB_LINK += $(CUDA_OBJS) $(CUDA_LIBS)
HAVE_CUDA = 1
endif
endif
ifndef HAVE_CUDA
OBJS += cuda/gpuir_cuda_stub.o
endif

EXTRA_CLEAN = build tmp_check test/test_codec test/test_codec_scalar test/test_list test/test_window test/test_route test/test_merge_policy test/test_list_cache test/test_prune test/test_cuda_decode test/test_cuda_search test/test_cuda_layout test/test_decode_cache cuda/*.o

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies (without --enable-depend): every object
# of src/ depends on every header of src/, so a changed struct rebuilds its users
$(SRCS:.c=.o): $(wildcard src/*.h)

ifdef HAVE_CUDA
$(shlib): $(CUDA_OBJS)
endif

cuda/%.o: cuda/%.cu $(wildcard cuda/*.h cuda/*.cuh) src/gpuircodec.h src/gpuirlist.h
	$(NVCC) $(NVCC_FLAGS) -Isrc -c $< -o $@

$(OBJS): src/gpuir.h src/gpuircodec.h src/gpuirlist.h src/gpuirservice.h cuda/gpuir_cuda.h \
	src/gpuirmergepolicy.h src/gpuirroutemodel.h src/gpuirlistcachepolicy.h

installcheck: build/regress/sql

build/regress/sql:
	mkdir -p build/regress
	ln -sfn ../../sql_tests build/regress/sql
	ln -sfn ../../expected build/regress/expected

# prove_installcheck: PGXS's recipe of the same name (Makefile.global), as a
# target of its own; TAP_DIR (default: the source directory) receives
# tmp_check/ with the test clusters and logs, and must be writable by the
# user running the tests
TAP_DIR ?= $(CURDIR)
.PHONY: prove_installcheck
prove_installcheck:
	$(subst '$(CURDIR)'/tmp_check,'$(TAP_DIR)'/tmp_check,$(subst TESTDIR='$(CURDIR)',TESTDIR='$(TAP_DIR)',$(prove_installcheck)))

.PHONY: unittest
test/test_codec: test/test_codec.c test/test_util.h src/gpuircodec.c src/gpuircodec.h
	$(CC) -O2 -Wall -Wextra -o $@ test/test_codec.c src/gpuircodec.c
# the same checks over the codec's scalar loops (no SSE2)
test/test_codec_scalar: test/test_codec.c test/test_util.h src/gpuircodec.c src/gpuircodec.h
	$(CC) -O2 -Wall -Wextra -DGPUIR_CODEC_NO_SIMD -o $@ test/test_codec.c src/gpuircodec.c

# the posting-list module (encoder and the readers' checks)
test/test_list: test/test_list.c test/test_util.h src/gpuirlist.c src/gpuirlist.h src/gpuircodec.c \
		src/gpuircodec.h
	$(CC) -O2 -Wall -Wextra -o $@ test/test_list.c src/gpuirlist.c src/gpuircodec.c

# the docID windows and top-k merge of a search split over GPUs (host code)
test/test_window: test/test_window.c test/test_util.h test/ref_topk.h cuda/gpuir_cuda_window.c \
		cuda/gpuir_cuda_status.c cuda/gpuir_cuda.h
	$(CC) -O2 -Wall -Wextra -Isrc -Icuda -o $@ test/test_window.c cuda/gpuir_cuda_window.c \
		cuda/gpuir_cuda_status.c

# the cost model of gpuir.device = auto, with simulated device costs
test/test_route: test/test_route.c test/test_util.h src/gpuirroutemodel.h
	$(CC) -O2 -Wall -Wextra -Isrc -o $@ test/test_route.c -lm

# the merge policy, with simulated workloads
test/test_merge_policy: test/test_merge_policy.c test/test_util.h src/gpuirmergepolicy.h
	$(CC) -O2 -Wall -Wextra -Isrc -o $@ test/test_merge_policy.c -lm

# the device list cache's policy, with simulated workloads
test/test_list_cache: test/test_list_cache.c test/test_util.h src/gpuirlistcachepolicy.h
	$(CC) -O2 -Wall -Wextra -Isrc -o $@ test/test_list_cache.c -lm

# pruned posting lists: selection, encoding, and the exactness check against a reference
test/test_prune: test/test_prune.c test/test_util.h src/gpuirprune.c src/gpuirprune.h \
		src/gpuirlist.c src/gpuirlist.h src/gpuircodec.c src/gpuircodec.h
	$(CC) -O2 -Wall -Wextra -ffp-contract=off -Isrc -o $@ test/test_prune.c src/gpuirprune.c \
		src/gpuirlist.c src/gpuircodec.c -lm

UNITTESTS = test/test_codec test/test_codec_scalar test/test_list test/test_window test/test_route \
	test/test_merge_policy test/test_list_cache test/test_prune
ifdef HAVE_CUDA
ifneq ($(wildcard test/test_cuda_decode.c),)
# the decode kernel serves this test only: built here (with the flags of
# cuda/*.o), not into gpuir.so
test/cuda_decode_kernel.o: test/cuda_decode_kernel.cu test/cuda_decode_kernel.h \
		$(wildcard cuda/*.h cuda/*.cuh) src/gpuircodec.h src/gpuirlist.h
	$(NVCC) $(NVCC_FLAGS) -Isrc -c $< -o $@
test/test_cuda_decode: test/test_cuda_decode.c test/test_util.h test/test_size.h test/cuda_decode_kernel.h \
		test/cuda_decode_kernel.o src/gpuircodec.c $(CUDA_OBJS)
	$(CC) -O2 -Wall -Wextra -Isrc -Icuda -o $@ test/test_cuda_decode.c src/gpuircodec.c \
		cuda/gpuir_cuda_status.c test/cuda_decode_kernel.o $(CUDA_OBJS) $(CUDA_LIBS)
UNITTESTS += test/test_cuda_decode
endif
ifneq ($(wildcard test/test_cuda_search.c),)
# -ffp-contract=off: the CPU reference's BM25 must round like GpuirBM25
test/test_cuda_search: test/test_cuda_search.c test/test_util.h test/test_size.h test/ref_topk.h src/gpuircodec.c \
		src/gpuirlist.c src/gpuirlist.h $(CUDA_OBJS)
	$(CC) -O2 -Wall -Wextra -ffp-contract=off -Isrc -Icuda -o $@ test/test_cuda_search.c \
		src/gpuircodec.c src/gpuirlist.c cuda/gpuir_cuda_status.c cuda/gpuir_cuda_window.c \
		$(CUDA_OBJS) $(CUDA_LIBS) -lm
UNITTESTS += test/test_cuda_search
endif
# the device decoder's header rules against the CPU codec's, on the host
# (gpuir_block_layout is __host__ __device__): runs without a GPU
test/test_cuda_layout: test/test_cuda_layout.cu test/test_util.h $(wildcard cuda/*.h cuda/*.cuh) \
		src/gpuircodec.c src/gpuircodec.h
	$(CC) -O2 -Wall -Wextra -Isrc -c src/gpuircodec.c -o $@.codec.o
	$(NVCC) -O2 --std=c++17 -Xcompiler -Wall,-Wextra -Isrc -Icuda -Itest -o $@ $< $@.codec.o
	rm -f $@.codec.o
UNITTESTS += test/test_cuda_layout
# the decoded lists' ring and plan (cuda/gpuir_decode_cache.cuh), on the host:
# the area's allocations simulated, so no GPU is needed
test/test_decode_cache: test/test_decode_cache.cu test/test_util.h $(wildcard cuda/*.h cuda/*.cuh) \
		cuda/gpuir_cuda_status.c
	$(CC) -O2 -Wall -Wextra -Isrc -Icuda -c cuda/gpuir_cuda_status.c -o $@.status.o
	$(NVCC) -O2 --std=c++17 -Xcompiler -Wall,-Wextra -Isrc -Icuda -Itest -o $@ $< $@.status.o
	rm -f $@.status.o
UNITTESTS += test/test_decode_cache
endif

EXTRA_CLEAN += test/cuda_decode_kernel.o test/test_cuda_layout.codec.o test/test_decode_cache.status.o

unittest: $(UNITTESTS)
	@set -e; for t in $(UNITTESTS); do ./$$t; done

# ---- engine_bench's production CPU engine ----
#   make engine-cpu-check   engine_bench built without the kernels (with AddressSanitizer and
#                           UBSan where $(CC) has them) runs the production CPU engine
#                           (GpuirSearch on an index the production segment writer built:
#                           bench/engine/cpu_image.c, test/fuzz/pgshim.c) on a small synthetic
#                           corpus, in one segment and in four, every mode at k = 10 and 1000,
#                           and fails unless every checked query equals its exact reference
#                           (no GPU needed); then once with --cpu-flip-score, which must fail
.PHONY: engine-cpu-check
engine-cpu-check:
	@$(FUZZ_SAN_PROBE); \
	bin=build/engine_bench_cpu$${san:+_san}; \
	$(MAKE) -s -f bench/engine.mk NVCC= PG_CONFIG=$(PG_CONFIG) BIN=$$bin \
		OBJDIR=build/engine_cpu_obj$${san:+_san} \
		ENGINE_SAN="$${san:+-g -fno-omit-frame-pointer $$san}" $$bin || exit 1; \
	echo "engine-cpu-check: $$bin ($${san:-no sanitizers})"; \
	log=build/engine-cpu-check.log; rm -f $$log; rc=0; \
	run() { ASAN_OPTIONS=detect_leaks=0 $$bin --synthetic 20000 --docs 100000 --threads 2 \
		--k 10,1000 --check 100 --selfcheck 0 --cpu-engine 2 "$$@"; }; \
	for segdocs in 0 30000; do \
		run --cpu-seconds 0.2 --cpu-segment-docs $$segdocs >> $$log 2>&1 || rc=1; \
	done; \
	grep -E '^cpu engine|^engine_bench:|MISMATCH|ERROR|runtime error' $$log; \
	if [ $$rc -ne 0 ]; then echo "engine-cpu-check: failed; the log's end:"; tail -20 $$log; fi; \
	if run --cpu-seconds 0.05 --cpu-flip-score > $$log.flip 2>&1; then \
		echo "engine-cpu-check: a score with its lowest bit flipped passed the check"; rc=1; \
	elif ! grep -q 'cpu engine: MISMATCH' $$log.flip; then \
		echo "engine-cpu-check: the flipped scores stopped the run without a MISMATCH:"; \
		tail -20 $$log.flip; rc=1; \
	else echo "engine-cpu-check: scores with their lowest bit flipped fail the check, as they must"; fi; \
	echo "engine-cpu-check: exit status $$rc (log: $$log)"; exit $$rc

# ---- fuzzing (test/fuzz/) ----
#   make fuzz          libFuzzer targets (clang, ASan + UBSan): test/fuzz/fuzz_codec and
#                      fuzz_roundtrip (the block codec), fuzz_pages (the page readers,
#                      on index images); run e.g. test/fuzz/fuzz_pages test/fuzz/corpus/pages
#   make fuzz-replay   replay the kept corpus test/fuzz/corpus/* without libFuzzer
#                      ($(CC), ASan + UBSan when they work), as CI does
FUZZ_CC ?= clang
FUZZ_TARGETS = codec roundtrip pages
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_DEPS = test/fuzz/fuzz_common.h src/gpuircodec.c src/gpuircodec.h
FUZZ_BINS = $(FUZZ_TARGETS:%=test/fuzz/fuzz_%)
FUZZ_REPLAYS = $(FUZZ_TARGETS:%=test/fuzz/replay_%)
EXTRA_CLEAN += $(FUZZ_BINS) $(FUZZ_REPLAYS) test/fuzz/make_seeds
# the page readers are the real src/ files, on test/fuzz/pgshim.c's backend services
# (-include: scripts/test builds the other PostgreSQL versions and runs the TAP tests in
# copies of the tree without test/fuzz)
-include test/fuzz/pgshim.mk
FUZZ_PAGES_SRCS = $(PGSHIM_SRCS)
FUZZ_PAGES_DEPS = $(FUZZ_PAGES_SRCS) test/fuzz/pgshim.h src/gpuir.h src/gpuirservice.h src/gpuirlist.h \
	src/gpuircodec.h src/gpuirmergepolicy.h
FUZZ_PAGES_CFLAGS = -D_GNU_SOURCE -fno-strict-aliasing -fwrapv -Wno-unused-parameter \
	-Isrc -Itest/fuzz -I$(includedir_server)

.PHONY: fuzz fuzz-replay
fuzz: $(FUZZ_BINS)

# the probe: does $(CC) build and run a program with $(FUZZ_SAN)?
FUZZ_SAN_PROBE = san="$(FUZZ_SAN)"; mkdir -p build; \
	if ! { echo 'int main(void){return 0;}' | $(CC) $$san -x c - -o build/$(notdir $@).probe && ./build/$(notdir $@).probe; } >/dev/null 2>&1; then \
		echo "note: $(CC) $$san unavailable, building without sanitizers"; san=; fi; \
	rm -f build/$(notdir $@).probe

test/fuzz/fuzz_pages: test/fuzz/fuzz_pages.c $(FUZZ_PAGES_DEPS)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) -Wall -Wextra -Wno-ignored-attributes \
		$(FUZZ_PAGES_CFLAGS) -o $@ $< $(FUZZ_PAGES_SRCS) -lm

test/fuzz/replay_pages: test/fuzz/fuzz_pages.c test/fuzz/replay_main.c $(FUZZ_PAGES_DEPS)
	@$(FUZZ_SAN_PROBE); \
	echo "$(CC) -g -O1 -Wall -Wextra $$san $(FUZZ_PAGES_CFLAGS) -o $@ $< test/fuzz/replay_main.c $(FUZZ_PAGES_SRCS) -lm"; \
	$(CC) -g -O1 -Wall -Wextra $$san $(FUZZ_PAGES_CFLAGS) -o $@ $< test/fuzz/replay_main.c $(FUZZ_PAGES_SRCS) -lm

$(filter-out test/fuzz/fuzz_pages,$(FUZZ_BINS)): test/fuzz/fuzz_%: test/fuzz/fuzz_%.c $(FUZZ_DEPS)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) -Wall -Wextra -Isrc -o $@ $< src/gpuircodec.c

$(filter-out test/fuzz/replay_pages,$(FUZZ_REPLAYS)): test/fuzz/replay_%: test/fuzz/fuzz_%.c test/fuzz/replay_main.c $(FUZZ_DEPS)
	@$(FUZZ_SAN_PROBE); \
	echo "$(CC) -g -O1 -Wall -Wextra $$san -Isrc -o $@ $< test/fuzz/replay_main.c src/gpuircodec.c"; \
	$(CC) -g -O1 -Wall -Wextra $$san -Isrc -o $@ $< test/fuzz/replay_main.c src/gpuircodec.c

# one line per target, then "fuzz replay: N passed, M failed" over all of them
fuzz-replay: $(FUZZ_REPLAYS)
	@p=0; f=0; for t in $(FUZZ_TARGETS); do \
		out=$$(./test/fuzz/replay_$$t test/fuzz/corpus/$$t); rc=$$?; \
		echo "  $$t: $${out#fuzz replay: }"; \
		set -- $$(echo "$$out" | sed -n 's/^fuzz replay: \([0-9]*\) passed, \([0-9]*\) failed$$/\1 \2/p'); \
		p=$$((p + $${1:-0})); f=$$((f + $${2:-0})); \
		if [ $$rc -ne 0 ] && [ $${2:-0} -eq 0 ]; then f=$$((f + 1)); fi; \
	done; \
	echo "fuzz replay: $$p passed, $$f failed"; [ $$f -eq 0 ]
