#ifndef CSPAWN_H
#define CSPAWN_H
#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+), which Swift's Glibc module hides
/// behind _GNU_SOURCE: the child closes every descriptor from `lowfd` up.
int cspawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int lowfd);

/// pidfd_open(2) (Linux 5.3+): a descriptor that becomes readable when the process exits, so a
/// hook's thread can sleep in poll() until its hook ends or its time is up. -1 and errno on failure.
int cspawn_pidfd_open(pid_t pid);

#endif
