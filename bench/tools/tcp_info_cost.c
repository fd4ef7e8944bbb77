// tcp_info_cost: what one getsockopt(TCP_INFO) costs, the call the dead-peer check makes per open stream every
// channels.deadPeerSeconds / 8 (bench/README.md, "Channels at scale, second round"). A loopback connection
// (127.0.0.1 only), N calls on the accepted end, wall and CPU time per call.
// Build and run: gcc -O2 -o /tmp/tcp_info_cost bench/tools/tcp_info_cost.c && /tmp/tcp_info_cost [N]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 1) ||
        getsockname(listener, (struct sockaddr *)&address, &length)) {
        perror("listen");
        return 1;
    }
    int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(client, (struct sockaddr *)&address, sizeof address)) {
        perror("connect");
        return 1;
    }
    int server = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    struct tcp_info info;
    double wall0 = now(), cpu0 = cpu();
    for (long i = 0; i < n; i++) {
        socklen_t size = sizeof info;
        if (getsockopt(server, IPPROTO_TCP, TCP_INFO, &info, &size)) {
            perror("getsockopt");
            return 1;
        }
    }
    double wall = now() - wall0, used = cpu() - cpu0;
    printf("tcp_info calls: %ld\ntcp_info wall_ns_per_call: %.0f\ntcp_info cpu_ns_per_call: %.0f\n", n,
           wall / n * 1e9, used / n * 1e9);
    close(client);
    close(server);
    close(listener);
    return 0;
}
