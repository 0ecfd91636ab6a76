/* gpu-cli: inspect the NVIDIA driver and inject it into containers. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "gpuhook.h"

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] COMMAND [OPTIONS]\n"
                "\n"
                "Commands:\n"
                "  info        show the driver and the GPUs\n"
                "  list        list the host files a container would get\n"
                "  configure   inject the driver into a container\n"
                "\n"
                "Global options:\n"
                "  -h, --help      show this help\n"
                "  -V, --version   show the version\n");
}

int main(int argc, char **argv)
{
        if (argc > 1 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
                printf("gpu-cli %s\n", gpuhook_version());
                return 0;
        }
        if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
                usage(stdout);
                return 0;
        }
        usage(stderr);
        return 2;
}
