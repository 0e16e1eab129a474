#define _GNU_SOURCE
#include "CSpawn.h"

int cspawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int lowfd) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowfd);
}
