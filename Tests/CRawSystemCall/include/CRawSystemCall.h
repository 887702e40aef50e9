#ifndef C_RAW_SYSTEM_CALL_H
#define C_RAW_SYSTEM_CALL_H

// syscall(2) with up to five arguments (variadic in C): for the decoder sandbox's check, which
// must make calls glibc has no wrapper for (io_uring_setup, clone3) or would not pass as made.
long af_test_syscall(long number, long a, long b, long c, long d, long e);

#endif
