// The file, descriptor and sandbox calls Swift cannot make: variadic ones (prctl), and those
// glibc declares only under _GNU_SOURCE. Each forwards unchanged. There is no logic here on
// purpose. libcurl's and libvips' shims are CCurlShims and CVipsShims.
#ifndef C_ATTACH_FETCH_SHIMS_H
#define C_ATTACH_FETCH_SHIMS_H

#include <sys/types.h>
#include <linux/filter.h>
#include <malloc.h>  // malloc_trim: Swift's Glibc module does not include malloc.h

// MARK: files
// renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE): a move that never replaces a file.
int af_rename_noreplace(const char *from, const char *to);
// open(O_TMPFILE | O_RDWR | O_CLOEXEC) in `directory`: a file with no name (_GNU_SOURCE only).
int af_open_unnamed(const char *directory, int mode);
// linkat(AT_SYMLINK_FOLLOW): names an unnamed file through its /proc/self/fd link.
int af_link_following(const char *from, const char *to);

// MARK: descriptors over a socket (SCM_RIGHTS; the CMSG_* macros are not callable from Swift)
#define AF_MAX_PASSED_DESCRIPTORS 4
ssize_t af_send_with_descriptors(int socket, const void *bytes, size_t count, const int *descriptors, int descriptor_count);
ssize_t af_receive_with_descriptors(int socket, void *bytes, size_t count, int *descriptors, int *descriptor_count);

// MARK: decoder worker sandbox
// prctl is variadic: one shim per option the decoder worker sets.
// PR_SET_NO_NEW_PRIVS: no exec can ever gain privileges (and seccomp needs it unprivileged).
int af_prctl_set_no_new_privs(void);
// PR_SET_PDEATHSIG: the worker is killed when the thread that started it ends.
int af_prctl_set_parent_death_signal(int signal);
// seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC): installs a classic-BPF
// system-call filter on every thread of the process (glibc has no wrapper; syscall is variadic).
int af_seccomp_set_filter_all_threads(struct sock_filter *instructions, unsigned short count);
/// Makes SIGSYS (a call the seccomp filter traps) write the call's number to `fd` as one frame,
/// 0xC5 and the number, 4 bytes little-endian each after the length (DecoderWorker.ForbiddenCall),
/// and end the process with `status`. In C: a signal handler may make only async-signal-safe calls.
int af_report_forbidden_calls(int fd, int status);
// unshare is declared only under _GNU_SOURCE, which Swift's Glibc module does not define.
int af_unshare(int flags);
// Landlock: the highest ABI the kernel has (negative: none), a ruleset handling these
// file-system rights, network rights (ABI 4) and scopes (ABI 6), passing the first
// `attribute_size` bytes of the attribute (8, 16 or 24: an older kernel refuses fields it does
// not know), a rule allowing rights beneath a directory opened O_PATH, enforcement.
long af_landlock_abi(void);
int af_landlock_create_ruleset(unsigned long long handled_access_fs, unsigned long long handled_access_net,
                               unsigned long long scoped, unsigned long attribute_size);
int af_landlock_add_path_rule(int ruleset, int parent, unsigned long long allowed_access);
int af_landlock_restrict_self(int ruleset);
// open(path, O_PATH | O_CLOEXEC), and the file a loaded address belongs to (dladdr).
int af_open_path(const char *path);
const char *af_loaded_file_of(const void *address);
// PR_SET_DUMPABLE: 0 makes the process's memory, descriptors and environment in /proc
// (ptrace's access check) closed to every process without CAP_SYS_PTRACE.
int af_prctl_set_dumpable(int dumpable);
// PR_CAPBSET_DROP: the capability can never be gained again, by exec or otherwise.
int af_prctl_drop_bounding_capability(int capability);
// PR_CAP_AMBIENT with PR_CAP_AMBIENT_CLEAR_ALL.
int af_prctl_clear_ambient_capabilities(void);
// capset(2) with every set empty (glibc has no wrapper; syscall is variadic).
int af_capset_none(void);

// socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC): Swift sees <sys/socket.h>'s SOCK_* constants
// only through whichever module includes that header first, so it cannot name them reliably.
int af_socketpair_stream_cloexec(int fds[2]);
// socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC): each send is one message, whole, so that
// threads may send on it at once without a lock (the fork server's requests).
int af_socketpair_seqpacket_cloexec(int fds[2]);
// clone(CLONE_PARENT | SIGCHLD): fork(), with the new process a child of this one's parent (the
// fork server's worker is the pipeline's child, which reaps it and reads how it ended). glibc's
// fork() takes no flags; this runs no atfork handlers (the fork server is single-threaded).
int af_fork_as_sibling(void);
// close_range(lowest, ~0U, 0): every descriptor from `lowest` up (declared under _GNU_SOURCE).
int af_close_from(int lowest);
// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+) is declared only under _GNU_SOURCE:
// the worker inherits no descriptor of the pipeline's but its socket.
int af_spawn_close_from(void *actions, int lowest);
// PR_SET_NAME (prctl is variadic): a forked worker carries the program's name and takes the
// spawned worker's; threads name themselves with it too (as ps and the tests see them, 15
// characters kept).
int af_prctl_set_name(const char *name);
// 1 when this code was compiled with AddressSanitizer (SwiftPM's --sanitize=address builds the
// C targets with it too): a build's property, never a run-time lookup a loaded library could
// satisfy.
int af_built_with_address_sanitizer(void);

#endif
