/* dcgm-exporter's HPC job mapping files, written from our attribution, so that dcgm-exporter users
 * see which containers use a GPU as its hpc_job label.
 *
 * dcgm-exporter (DCGM_HPC_JOB_MAPPING_DIR, --hpc-job-mapping-dir) reads, at every scrape, each file
 * of that directory named by a GPU index and takes each of its lines as a job id: every series of
 * that GPU is then written once per job, labelled hpc_job="<line>" (a line with a space is "job
 * user" to newer versions).  Here a job is a running container with a process on the GPU: its pod
 * as NAMESPACE/POD when its record names one, else its container id; no whitespace.  A GPU without
 * one has no file: an empty file would make dcgm-exporter drop the GPU's series. */
#ifndef GH_HPCJOBS_H
#define GH_HPCJOBS_H

#include <stddef.h>

#include "error.h"
#include "gpus.h"
#include "usage.h"

/* The job id of a container (buf of at least 2 * GH_POD_FIELD_MAX bytes). */
void gh_hpc_job_id(const struct gh_proc_owner *o, char *buf, size_t size);

/* Rewrites the files of dir (created 0755 when missing, its parent must exist) from list, whose
 * processes are attributed: one file per GPU in use, each written whole (0644); every other file of
 * dir named by a number is removed.  The directory must be gpu-cli's alone. */
int gh_hpc_jobs_write(const char *dir, const struct gh_gpu_list *list, gh_error_t *err);

#endif
