// malloc_trace.c: an LD_PRELOAD allocation tracer for measuring what a server allocates, by thread and
// call site. Diagnostic only (slow: one write(2) and one backtrace per call); not part of the product.
//
//   cc -O1 -shared -fPIC -o /tmp/malloc_trace.so bench/tools/malloc_trace.c
//   MT_LOG=/tmp/trace.log LD_PRELOAD=/tmp/malloc_trace.so ./spout ...
//
// Each call appends one line to $MT_LOG:  op tid t_ns ptr size oldptr pc1 pc2 ... (hex pcs, innermost
// first, up to MT_DEPTH frames, default 14). op is m (malloc), c (calloc), r (realloc), a (aligned), f (free).
// Writing "info" into the file $MT_LOG.ctl makes a helper thread append malloc_info(3)'s XML to
// $MT_LOG.info, preceded by a line "mark t_ns"; "mark" writes just the mark line into $MT_LOG.
#define _GNU_SOURCE
#include <execinfo.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static int log_fd = -1;
static int depth = 14;
static char ctl_path[512];
static char info_path[512];
static __thread int inside;
static atomic_int ready;
static FILE *info_file;  // opened by the constructor, so the helper thread never allocates

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void record(char op, void *ptr, size_t size, void *old) {
    if (log_fd < 0 || inside || !atomic_load_explicit(&ready, memory_order_relaxed)) return;
    inside = 1;
    void *pcs[64];
    int n = 0;
    if (op != 'f') n = backtrace(pcs, depth + 2);
    char line[2048];
    int len = snprintf(line, sizeof line, "%c %ld %llu %lx %zu %lx", op, (long)syscall(SYS_gettid),
                       (unsigned long long)now_ns(), (unsigned long)ptr, size, (unsigned long)old);
    for (int i = 2; i < n && len < (int)sizeof line - 24; i++)  // skip record() and the hook itself
        len += snprintf(line + len, sizeof line - len, " %lx", (unsigned long)pcs[i]);
    line[len++] = '\n';
    (void)!write(log_fd, line, len);
    inside = 0;
}

void *malloc(size_t size) {
    void *p = __libc_malloc(size);
    record('m', p, size, 0);
    return p;
}
void free(void *p) {
    if (!p) return;
    record('f', p, 0, 0);
    __libc_free(p);
}
void *calloc(size_t n, size_t size) {
    void *p = __libc_calloc(n, size);
    record('c', p, n * size, 0);
    return p;
}
void *realloc(void *old, size_t size) {
    void *p = __libc_realloc(old, size);
    record('r', p, size, old);
    return p;
}
int posix_memalign(void **out, size_t alignment, size_t size) {
    void *p = __libc_memalign(alignment, size);
    if (!p) return 12;
    *out = p;
    record('a', p, size, 0);
    return 0;
}
void *aligned_alloc(size_t alignment, size_t size) {
    void *p = __libc_memalign(alignment, size);
    record('a', p, size, 0);
    return p;
}
void *memalign(size_t alignment, size_t size) {
    void *p = __libc_memalign(alignment, size);
    record('a', p, size, 0);
    return p;
}

static void *control(void *unused) {
    (void)unused;
    inside = 1;  // this thread's own allocations are not traced
    for (;;) {
        usleep(20000);
        int fd = open(ctl_path, O_RDONLY);
        if (fd < 0) continue;
        char cmd[16] = {0};
        (void)!read(fd, cmd, sizeof cmd - 1);
        close(fd);
        unlink(ctl_path);
        char line[64];
        int len = snprintf(line, sizeof line, "mark %llu\n", (unsigned long long)now_ns());
        (void)!write(log_fd, line, len);
        if (strncmp(cmd, "info", 4) == 0) {
            if (info_file) {
                fputs(line, info_file);
                malloc_info(0, info_file);
                fflush(info_file);
            }
        }
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    const char *path = getenv("MT_LOG");
    if (!path) return;
    const char *d = getenv("MT_DEPTH");
    if (d) depth = atoi(d) > 0 && atoi(d) < 60 ? atoi(d) : depth;
    snprintf(ctl_path, sizeof ctl_path, "%s.ctl", path);
    snprintf(info_path, sizeof info_path, "%s.info", path);
    inside = 1;
    void *warm[4];
    backtrace(warm, 4);  // loads the unwinder now, not inside a traced call
    static char info_buffer[1 << 16];
    info_file = fopen(info_path, "w");
    if (info_file) setvbuf(info_file, info_buffer, _IOFBF, sizeof info_buffer);
    log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    pthread_t t;
    pthread_create(&t, NULL, control, NULL);
    pthread_detach(t);
    inside = 0;
    atomic_store(&ready, 1);
}
