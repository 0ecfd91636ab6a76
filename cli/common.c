/* Helpers shared by the subcommands. */
#include "cli.h"
#include "driver.h"
#include "request.h"
#include "require.h"

int cli_request_init(struct gh_request *req, const struct cli_globals *g, gh_error_t *err)
{
        req->uid = g->uid;
        req->gid = g->gid;
        return 0;
}

int cli_exit_status(const struct gpuhook_error *err)
{
        if (err == NULL)
                return CLI_EXIT_FAILURE;
        if (err->code == GH_DRIVER_ENODRIVER)
                return CLI_EXIT_NO_DRIVER;
        if (err->code == GH_REQUIRE_UNMET)
                return CLI_EXIT_REQUIREMENT;
        return CLI_EXIT_FAILURE;
}
