/* Finding the command and the bundle in a runc command line, and nothing more: every argument is
 * passed on to the real runtime as it came.
 *
 * runc (urfave/cli over Go's flag package) accepts -name, --name, -name=value and --name value;
 * crun takes the same long options.  Only the options that take a value need to be known, so that
 * a value is not mistaken for the command. */
#include <string.h>

#include "cleanup.h"
#include "runtime.h"

/* Global options of runc and crun that take a separate value. */
static const char *const global_value_opts[] = {
        "root", "log", "log-format", "log-level", "criu", "rootless", "cgroup-manager",
};

/* create/run options that take a separate value. */
static const char *const create_value_opts[] = {
        "bundle", "b", "console-socket", "pid-file", "preserve-fds",
};

static bool in(const char *name, size_t len, const char *const *set, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (strlen(set[i]) == len && strncmp(set[i], name, len) == 0)
                        return true;
        return false;
}

/* "--name=value" or "-name": the name without dashes, its length, and the value after '=' or NULL. */
static const char *option_name(const char *arg, size_t *len, const char **value)
{
        const char *name = arg + (arg[1] == '-' ? 2 : 1);
        const char *eq = strchr(name, '=');

        *len = eq ? (size_t) (eq - name) : strlen(name);
        *value = eq ? eq + 1 : NULL;
        return name;
}

void gh_rt_args_scan(int argc, char **argv, struct gh_rt_args *a)
{
        int i;

        memset(a, 0, sizeof(*a));
        for (i = 1; i < argc; i++) {
                const char *name, *value;
                size_t len;

                if (argv[i][0] != '-' || argv[i][1] == '\0')
                        break;
                if (strcmp(argv[i], "--") == 0) {
                        i++;
                        break;
                }
                name = option_name(argv[i], &len, &value);
                if (!in(name, len, global_value_opts, GH_ARRAY_SIZE(global_value_opts)))
                        continue;
                if (value == NULL && i + 1 < argc)
                        value = argv[++i];
                if (len == 3 && strncmp(name, "log", 3) == 0)
                        a->log = value;
                else if (len == 10 && strncmp(name, "log-format", 10) == 0)
                        a->log_json = value != NULL && strcmp(value, "json") == 0;
        }
        if (i >= argc)
                return;
        a->command = i;
        if (!gh_rt_is_create(a, argv))
                return;
        for (i++; i < argc; i++) {
                const char *name, *value;
                size_t len;

                if (argv[i][0] != '-' || argv[i][1] == '\0')
                        continue; /* the container id */
                if (strcmp(argv[i], "--") == 0)
                        break;
                name = option_name(argv[i], &len, &value);
                if (!in(name, len, create_value_opts, GH_ARRAY_SIZE(create_value_opts)))
                        continue;
                if (value == NULL && i + 1 < argc)
                        value = argv[++i];
                if ((len == 6 && strncmp(name, "bundle", 6) == 0) || (len == 1 && name[0] == 'b'))
                        a->bundle = value;
        }
}

bool gh_rt_is_create(const struct gh_rt_args *a, char **argv)
{
        return a->command > 0 && (strcmp(argv[a->command], "create") == 0 || strcmp(argv[a->command], "run") == 0);
}
