/* Handing a hook's work on to gpu-cli.  A static program (nvidia-cdi-hook, gpu-cdi-hook) loads no
 * driver library: its dlopen would need the glibc it was linked with (gh_service_can_load).  When
 * the driver-state cache cannot answer what a check needs, the check is run again by gpu-cli, a
 * dynamic program, with the OCI state this process already read from stdin kept in a memfd. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"
#include "config.h" /* the build's: GPUHOOK_CLI_PATH */

int cli_self_path(char *buf, size_t size)
{
        ssize_t n = readlink("/proc/self/exe", buf, size - 1);

        if (n <= 0)
                return -1;
        buf[n] = '\0';
        return 0;
}

int cli_state_keep(int *fd)
{
        char buf[65536];
        ssize_t n;
        int m = memfd_create("oci-state", MFD_CLOEXEC);

        if (m < 0)
                return -1;
        while ((n = read(*fd, buf, sizeof(buf))) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 || write(m, buf, (size_t) n) != n) {
                        int e = n < 0 ? errno : EIO;
                        close(m);
                        errno = e;
                        return -1;
                }
        }
        if (lseek(m, 0, SEEK_SET) < 0) {
                int e = errno;
                close(m);
                errno = e;
                return -1;
        }
        *fd = m;
        return m;
}

void cli_gpu_cli_path(char *buf, size_t size)
{
        if (gh_beside_self("gpu-cli", buf, size) < 0)
                snprintf(buf, size, "%s", GPUHOOK_CLI_PATH);
}

int cli_exec_gpu_cli(const char *cli, char *const *argv, int state)
{
        if (state >= 0 && (lseek(state, 0, SEEK_SET) < 0 || dup2(state, STDIN_FILENO) < 0))
                return -1;
        execv(cli, argv);
        return -1;
}

int cli_cdi_hook_path(char *buf, size_t size)
{
        char self[PATH_MAX];

        if (gh_beside_self("gpu-cdi-hook", buf, size) == 0)
                return 0;
        if (snprintf(buf, size, "%s", GPUHOOK_CDI_HOOK_PATH) < (int) size && access(buf, X_OK) == 0)
                return 0;
        if (cli_self_path(self, sizeof(self)) < 0)
                return -1;
        if (snprintf(buf, size, "%s", self) >= (int) size)
                return errno = ENAMETOOLONG, -1;
        return 0;
}
