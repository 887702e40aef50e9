// The decoder worker's sandbox calls: prctl and syscall are variadic, unshare and
// posix_spawn_file_actions_addclosefrom_np need _GNU_SOURCE. Each forwards unchanged.
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/seccomp.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include "CAttachFetchShims.h"

int af_prctl_set_no_new_privs(void) {
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

int af_prctl_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0);
}

int af_seccomp_set_filter_all_threads(struct sock_filter *instructions, unsigned short count) {
    struct sock_fprog program = { .len = count, .filter = instructions };
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
}

static volatile int af_forbidden_call_fd = -1, af_forbidden_call_status = 1;

static void af_forbidden_call(int signal, siginfo_t *info, void *context) {
    (void)signal;
    (void)context;
    unsigned int number = (unsigned int)info->si_syscall;
    unsigned char frame[9] = { 5, 0, 0, 0, 0xC5, number & 0xFF, (number >> 8) & 0xFF, (number >> 16) & 0xFF, (number >> 24) & 0xFF };
    ssize_t written = write(af_forbidden_call_fd, frame, sizeof frame);
    (void)written;
    _exit(af_forbidden_call_status);
}

int af_report_forbidden_calls(int fd, int status) {
    af_forbidden_call_fd = fd;
    af_forbidden_call_status = status;
    struct sigaction action = { 0 };
    action.sa_sigaction = af_forbidden_call;
    action.sa_flags = SA_SIGINFO;
    sigfillset(&action.sa_mask);
    return sigaction(SIGSYS, &action, NULL);
}

int af_unshare(int flags) {
    return unshare(flags);
}

int af_spawn_close_from(void *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np((posix_spawn_file_actions_t *)actions, lowest);
}

int af_prctl_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0);
}

int af_prctl_drop_bounding_capability(int capability) {
    return prctl(PR_CAPBSET_DROP, capability, 0, 0, 0);
}

int af_prctl_clear_ambient_capabilities(void) {
    return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

int af_capset_none(void) {
    struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
    return (int)syscall(SYS_capset, &header, data);
}

int af_prctl_set_name(const char *name) {
    return prctl(PR_SET_NAME, name, 0, 0, 0);
}

int af_socketpair_stream_cloexec(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
}

int af_socketpair_seqpacket_cloexec(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds);
}

int af_fork_as_sibling(void) {
    return (int)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, NULL, NULL, 0);
}

int af_close_from(int lowest) {
    return close_range((unsigned int)lowest, ~0U, 0);
}

// Landlock (linux/landlock.h; no libc wrappers): the syscalls, as they are.
long af_landlock_abi(void) {
    return syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
}

// struct landlock_ruleset_attr as Linux 6.12 has it: Debian 12's headers stop at the first field.
struct af_landlock_ruleset_attr {
    unsigned long long handled_access_fs;
    unsigned long long handled_access_net;
    unsigned long long scoped;
};

int af_landlock_create_ruleset(unsigned long long handled_access_fs, unsigned long long handled_access_net,
                               unsigned long long scoped, unsigned long attribute_size) {
    struct af_landlock_ruleset_attr attributes = {
        .handled_access_fs = handled_access_fs, .handled_access_net = handled_access_net, .scoped = scoped };
    return (int)syscall(__NR_landlock_create_ruleset, &attributes, attribute_size, 0);
}

int af_landlock_add_path_rule(int ruleset, int parent, unsigned long long allowed_access) {
    struct landlock_path_beneath_attr rule = { .allowed_access = allowed_access, .parent_fd = parent };
    return (int)syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
}

int af_landlock_restrict_self(int ruleset) {
    return (int)syscall(__NR_landlock_restrict_self, ruleset, 0);
}

// O_PATH and dladdr are behind _GNU_SOURCE, which Swift's Glibc does not define.
int af_open_path(const char *path) {
    return open(path, O_PATH | O_CLOEXEC);
}

const char *af_loaded_file_of(const void *address) {
    Dl_info info;
    return dladdr(address, &info) != 0 ? info.dli_fname : NULL;
}

int af_built_with_address_sanitizer(void) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#endif
    return 0;
}
