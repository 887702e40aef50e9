#ifndef C_RAW_SYSTEM_CALL_H
#define C_RAW_SYSTEM_CALL_H

// syscall(2) with up to five arguments (variadic in C): for the decoder sandbox's check, which
// must make calls glibc has no wrapper for (io_uring_setup, clone3) or would not pass as made.
long af_test_syscall(long number, long a, long b, long c, long d, long e);

// sigaction(2) with a handler that counts each delivery of `signal` (SA_RESTART: the process's
// other calls go on): a test's evidence of whether a worker's signal reached this process.
int af_test_count_signal(int signal);
// How many signals that handler has counted, over every signal it was installed for.
long af_test_signals_counted(void);

#endif
