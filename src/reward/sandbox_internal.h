/* Private pieces shared by the sandbox's source files. */
#ifndef OR1_SANDBOX_INTERNAL_H
#define OR1_SANDBOX_INTERNAL_H

#include "or1/sandbox.h"

#include <linux/filter.h>
#include <sys/types.h>

/* The seccomp program every sandboxed process installs, built once (NULL with an error if
 * libseccomp failed). Built in the parent because the child may not allocate. */
const struct sock_fprog *or1_sandbox_seccomp(void);

/* A user id no other live run of this process uses (root modes only), and its release. */
uid_t or1_sandbox_uid_acquire(void);
void or1_sandbox_uid_release(uid_t uid);

/* The Python harness that wraps untrusted code (code_driver.py, compiled in). */
extern const char or1_code_driver_py[];

#endif
