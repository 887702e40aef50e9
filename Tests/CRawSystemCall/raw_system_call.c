#define _GNU_SOURCE
#include "CRawSystemCall.h"
#include <unistd.h>
#include <sys/syscall.h>

long af_test_syscall(long number, long a, long b, long c, long d, long e) {
    return syscall(number, a, b, c, d, e);
}

#include <signal.h>
#include <stdatomic.h>

static atomic_long af_test_counted;

static void af_test_count(int signal) {
    (void)signal;
    atomic_fetch_add(&af_test_counted, 1);
}

int af_test_count_signal(int signal) {
    struct sigaction action = {0};
    action.sa_handler = af_test_count;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    return sigaction(signal, &action, NULL);
}

long af_test_signals_counted(void) {
    return atomic_load(&af_test_counted);
}
