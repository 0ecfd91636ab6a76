/* Container records: what gpu-hook saw of a GPU container at its start that /proc cannot tell later,
 * kept so that ps, top, metrics and doctor can name the container's pod without asking the kubelet.
 *
 * CRI runtimes put the pod into the container's OCI annotations: containerd's CRI plugin
 * io.kubernetes.cri.sandbox-name, .sandbox-namespace, .sandbox-uid and .container-name; CRI-O
 * io.kubernetes.pod.name, .pod.namespace, .pod.uid and io.kubernetes.container.name.  The hook
 * writes one small file per container, <dir>/<container id> (docs/metrics.md#container-records):
 *
 *   gpu-hook-record=1, id, pid (the container's init on the host), starttime (its /proc start time,
 *   so that a reused pid is not taken for it), pod, namespace, container, pod_uid
 *
 * The directory (default GH_RECORD_DEFAULT_DIR) is root's alone (0700), each file 0600, written
 * whole and renamed (util/file.h).  Values are cut to GH_POD_FIELD_MAX - 1 bytes and have no
 * control character.  A record goes when the container does: gpu-hook's poststop stage removes it
 * where the runtime runs one, and every reader removes the records whose container's init is gone
 * (unless a GPU process still claims the container: then it is the evidence of a leftover).  So
 * that records of containers nobody looks at cannot pile up, the hook collects them too once the
 * directory holds more than GH_RECORD_COLLECT_AT entries, and writes none past GH_RECORD_MAX. */
#ifndef GH_PODRECORD_H
#define GH_PODRECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "jsonread.h"
#include "usage.h"

#define GH_RECORD_DEFAULT_DIR "/run/gpu-hook/containers"
#define GH_RECORD_FILE_MAX 4096
#define GH_RECORD_COLLECT_AT 1024
#define GH_RECORD_MAX 8192

/* The annotations CRI runtimes set (containerd's CRI plugin, then CRI-O's). */
#define GH_ANNOTATION_CRI_POD_NAME "io.kubernetes.cri.sandbox-name"
#define GH_ANNOTATION_CRI_POD_NAMESPACE "io.kubernetes.cri.sandbox-namespace"
#define GH_ANNOTATION_CRI_POD_UID "io.kubernetes.cri.sandbox-uid"
#define GH_ANNOTATION_CRI_CONTAINER_NAME "io.kubernetes.cri.container-name"
#define GH_ANNOTATION_CRIO_POD_NAME "io.kubernetes.pod.name"
#define GH_ANNOTATION_CRIO_POD_NAMESPACE "io.kubernetes.pod.namespace"
#define GH_ANNOTATION_CRIO_POD_UID "io.kubernetes.pod.uid"
#define GH_ANNOTATION_CRIO_CONTAINER_NAME "io.kubernetes.container.name"

struct gh_record {
        char id[GH_CONTAINER_ID_MAX];
        pid_t pid;
        unsigned long long starttime;
        struct gh_pod pod;
};

/* Copies len bytes of src into dst (size bytes, NUL-terminated) as util/utf8.h's gh_utf8_clean
 * does: valid UTF-8, cut on a character boundary to fit, control characters replaced by '?'. */
void gh_pod_clean(char *dst, size_t size, const char *src, size_t len);

/* The pod of node annotations of a config.json read with lib/core/jsonread.h (NULL, -1 or not an
 * object: none).  Returns true when it named a pod or a container. */
bool gh_pod_from_annotations(const struct gh_json *doc, int annotations, struct gh_pod *pod);

/* Opens the record directory (O_PATH).  A directory that is not ours is refused.  create (the
 * hook): makes it (0700; a missing parent 0755) when it is not there, and tightens one of ours that
 * is more open to 0700.  Otherwise (readers) nothing changes, and one that group or others may
 * write is refused. */
int gh_record_dir_open(const char *dir, bool create, gh_error_t *err);

/* The hook's part: writes r in dir, collecting first when the directory is large; fails without
 * writing when GH_RECORD_MAX records are left after that. */
int gh_record_save(const char *dir, const struct gh_record *r, gh_error_t *err);

/* One record: 1 with *r filled, 0 when there is none, -1 when it cannot be read or is not a record
 * of ours (a file we did not write: another owner, group or other write, too big, bad content). */
int gh_record_load(int dirfd, const char *id, struct gh_record *r, gh_error_t *err);

/* Removes id's record; none is no error. */
int gh_record_remove(int dirfd, const char *id, gh_error_t *err);

/* The container's init still runs (same pid, same start time). */
bool gh_record_running(const struct gh_record *r);

/* Removes every record whose container's init is gone, except those keep() says a GPU process
 * still claims (keep may be NULL).  Returns the number of records left, -1 on error. */
long gh_record_collect(int dirfd, bool (*keep)(const char *id, void *data), void *data, gh_error_t *err);

#endif
