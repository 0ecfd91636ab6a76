/* nvidia-cdi-hook, the program: NVIDIA's hook command line on its own (cli/nvhook.c), for the
 * name on PATH that Docker and NVIDIA-written CDI specs look for.  argv[0] nvidia-ctk gives the
 * `nvidia-ctk hook` form. */
#include "cli.h"

int main(int argc, char **argv)
{
        cli_hook_environment();
        return cli_nvhook(argc, argv, "/");
}
