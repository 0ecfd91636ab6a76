/* The container's environment (process.env) turned into a decision: is this a GPU container, which
 * devices, capabilities, requirements, MIG and IMEX requests.  docs/environment.md is the contract; every
 * rule is applied here so that the hook's front end and its dry run cannot disagree.
 *
 * Nothing here touches the driver: devices are requested items (gh_select_parse), not resolved
 * GPUs, and requirements are parsed for syntax only; gpu-cli configure resolves and checks them. */
#ifndef GH_ENV_H
#define GH_ENV_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "hookconfig.h"
#include "oci.h"
#include "request.h"
#include "select.h"

/* An NVIDIA_* value longer than this is refused: every real one is a few hundred bytes, and the
 * values end up in gpu-cli's argv. */
#define GH_ENV_VALUE_MAX 65536
/* Requirements and IMEX channels: the request's limits (request.h), so that what a dry run accepts
 * gpu-cli accepts too. */
#define GH_ENV_MAX_REQUIREMENTS GH_REQUEST_MAX_REQUIREMENTS
#define GH_ENV_MAX_IMEX_CHANNELS GH_REQUEST_MAX_IMEX_CHANNELS

/* Where the device list came from (for logs and messages). */
enum gh_env_devices_source {
        GH_DEVICES_NONE,          /* nothing requested: not a GPU container */
        GH_DEVICES_ENV,           /* NVIDIA_VISIBLE_DEVICES */
        GH_DEVICES_LEGACY,        /* unset on a legacy CUDA image: all */
        GH_DEVICES_SWARM,         /* a swarm-resource variable */
        GH_DEVICES_VOLUME_MOUNTS, /* /dev/null mounted on /var/run/nvidia-container-devices/<id> */
};

struct gh_env_decision {
        bool gpu_container;
        bool legacy_image; /* CUDA_VERSION set, NVIDIA_REQUIRE_CUDA empty */
        bool privileged;
        bool ignored_unprivileged; /* a device request was dropped by the privilege gate */
        enum gh_env_devices_source source;
        struct gh_select_request devices; /* parsed, not resolved */
        unsigned capabilities;            /* GH_CAP_* with implications applied */
        char **requirements;              /* NULL-terminated */
        size_t n_requirements;
        bool mig_config;  /* NVIDIA_MIG_CONFIG_DEVICES=all */
        bool mig_monitor; /* NVIDIA_MIG_MONITOR_DEVICES=all */
        unsigned *imex_channels;
        size_t n_imex_channels;
        char *mps_group;   /* the MPS group to join: annotation, or the env var when the config allows */
        bool mps_from_env; /* it came from GPU_HOOK_MPS_GROUP */
};

/* The variable by which an image could ask for an MPS group: honoured only with the config key
 * accept-mps-group-envvar (images choose their environment; orchestrators set annotations). */
#define GH_ENV_MPS_GROUP "GPU_HOOK_MPS_GROUP"

/* Applies docs/environment.md to spec's environment under cfg's policy.  A non-GPU container is not an
 * error: d->gpu_container is false and nothing else is filled. */
int gh_env_decide(const struct gh_oci_spec *spec, const struct gh_config *cfg, struct gh_env_decision *d,
                  gh_error_t *err);
void gh_env_decision_free(struct gh_env_decision *d);

/* Only the requirements part of the decision (legacy_image, requirements), whatever the device
 * variables say: what a CDI spec's check-requirements hook checks, where the devices come from
 * the spec and NVIDIA_VISIBLE_DEVICES is usually "void". */
int gh_env_requirements(const struct gh_oci_spec *spec, const struct gh_config *cfg, struct gh_env_decision *d,
                        gh_error_t *err);

/* The request a GPU container's decision makes (what gpu-hook passes to gpu-cli configure, and
 * what gpu-cli doctor compares a running container against), under cfg's cli and mps settings. */
struct gh_request;
int gh_env_request(const struct gh_config *cfg, const struct gh_env_decision *d, struct gh_request *req,
                   gh_error_t *err);

/* The documented dry-run object: {"gpu_container", "devices", "capabilities", "requirements",
 * "mig_config", "mig_monitor", "imex_channels", "rootfs", "pid"}.  NULL on out of memory. */
json_t *gh_env_decision_json(const struct gh_env_decision *d, const char *rootfs, pid_t pid);

/* "11.6", "v9.0.116", "12" -> "MAJOR.MINOR" (semver rules: no leading zeros, pre-release and
 * build suffixes only after a patch number).  -1 when malformed. */
int gh_env_cuda_major_minor(const char *version, char *out, size_t size);

/* NVIDIA_DISABLE_REQUIRE spellings: 1 t T TRUE true True (anything else is false, as NVIDIA's). */
bool gh_env_parse_bool(const char *s);

#endif
