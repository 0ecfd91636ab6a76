/* Helpers shared by the subcommands. */
#include "cli.h"
#include "request.h"
#include "statecache.h"

int cli_request_init(struct gh_request *req, const struct cli_globals *g, gh_error_t *err)
{
        req->uid = g->uid;
        req->gid = g->gid;
        req->state_file = g->state_file;
        req->cache = g->state_file ? &gh_statecache : NULL;
        return 0;
}
