/* Configuring in gpu-hook's own process: the request gpu-hook decided goes to gh_configure()
 * (lib/core/configure.c), the code `gpu-cli configure --pid` runs too, with the same phases and
 * capability sets per phase (core/caps.h).  What stays a separate process stays one: the driver
 * service child (NVML) is forked, chrooted and stripped of every privilege by the core, a host
 * ldconfig (cli.ldconfig) runs in its sandbox.  Running it here instead of exec'ing gpu-cli saves a
 * process start, dynamic loading and an exit for every GPU container (about 0.9 ms on the H200);
 * "cli": {"exec": true} brings the exec back (spawn.c).  A static gpu-hook (hook/meson.build) loads
 * no driver library: when the driver-state cache cannot answer what a start needs from NVML or
 * libcuda, the driver service child it forks execs `gpu-cli driver-service` ("cli.path"), which
 * sandboxes itself and loads them, as the child of a dynamic program does without the exec. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configure.h"
#include "hook.h"
#include "log.h"

int gh_hook_configure(const struct gh_config *cfg, struct gh_request *req, pid_t pid, const char *rootfs,
                      bool debug_open, struct gh_configure_timings *t, gh_error_t *err)
{
        const struct gh_configure_opts o = {
                .pid = pid, .rootfs = rootfs, .root = cfg->cli.root, .ldcache = cfg->cli.ldcache, .req = req
        };

        memset(t, 0, sizeof(*t));
        gh_config_request_setup(cfg, req);
        /* "cli.debug" is gpu-cli's debug file; here it is ours, unless --debug already opened one. */
        if (!debug_open && cfg->cli.debug != NULL && gh_log_open(cfg->cli.debug, true) < 0)
                return gh_err(
                        err, errno,
                        "cannot open the debug file %s (\"cli.debug\" in the gpu-hook configuration): pass a writable path",
                        cfg->cli.debug);
        /* What runs from here (the driver service child, a sandboxed ldconfig) sees the environment
         * an exec'd gpu-cli got: PATH alone, never the one the runtime handed the hook. */
        if (clearenv() != 0 || setenv("PATH", GH_HOOK_CHILD_PATH + strlen("PATH="), 1) < 0)
                return gh_err(err, ENOMEM, "clearing the environment");
        return gh_configure(&o, t, err);
}
