/*
 * The floor of issue 6, in C: readdir /proc, then for every pid
 * open/read/close /proc/PID/stat (and, with "full", cmdline and cgroup too),
 * three system calls a file, into one reused buffer. "same" reads what a
 * sandtop cold scan reads: stat, cmdline, status and cgroup, and the exe
 * and cwd links. Prints the milliseconds of each of N scans, one per line:
 * wall, then CPU (on a loaded machine, CPU is the figure to compare).
 * Built and run by `make bench-compare`.
 *
 *	floor stat|full|same N
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double clock_ms(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double now_ms(void) { return clock_ms(CLOCK_MONOTONIC); }
static double cpu_ms(void) { return clock_ms(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	static char link[4096];
	static const char *files[] = {"stat", "cmdline", "cgroup", "status"};
	static const char *links[] = {"exe", "cwd"};
	char path[300];
	if (argc != 3)
		return 2;
	int same = strcmp(argv[1], "same") == 0;
	int nfiles = same ? 4 : strcmp(argv[1], "full") == 0 ? 3 : 1;
	int nlinks = same ? 2 : 0;
	int runs = atoi(argv[2]);
	for (int r = 0; r < runs; r++) {
		double t0 = now_ms(), c0 = cpu_ms();
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
			for (int l = 0; l < nlinks; l++) {
				snprintf(path, sizeof path, "/proc/%s/%s", e->d_name, links[l]);
				ssize_t n = readlink(path, link, sizeof link);
				(void)n;
			}
		}
		closedir(d);
		printf("%.3f %.3f\n", now_ms() - t0, cpu_ms() - c0);
	}
	return 0;
}
