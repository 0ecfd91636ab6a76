/* gpu-hook's configuration file.  A refusal says why; an accepted file never leaves a relative
 * path where gpu-cli or its root is expected, nor a capability outside the seven. */
#include <stdint.h>
#include <stdlib.h>

#include "capability.h"
#include "cleanup.h"
#include "hookconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_config cfg;

        if (size > GH_CONFIG_MAX || gh_config_init(&cfg, NULL) < 0)
                return 0;
        if (gh_config_parse(&cfg, (const char *) data, size, "fuzz", &err) < 0) {
                if (err == NULL || err->msg == NULL)
                        abort();
        } else {
                if (cfg.cli.root == NULL || cfg.cli.root[0] != '/' || cfg.cli.path == NULL || cfg.cli.path[0] != '/')
                        abort();
                if (cfg.supported_caps & ~GH_CAP_ALL)
                        abort();
                if (cfg.cli.ldconfig && cfg.cli.ldconfig[cfg.cli.ldconfig[0] == '@'] != '/')
                        abort();
        }
        gh_config_free(&cfg);
        return 0;
}
