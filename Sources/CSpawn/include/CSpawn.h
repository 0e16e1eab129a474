#ifndef CSPAWN_H
#define CSPAWN_H
#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+), which Swift's Glibc module hides
/// behind _GNU_SOURCE: the child closes every descriptor from `lowfd` up.
int cspawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int lowfd);

#endif
