#define _GNU_SOURCE
#include "CRawSystemCall.h"
#include <unistd.h>
#include <sys/syscall.h>

long af_test_syscall(long number, long a, long b, long c, long d, long e) {
    return syscall(number, a, b, c, d, e);
}
