/* The driver's other programs (nvidia-debugdump, nvidia-persistenced, nvidia-cuda-mps-control,
 * ...): gpu-hook only has to find and inject them as ELF binaries, so they just say who they are. */
#include <stdio.h>
#include <string.h>

#ifndef FAKE_TOOL
#error "build with -DFAKE_TOOL=\"name\" -DFAKE_VERSION=\"x.y.z\""
#endif

int main(int argc, char **argv)
{
        printf("%s %s (fake driver)\n", FAKE_TOOL, FAKE_VERSION);
        return 0;
}
