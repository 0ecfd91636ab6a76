/* A running MPS group's clients (mps-clients.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capability.h"
#include "cleanup.h"
#include "container.h"
#include "driver.h"
#include "mps-clients.h"
#include "mps-daemon.h"
#include "proc.h"
#include "strutil.h"

int gh_mps_clients(const char *dir, const char *name, const char *control, pid_t **pids, size_t *n, gh_error_t *err)
{
        _cleanup_free_ char *servers = NULL;
        char *save = NULL;

        *pids = NULL;
        *n = 0;
        if (gh_mps_control(dir, name, control, "get_server_list\n", &servers, err) < 0)
                return -1;
        for (char *s = servers, *tok; (tok = strtok_r(s, " \t\n", &save)) != NULL; s = NULL) {
                _cleanup_free_ char *clients = NULL;
                _cleanup_error_ gh_error_t e = NULL;
                char cmd[64], *save2 = NULL;
                pid_t server;
                if (gh_parse_pid(tok, &server) < 0)
                        continue;
                snprintf(cmd, sizeof(cmd), "get_client_list %d\n", (int) server);
                if (gh_mps_control(dir, name, control, cmd, &clients, &e) < 0)
                        continue; /* the server went away meanwhile */
                for (char *c = clients, *t; (t = strtok_r(c, " \t\n", &save2)) != NULL; c = NULL) {
                        pid_t pid;
                        if (gh_parse_pid(t, &pid) < 0)
                                continue;
                        pid_t *grown = realloc(*pids, (*n + 1) * sizeof(pid_t));
                        if (grown == NULL) {
                                free(*pids);
                                *pids = NULL;
                                *n = 0;
                                return gh_err(err, ENOMEM, "listing the clients of MPS group '%s'", name);
                        }
                        *pids = grown;
                        (*pids)[(*n)++] = pid;
                }
        }
        return 0;
}

int gh_mps_find_control(int rootfd, const char *root, const char *ldcache, char **path, gh_error_t *err)
{
        struct gh_driver_opts o = { .caps = GH_CAP_COMPUTE,
                                    .ldcache = ldcache,
                                    .no_persistenced = true,
                                    .no_fabricmanager = true,
                                    .no_gsp_firmware = true };
        struct gh_driver *drv = NULL;
        int r = -1;

        *path = NULL;
        if (gh_driver_discover(rootfd, &o, &drv, err) < 0)
                return -1;
        for (size_t i = 0; i < drv->bins.n; i++) {
                const char *p = drv->bins.v[i].path;
                if (strcmp(gh_base_name(p), GH_MPS_CONTROL) == 0) {
                        r = asprintf(path, "%s%s", strcmp(root, "/") == 0 ? "" : root, p) < 0 ? -1 : 0;
                        break;
                }
        }
        gh_driver_free(drv);
        if (r < 0 && *path == NULL)
                return gh_err(err, 0,
                              "the driver under %s has no " GH_MPS_CONTROL "; install the driver's MPS programs", root);
        return r;
}

int gh_mps_usage_load(const struct gh_attribution *a, const char *control, struct gh_mps_usage **out, size_t *nout,
                      gh_error_t *err)
{
        const char *dir = a->mps_dir;
        _cleanup_free_ struct gh_mps_group *groups = NULL;
        struct gh_mps_usage *rows;
        size_t n = 0;

        *out = NULL;
        *nout = 0;
        if (gh_mps_list(dir, &groups, &n, err) < 0)
                return -1;
        if (n == 0)
                return 0;
        rows = calloc(n, sizeof(*rows));
        if (rows == NULL)
                return gh_err(err, ENOMEM, "listing MPS groups");
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ pid_t *pids = NULL;
                _cleanup_error_ gh_error_t e = NULL;
                size_t np = 0;
                rows[i].group = groups[i];
                if (!groups[i].alive || control == NULL ||
                    gh_mps_clients(dir, groups[i].name, control, &pids, &np, &e) < 0 || np == 0)
                        continue;
                rows[i].clients = calloc(np, sizeof(struct gh_mps_client));
                if (rows[i].clients == NULL) {
                        gh_mps_usage_free(rows, n);
                        return gh_err(err, ENOMEM, "listing the clients of MPS group '%s'", groups[i].name);
                }
                for (size_t k = 0; k < np; k++) {
                        struct gh_mps_client *c = &rows[i].clients[rows[i].n];
                        c->pid = pids[k];
                        if (gh_attribute_pid(pids[k], a, &c->owner) < 0)
                                continue; /* gone meanwhile */
                        rows[i].n++;
                }
        }
        *out = rows;
        *nout = n;
        return 0;
}

void gh_mps_usage_free(struct gh_mps_usage *u, size_t n)
{
        for (size_t i = 0; u && i < n; i++)
                free(u[i].clients);
        free(u);
}
