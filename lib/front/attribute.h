/* Who holds each GPU process's memory: a running container (and its pod), a leftover of a
 * container whose init is gone, an MPS group's server, or the host (docs/metrics.md#owners).
 *
 * The container comes from the process's cgroup (container.h).  Whether that container still runs
 * comes from gpu-hook's record of it (podrecord.h: init pid and start time), else from its
 * runtime's state (init pid); with neither it is taken to run (state_known false).  The pod comes
 * from the record, else from the annotations of the bundle the runtime's state names.  A process
 * outside containers whose session is an MPS group's daemon's is that group's server: the group's
 * when the daemon runs, a stopped group's leftover when it does not. */
#ifndef GH_ATTRIBUTE_H
#define GH_ATTRIBUTE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "usage.h"

struct gh_attribution {
        const char *const *state_roots; /* extra runtime state directories (NULL-terminated, may be NULL) */
        const char *records_dir;        /* container records; NULL: none */
        const char *mps_dir;            /* MPS groups; NULL: none */
        bool collect;                   /* remove the records of containers that are gone and that no GPU
                                         * process claims (podrecord.h: gh_record_collect) */
};

struct gh_gpu_list;
/* Fills every GPU process's owner. */
void gh_usage_attribute(struct gh_gpu_list *list, const struct gh_attribution *a);

/* Attributes one process (an MPS client, say) the same way: 0, or -1 when it is gone. */
int gh_attribute_pid(pid_t pid, const struct gh_attribution *a, struct gh_proc_owner *out);

/* The processes of one container (or, with hosts, of the host: id "") on one GPU, summed. */
struct gh_container_sum {
        const struct gh_gpu *gpu;
        const struct gh_proc_owner *owner; /* its first process's: runtime, id, kind, pod */
        uint64_t memory;
        bool memory_known;
        int util; /* summed SM utilisation, at most 100; -1: no process had a sample */
        unsigned procs;
};
/* Every container's sums per GPU, in process order; with hosts, also one row per GPU for the
 * processes outside containers.  A malloc'ed array, NULL with *n = 0 when there is none. */
struct gh_container_sum *gh_usage_container_sums(const struct gh_gpu_list *list, bool hosts, size_t *n);

/* GPU memory that no running container owns, on one GPU, by whose it is. */
struct gh_unowned {
        uint64_t host, container_gone, mps_stopped; /* bytes */
        unsigned procs;
        bool known; /* false: a process of these did not say its memory (the sums are then low) */
};
void gh_usage_unowned(const struct gh_gpu *gpu, struct gh_unowned *u);

#endif
