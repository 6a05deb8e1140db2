/*
 * The floor of issue 6, in C: readdir /proc, then for every pid
 * open/read/close /proc/PID/stat (and, with "full", cmdline and cgroup too),
 * three system calls a file, into one reused buffer. Prints the
 * milliseconds of each of N scans, one per line. Built and run by
 * `make bench-compare`.
 *
 *	floor stat|full N
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	static const char *files[] = {"stat", "cmdline", "cgroup"};
	char path[300];
	if (argc != 3)
		return 2;
	int nfiles = strcmp(argv[1], "full") == 0 ? 3 : 1;
	int runs = atoi(argv[2]);
	for (int r = 0; r < runs; r++) {
		double t0 = now_ms();
		DIR *d = opendir("/proc");
		if (d == NULL)
			return 1;
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] < '1' || e->d_name[0] > '9')
				continue;
			for (int f = 0; f < nfiles; f++) {
				snprintf(path, sizeof path, "/proc/%s/%s", e->d_name, files[f]);
				int fd = open(path, O_RDONLY | O_CLOEXEC);
				if (fd < 0)
					continue;
				/* One read: these files render whole into a
				   buffer that holds them (proc/sys_read.go). A
				   process that exited meanwhile fails: normal. */
				ssize_t n = read(fd, buf, sizeof buf);
				(void)n;
				close(fd);
			}
		}
		closedir(d);
		printf("%.3f\n", now_ms() - t0);
	}
	return 0;
}
