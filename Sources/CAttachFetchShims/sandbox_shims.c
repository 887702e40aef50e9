// The decoder worker's sandbox calls: prctl is variadic, unshare, close_range and
// posix_spawn_file_actions_addclosefrom_np need _GNU_SOURCE. Each forwards unchanged.
#define _GNU_SOURCE
#include <sched.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/seccomp.h>
#include "CAttachFetchShims.h"

int af_prctl_set_no_new_privs(void) {
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

int af_prctl_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0);
}

int af_prctl_set_seccomp_filter(struct sock_filter *instructions, unsigned short count) {
    struct sock_fprog program = { .len = count, .filter = instructions };
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0);
}

int af_unshare(int flags) {
    return unshare(flags);
}

int af_spawn_close_from(void *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np((posix_spawn_file_actions_t *)actions, lowest);
}

int af_close_from(int lowest) {
    return close_range((unsigned int)lowest, ~0U, 0);
}

int af_prctl_set_name(const char *name) {
    return prctl(PR_SET_NAME, name, 0, 0, 0);
}

int af_socketpair_stream_cloexec(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
}
