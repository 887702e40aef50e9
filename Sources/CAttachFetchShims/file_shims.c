// renameat2 is declared by glibc only under _GNU_SOURCE, which Swift's Glibc module does not
// define, so Swift cannot see it. Forwarded unchanged, with RENAME_NOREPLACE fixed.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include "CAttachFetchShims.h"

int af_rename_noreplace(const char *from, const char *to) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}
