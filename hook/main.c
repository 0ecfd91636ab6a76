/* gpu-hook: the OCI createRuntime/prestart hook. */
#include <stdio.h>
#include <string.h>

#include "gpuhook.h"

int main(int argc, char **argv)
{
        if (argc > 1 && strcmp(argv[1], "--version") == 0) {
                printf("gpu-hook %s\n", gpuhook_version());
                return 0;
        }
        fprintf(stderr, "Usage: gpu-hook [--config=FILE] [--debug=FILE] [--dry-run] createRuntime|prestart|poststart|poststop\n");
        return argc > 1 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
}
