/* gpu-cli metrics' text (exposition.h).
 *
 * dcgm-exporter's names, units, HELP texts and labels are copied as its default counters write
 * them (gpu, UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION; framebuffer in
 * MiB, power in W, clocks in MHz), so that dashboards built on them (Grafana's 12239, say) and
 * their alerts work unchanged.  Per container there is no DCGM field: those series are ours,
 * labelled like DCGM's GPU series plus the container. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "exposition.h"
#include "hookconfig.h"
#include "snapshot.h"
#include "utf8.h"

/* A label: name="value", the value valid UTF-8 without control characters (a scrape with one bad
 * byte is refused whole) and with backslash, double quote (and newline, never left) escaped. */
static void label(FILE *f, const char *name, const char *value, bool first)
{
        char clean[1024];

        gh_utf8_clean(clean, sizeof(clean), value, strlen(value));
        fprintf(f, "%s%s=\"", first ? "" : ",", name);
        for (const char *p = clean; *p; p++) {
                if (*p == '\\' || *p == '"')
                        fputc('\\', f);
                fputc(*p, f);
        }
        fputc('"', f);
}

static void header(FILE *f, const char *name, const char *help)
{
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

void cli_nvml_busid(const char *busid, char *buf, size_t size)
{
        const char *colon = strchr(busid, ':');
        unsigned long domain = strtoul(busid, NULL, 16);
        size_t o;

        if (colon == NULL) {
                snprintf(buf, size, "%s", busid);
                return;
        }
        o = (size_t) snprintf(buf, size, "%08lX", domain);
        for (const char *p = colon; *p && o + 1 < size; p++)
                buf[o++] = (char) toupper((unsigned char) *p);
        if (o < size)
                buf[o] = '\0';
}

/* ---- gpu-hook's names ---- */

static void gpuhook_gpu_labels(FILE *f, const struct gh_gpu *g)
{
        fprintf(f, "{gpu=\"%u\"", g->index);
        label(f, "uuid", g->uuid, false);
        label(f, "model", g->model, false);
        fputc('}', f);
}

/* pod, namespace and container_name, where the container's record or bundle names them */
static void pod_labels(FILE *f, const struct gh_proc_owner *o, const char *container_label)
{
        if (o->pod.name[0])
                label(f, "pod", o->pod.name, false);
        if (o->pod.namespace_[0])
                label(f, "namespace", o->pod.namespace_, false);
        if (o->pod.container[0])
                label(f, container_label, o->pod.container, false);
}

static const struct {
        const char *owner;
        enum gh_owner_kind kind;
} unowned_kinds[] = {
        { "host", GH_OWNER_HOST },
        { "container-gone", GH_OWNER_CONTAINER_GONE },
        { "mps-stopped", GH_OWNER_MPS_STOPPED },
};

static uint64_t unowned_part(const struct gh_unowned *u, enum gh_owner_kind kind)
{
        return kind == GH_OWNER_CONTAINER_GONE ? u->container_gone
               : kind == GH_OWNER_MPS_STOPPED  ? u->mps_stopped
                                               : u->host;
}

static void write_gpuhook(const struct gh_gpu_list *list, const struct gh_container_sum *sums, size_t n, FILE *f)
{
        static const struct {
                const char *name, *help;
        } gpu_metrics[] = {
                { "gpuhook_gpu_utilization_percent",
                  "Percent of time a kernel ran on the GPU over the last sample period." },
                { "gpuhook_gpu_memory_used_bytes", "GPU memory in use." },
                { "gpuhook_gpu_memory_total_bytes", "GPU memory installed." },
                { "gpuhook_gpu_temperature_celsius", "GPU core temperature." },
                { "gpuhook_gpu_power_watts", "GPU power draw." },
        };
        for (size_t m = 0; m < GH_ARRAY_SIZE(gpu_metrics); m++) {
                header(f, gpu_metrics[m].name, gpu_metrics[m].help);
                for (size_t g = 0; g < list->n; g++) {
                        const struct gh_gpu_usage *u = list->gpus[g].usage;
                        char value[32] = "";
                        switch (m) {
                        case 0:
                                if (u->gpu_util >= 0)
                                        snprintf(value, sizeof(value), "%d", u->gpu_util);
                                break;
                        case 1:
                                if (u->mem_used != GH_UNKNOWN_U64)
                                        snprintf(value, sizeof(value), "%" PRIu64, u->mem_used);
                                break;
                        case 2:
                                if (u->mem_total != GH_UNKNOWN_U64)
                                        snprintf(value, sizeof(value), "%" PRIu64, u->mem_total);
                                break;
                        case 3:
                                if (u->temperature_c >= 0)
                                        snprintf(value, sizeof(value), "%d", u->temperature_c);
                                break;
                        case 4:
                                if (u->power_mw >= 0)
                                        snprintf(value, sizeof(value), "%d.%03d", u->power_mw / 1000,
                                                 u->power_mw % 1000);
                                break;
                        default: break;
                        }
                        if (value[0] == '\0')
                                continue;
                        fputs(gpu_metrics[m].name, f);
                        gpuhook_gpu_labels(f, &list->gpus[g]);
                        fprintf(f, " %s\n", value);
                }
        }
        static const struct {
                const char *name, *help;
        } per_container[] = {
                { "gpuhook_container_gpu_memory_used_bytes",
                  "GPU memory used by the processes of a container (runtime \"host\": outside containers)." },
                { "gpuhook_container_gpu_utilization_percent",
                  "Summed SM utilisation of a container's processes on the GPU, at most 100." },
                { "gpuhook_container_gpu_processes", "Processes of a container using the GPU." },
        };
        for (size_t m = 0; m < GH_ARRAY_SIZE(per_container); m++) {
                header(f, per_container[m].name, per_container[m].help);
                for (size_t k = 0; k < n; k++) {
                        const struct gh_container_sum *s = &sums[k];
                        const struct gh_proc_owner *o = s->owner;
                        if ((m == 0 && !s->memory_known) || (m == 1 && s->util < 0))
                                continue;
                        fprintf(f, "%s{gpu=\"%u\"", per_container[m].name, s->gpu->index);
                        label(f, "uuid", s->gpu->uuid, false);
                        label(f, "runtime", o->in_container ? o->runtime : "host", false);
                        label(f, "container_id", o->in_container ? o->id : "", false);
                        pod_labels(f, o, "container_name");
                        if (m == 0)
                                fprintf(f, "} %" PRIu64 "\n", s->memory);
                        else
                                fprintf(f, "} %d\n", m == 1 ? s->util : (int) s->procs);
                }
        }
        header(f, "gpuhook_gpu_memory_unowned_bytes",
               "GPU memory of processes no running container owns: host processes, leftovers of containers whose "
               "init is gone, MPS servers of stopped groups.");
        for (size_t g = 0; g < list->n; g++) {
                struct gh_unowned u;
                gh_usage_unowned(&list->gpus[g], &u);
                for (size_t i = 0; u.known && i < GH_ARRAY_SIZE(unowned_kinds); i++) {
                        fprintf(f, "gpuhook_gpu_memory_unowned_bytes{gpu=\"%u\"", list->gpus[g].index);
                        label(f, "uuid", list->gpus[g].uuid, false);
                        label(f, "owner", unowned_kinds[i].owner, false);
                        fprintf(f, "} %" PRIu64 "\n", unowned_part(&u, unowned_kinds[i].kind));
                }
        }
}

/* ---- dcgm-exporter's names ---- */

static void dcgm_labels(FILE *f, const struct gh_gpu_list *list, const struct gh_gpu *g, const char *hostname)
{
        char device[32], busid[48];

        snprintf(device, sizeof(device), "nvidia%u", g->minor);
        cli_nvml_busid(g->busid, busid, sizeof(busid));
        fprintf(f, "{gpu=\"%u\"", g->index);
        label(f, "UUID", g->uuid, false);
        label(f, "pci_bus_id", busid, false);
        label(f, "device", device, false);
        label(f, "modelName", g->model, false);
        label(f, "Hostname", hostname, false);
        label(f, "DCGM_FI_DRIVER_VERSION", list->driver_version, false);
}

static void write_dcgm(const struct gh_gpu_list *list, const struct gh_container_sum *sums, size_t n,
                       const char *hostname, FILE *f)
{
        /* in dcgm-exporter's order (its default counters), with its help texts */
        static const struct {
                const char *name, *help;
        } fields[] = {
                { "DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)." },
                { "DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz)." },
                { "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)." },
                { "DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)." },
                { "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)." },
                { "DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %)." },
                { "DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)." },
                { "DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)." },
        };
        for (size_t m = 0; m < GH_ARRAY_SIZE(fields); m++) {
                header(f, fields[m].name, fields[m].help);
                for (size_t g = 0; g < list->n; g++) {
                        const struct gh_gpu_usage *u = list->gpus[g].usage;
                        char value[32] = "";
                        switch (m) {
                        case 0:
                                if (u->sm_clock_mhz >= 0)
                                        snprintf(value, sizeof(value), "%d", u->sm_clock_mhz);
                                break;
                        case 1:
                                if (u->mem_clock_mhz >= 0)
                                        snprintf(value, sizeof(value), "%d", u->mem_clock_mhz);
                                break;
                        case 2:
                                if (u->temperature_c >= 0)
                                        snprintf(value, sizeof(value), "%d", u->temperature_c);
                                break;
                        case 3:
                                if (u->power_mw >= 0)
                                        snprintf(value, sizeof(value), "%d.%03d", u->power_mw / 1000,
                                                 u->power_mw % 1000);
                                break;
                        case 4:
                                if (u->gpu_util >= 0)
                                        snprintf(value, sizeof(value), "%d", u->gpu_util);
                                break;
                        case 5:
                                if (u->mem_util >= 0)
                                        snprintf(value, sizeof(value), "%d", u->mem_util);
                                break;
                        case 6:
                                if (u->mem_free != GH_UNKNOWN_U64)
                                        snprintf(value, sizeof(value), "%" PRIu64, u->mem_free >> 20);
                                break;
                        case 7:
                                if (u->mem_used != GH_UNKNOWN_U64)
                                        snprintf(value, sizeof(value), "%" PRIu64, u->mem_used >> 20);
                                break;
                        default: break;
                        }
                        if (value[0] == '\0')
                                continue;
                        fputs(fields[m].name, f);
                        dcgm_labels(f, list, &list->gpus[g], hostname);
                        fprintf(f, "} %s\n", value);
                }
        }
        static const struct {
                const char *name, *help;
        } per_container[] = {
                { "gpuhook_container_fb_used", "Framebuffer memory used by a container's processes (in MiB)." },
                { "gpuhook_container_sm_util", "Summed SM utilization of a container's processes (in %)." },
                { "gpuhook_container_processes", "Processes of a container using the GPU." },
        };
        for (size_t m = 0; m < GH_ARRAY_SIZE(per_container); m++) {
                header(f, per_container[m].name, per_container[m].help);
                for (size_t k = 0; k < n; k++) {
                        const struct gh_container_sum *s = &sums[k];
                        if ((m == 0 && !s->memory_known) || (m == 1 && s->util < 0) || !s->owner->in_container)
                                continue;
                        fputs(per_container[m].name, f);
                        dcgm_labels(f, list, s->gpu, hostname);
                        label(f, "container", s->owner->id, false);
                        label(f, "runtime", s->owner->runtime, false);
                        pod_labels(f, s->owner, "container_name");
                        if (m == 0)
                                fprintf(f, "} %" PRIu64 "\n", s->memory >> 20);
                        else
                                fprintf(f, "} %d\n", m == 1 ? s->util : (int) s->procs);
                }
        }
        header(f, "gpuhook_fb_unowned",
               "Framebuffer memory of processes no running container owns (in MiB), by owner: host, "
               "container-gone, mps-stopped.");
        for (size_t g = 0; g < list->n; g++) {
                struct gh_unowned u;
                gh_usage_unowned(&list->gpus[g], &u);
                for (size_t i = 0; u.known && i < GH_ARRAY_SIZE(unowned_kinds); i++) {
                        fputs("gpuhook_fb_unowned", f);
                        dcgm_labels(f, list, &list->gpus[g], hostname);
                        label(f, "owner", unowned_kinds[i].owner, false);
                        fprintf(f, "} %" PRIu64 "\n", unowned_part(&u, unowned_kinds[i].kind) >> 20);
                }
        }
}

void cli_write_metrics(const struct gh_gpu_list *list, const struct cli_exposition *o, FILE *f)
{
        size_t n = 0;
        _cleanup_free_ struct gh_container_sum *sums = gh_usage_container_sums(list, true, &n);

        if (o->names != GH_METRICS_DCGM)
                write_gpuhook(list, sums, n, f);
        if (o->names != GH_METRICS_GPUHOOK)
                write_dcgm(list, sums, n, o->hostname, f);
}
