// renameat2 is declared by glibc only under _GNU_SOURCE, which Swift's Glibc module does not
// define, so Swift cannot see it. Forwarded unchanged, with RENAME_NOREPLACE fixed.
#define _GNU_SOURCE
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include "CAttachFetchShims.h"

int af_rename_noreplace(const char *from, const char *to) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}

#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

// open(2) with O_TMPFILE, which glibc defines only under _GNU_SOURCE.
int af_open_unnamed(const char *directory, int mode) {
    return open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
}

// linkat(2) following the source's magic link (/proc/self/fd/N): how an O_TMPFILE file gets
// its name without CAP_DAC_READ_SEARCH (open(2), "O_TMPFILE").
int af_link_following(const char *from, const char *to) {
    return linkat(AT_FDCWD, from, AT_FDCWD, to, AT_SYMLINK_FOLLOW);
}

// A control buffer for SCM_RIGHTS: the union aligns it for the struct cmsghdr that CMSG_FIRSTHDR
// points into it (a plain char array need not be; cmsg(3) declares it this way).
typedef union {
    char buffer[CMSG_SPACE(sizeof(int) * AF_MAX_PASSED_DESCRIPTORS)];
    struct cmsghdr align;
} af_control_buffer;
_Static_assert(_Alignof(af_control_buffer) >= _Alignof(struct cmsghdr), "control buffer not aligned for cmsghdr");

// sendmsg(2) with descriptors as SCM_RIGHTS (CMSG_* are macros Swift cannot call).
ssize_t af_send_with_descriptors(int socket, const void *bytes, size_t count, const int *descriptors, int descriptor_count) {
    struct iovec vector = { .iov_base = (void *)bytes, .iov_len = count };
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1 };
    af_control_buffer control;
    if (descriptor_count > 0) {
        if (descriptor_count > AF_MAX_PASSED_DESCRIPTORS) { errno = EINVAL; return -1; }
        memset(&control, 0, sizeof control);
        message.msg_control = control.buffer;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * descriptor_count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * descriptor_count);
        memcpy(CMSG_DATA(header), descriptors, sizeof(int) * descriptor_count);
    }
    return sendmsg(socket, &message, MSG_NOSIGNAL);
}

// recvmsg(2) taking any SCM_RIGHTS descriptors (close-on-exec) into `descriptors`.
ssize_t af_receive_with_descriptors(int socket, void *bytes, size_t count, int *descriptors, int *descriptor_count) {
    struct iovec vector = { .iov_base = bytes, .iov_len = count };
    af_control_buffer control;
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof control.buffer };
    ssize_t got = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    *descriptor_count = 0;
    if (got < 0) return got;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
            if (*descriptor_count < AF_MAX_PASSED_DESCRIPTORS) descriptors[(*descriptor_count)++] = fd; else close(fd);
        }
    }
    return got;
}
