# test/fuzz/pgshim.mk: the src/ files that run on test/fuzz/pgshim.c's backend
# services, one list for both of its builds: the page fuzzer and its replay
# (the main Makefile's fuzz_pages, replay_pages) and engine_bench's
# production CPU engine (bench/engine.mk's cpu_image.o, -DPGSHIM_ENGINE,
# which adds src/gpuirfree.c for the segment writer's free space map)
PGSHIM_SRCS = test/fuzz/pgshim.c src/gpuirutils.c src/gpuirbuffer.c src/gpuirquery.c \
	src/gpuirmerge.c src/gpuirengine.c src/gpuirlist.c src/gpuirlistread.c \
	src/gpuirsegment.c src/gpuirverify.c src/gpuircodec.c
