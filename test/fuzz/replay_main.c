/*
 * replay_main.c: run a fuzz target's LLVMFuzzerTestOneInput over every file
 * of the corpus directories (or files) named on the command line, without
 * libFuzzer, so CI can replay the kept corpus with gcc.  Each input runs in
 * a child process, so one crash does not hide the others, and fails when it
 * takes more than REPLAY_TIMEOUT seconds.
 *
 * Prints "fuzz replay: N passed, M failed" and exits non-zero if M > 0 or
 * no input was found.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* seconds one input may take (libFuzzer's default -timeout is 1200) */
#define REPLAY_TIMEOUT 60

static int	passed = 0;
static int	failed = 0;

static void
run_file(const char *path)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *buf;
	long		len;
	pid_t		pid;
	int			status;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
		fseek(f, 0, SEEK_SET) != 0)
	{
		fprintf(stderr, "FAIL %s: cannot read\n", path);
		failed++;
		if (f)
			fclose(f);
		return;
	}
	/* exactly len bytes, like libFuzzer, so ASan sees overreads */
	buf = malloc(len ? (size_t) len : 1);
	if (len && fread(buf, 1, (size_t) len, f) != (size_t) len)
	{
		fprintf(stderr, "FAIL %s: short read\n", path);
		failed++;
		fclose(f);
		free(buf);
		return;
	}
	fclose(f);
	fflush(NULL);
	pid = fork();
	if (pid == 0)
	{
		/* a hang fails like a crash (libFuzzer's -timeout); SIGALRM kills */
		alarm(REPLAY_TIMEOUT);
		LLVMFuzzerTestOneInput(buf, (size_t) len);
		_exit(0);
	}
	free(buf);
	if (pid < 0 || waitpid(pid, &status, 0) < 0 ||
		!WIFEXITED(status) || WEXITSTATUS(status) != 0)
	{
		fprintf(stderr, "FAIL %s\n", path);
		failed++;
	}
	else
		passed++;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
run_path(const char *path)
{
	struct stat st;
	DIR		   *dir;
	struct dirent *de;
	char	  **names = NULL;
	size_t		nnames = 0;

	if (stat(path, &st) != 0)
	{
		fprintf(stderr, "FAIL %s: not found\n", path);
		failed++;
		return;
	}
	if (!S_ISDIR(st.st_mode))
	{
		run_file(path);
		return;
	}
	dir = opendir(path);
	if (!dir)
	{
		fprintf(stderr, "FAIL %s: cannot open\n", path);
		failed++;
		return;
	}
	while ((de = readdir(dir)) != NULL)
	{
		if (de->d_name[0] == '.')
			continue;
		names = realloc(names, (nnames + 1) * sizeof(char *));
		names[nnames] = malloc(strlen(path) + strlen(de->d_name) + 2);
		sprintf(names[nnames], "%s/%s", path, de->d_name);
		nnames++;
	}
	closedir(dir);
	if (nnames > 1)
		qsort(names, nnames, sizeof(char *), cmp_names);
	for (size_t i = 0; i < nnames; i++)
	{
		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
			run_file(names[i]);
		free(names[i]);
	}
	free(names);
}

int
main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		run_path(argv[i]);
	printf("fuzz replay: %d passed, %d failed\n", passed, failed);
	return (failed == 0 && passed > 0) ? 0 : 1;
}
