/* Fake nvidia-smi: loads libnvidia-ml.so.1 by SONAME (no rpath), like the real one, so it works in
 * a container only if the injected NVML and device nodes are right.  Supports -L, the default
 * summary, --version and --query-gpu=...  --format=csv[,noheader]. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml-api.h"

static struct {
        nvmlReturn_t (*init)(void);
        nvmlReturn_t (*shutdown)(void);
        const char *(*error_string)(nvmlReturn_t);
        nvmlReturn_t (*driver_version)(char *, unsigned int);
        nvmlReturn_t (*cuda_version)(int *);
        nvmlReturn_t (*count)(unsigned int *);
        nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t *);
        nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
        nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
        nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
        nvmlReturn_t (*cc)(nvmlDevice_t, int *, int *);
        nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned int *, unsigned int *);
        nvmlReturn_t (*max_mig)(nvmlDevice_t, unsigned int *);
        nvmlReturn_t (*mig_by_index)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
} nvml;

static char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
static int cuda_version;

static void load_nvml(void)
{
        void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        struct {
                void **slot;
                const char *symbol;
        } syms[] = {
                { (void **) &nvml.init, "nvmlInit_v2" },
                { (void **) &nvml.shutdown, "nvmlShutdown" },
                { (void **) &nvml.error_string, "nvmlErrorString" },
                { (void **) &nvml.driver_version, "nvmlSystemGetDriverVersion" },
                { (void **) &nvml.cuda_version, "nvmlSystemGetCudaDriverVersion" },
                { (void **) &nvml.count, "nvmlDeviceGetCount_v2" },
                { (void **) &nvml.by_index, "nvmlDeviceGetHandleByIndex_v2" },
                { (void **) &nvml.uuid, "nvmlDeviceGetUUID" },
                { (void **) &nvml.name, "nvmlDeviceGetName" },
                { (void **) &nvml.pci, "nvmlDeviceGetPciInfo_v3" },
                { (void **) &nvml.cc, "nvmlDeviceGetCudaComputeCapability" },
                { (void **) &nvml.mig_mode, "nvmlDeviceGetMigMode" },
                { (void **) &nvml.max_mig, "nvmlDeviceGetMaxMigDeviceCount" },
                { (void **) &nvml.mig_by_index, "nvmlDeviceGetMigDeviceHandleByIndex" },
        };

        if (!lib) {
                fprintf(stderr,
                        "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. "
                        "Please make sure that the NVIDIA Display Driver is properly installed and present in your system.\n");
                exit(12);
        }
        for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
                *syms[i].slot = dlsym(lib, syms[i].symbol);
                if (!*syms[i].slot) {
                        fprintf(stderr, "NVIDIA-SMI: libnvidia-ml.so.1 lacks %s; a wrong NVML library was loaded\n",
                                syms[i].symbol);
                        exit(13);
                }
        }
}

static void start_nvml(void)
{
        nvmlReturn_t ret;

        load_nvml();
        ret = nvml.init();
        if (ret == NVML_ERROR_DRIVER_NOT_LOADED) {
                fprintf(stderr, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                                "Make sure that the latest NVIDIA driver is installed and running.\n");
                exit(9);
        }
        if (ret != NVML_SUCCESS) {
                fprintf(stderr, "Failed to initialize NVML: %s\n", nvml.error_string(ret));
                exit(255);
        }
        if (nvml.driver_version(driver_version, sizeof(driver_version)) != NVML_SUCCESS ||
            nvml.cuda_version(&cuda_version) != NVML_SUCCESS) {
                fprintf(stderr, "NVIDIA-SMI: cannot read the driver version from NVML\n");
                exit(255);
        }
}

static nvmlDevice_t device(unsigned int i)
{
        nvmlDevice_t dev;
        nvmlReturn_t ret = nvml.by_index(i, &dev);

        if (ret != NVML_SUCCESS) {
                fprintf(stderr, "Unable to determine the device handle for GPU%u: %s\n", i, nvml.error_string(ret));
                exit(15);
        }
        return dev;
}

static unsigned int device_count(void)
{
        unsigned int n = 0;

        if (nvml.count(&n) != NVML_SUCCESS) {
                fprintf(stderr, "NVIDIA-SMI: cannot count GPUs through NVML\n");
                exit(255);
        }
        return n;
}

static const char *text(nvmlReturn_t (*get)(nvmlDevice_t, char *, unsigned int), nvmlDevice_t dev, char *buf,
                        unsigned int size)
{
        if (get(dev, buf, size) != NVML_SUCCESS)
                snprintf(buf, size, "[Unknown Error]");
        return buf;
}

static int mig_enabled(nvmlDevice_t dev)
{
        unsigned int current, pending;

        return nvml.mig_mode(dev, &current, &pending) == NVML_SUCCESS && current == 1;
}

static int list_gpus(void)
{
        unsigned int n = device_count();

        for (unsigned int i = 0; i < n; i++) {
                char name[96], uuid[96];
                nvmlDevice_t dev = device(i), mig;
                unsigned int max = 0, shown = 0;

                printf("GPU %u: %s (UUID: %s)\n", i, text(nvml.name, dev, name, sizeof(name)),
                       text(nvml.uuid, dev, uuid, sizeof(uuid)));
                if (!mig_enabled(dev) || nvml.max_mig(dev, &max) != NVML_SUCCESS)
                        continue;
                for (unsigned int j = 0; j < max; j++) {
                        const char *profile;

                        if (nvml.mig_by_index(dev, j, &mig) != NVML_SUCCESS)
                                continue;
                        text(nvml.name, mig, name, sizeof(name));
                        profile = strstr(name, " MIG ");
                        printf("  MIG %s Device %u: (UUID: %s)\n", profile ? profile + 5 : name, shown++,
                               text(nvml.uuid, mig, uuid, sizeof(uuid)));
                }
        }
        return 0;
}

static const char *bus_id(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
        if (nvml.pci(dev, pci) != NVML_SUCCESS)
                snprintf(pci->busId, sizeof(pci->busId), "[Unknown Error]");
        return pci->busId;
}

static int summary(void)
{
        static const char rule[] =
                "+-----------------------------------------------------------------------------------------+";
        unsigned int n = device_count();
        char cuda[16];

        snprintf(cuda, sizeof(cuda), "%d.%d", cuda_version / 1000, cuda_version % 1000 / 10);
        puts(rule);
        printf("| NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %-8s |\n", driver_version, driver_version, cuda);
        puts(rule);
        printf("| %-4s %-40s %-16s %-24s |\n", "GPU", "Name", "Bus-Id", "MIG M.");
        for (unsigned int i = 0; i < n; i++) {
                nvmlDevice_t dev = device(i);
                nvmlPciInfo_t pci;
                char name[96];

                printf("| %4u %-40.40s %-16s %-24s |\n", i, text(nvml.name, dev, name, sizeof(name)), bus_id(dev, &pci),
                       mig_enabled(dev) ? "Enabled" : "Disabled");
        }
        puts(rule);
        return 0;
}

static void print_field(const char *field, unsigned int index, nvmlDevice_t dev, unsigned int count)
{
        char buf[96];
        nvmlPciInfo_t pci;
        int major, minor;

        if (strcmp(field, "index") == 0)
                printf("%u", index);
        else if (strcmp(field, "count") == 0)
                printf("%u", count);
        else if (strcmp(field, "uuid") == 0 || strcmp(field, "gpu_uuid") == 0)
                printf("%s", text(nvml.uuid, dev, buf, sizeof(buf)));
        else if (strcmp(field, "name") == 0 || strcmp(field, "gpu_name") == 0)
                printf("%s", text(nvml.name, dev, buf, sizeof(buf)));
        else if (strcmp(field, "pci.bus_id") == 0 || strcmp(field, "gpu_bus_id") == 0)
                printf("%s", bus_id(dev, &pci));
        else if (strcmp(field, "driver_version") == 0)
                printf("%s", driver_version);
        else if (strcmp(field, "compute_cap") == 0)
                nvml.cc(dev, &major, &minor) == NVML_SUCCESS ? printf("%d.%d", major, minor) : printf("[N/A]");
        else if (strcmp(field, "mig.mode.current") == 0)
                printf("%s", mig_enabled(dev) ? "Enabled" : "Disabled");
}

static const char *const valid_fields[] = {
        "index",      "count",          "uuid",        "gpu_uuid",         "name", "gpu_name", "pci.bus_id",
        "gpu_bus_id", "driver_version", "compute_cap", "mig.mode.current",
};

/* Splits the --query-gpu list in place; validated before NVML is touched, like the real tool. */
static int parse_fields(char *fields, char **list, unsigned int *nf)
{
        char *field, *save = NULL;

        *nf = 0;
        for (field = strtok_r(fields, ",", &save); field; field = strtok_r(NULL, ",", &save)) {
                size_t v;

                while (*field == ' ')
                        field++;
                for (v = 0; v < sizeof(valid_fields) / sizeof(valid_fields[0]); v++)
                        if (strcmp(field, valid_fields[v]) == 0)
                                break;
                if (v == sizeof(valid_fields) / sizeof(valid_fields[0]) || *nf == 32) {
                        fprintf(stderr, "Field \"%s\" is not a valid field to query.\n", field);
                        return -1;
                }
                list[(*nf)++] = field;
        }
        return *nf ? 0 : -1;
}

static int query_rows(char **list, unsigned int nf, const char *format)
{
        unsigned int n = device_count();

        if (!strstr(format, "noheader")) {
                for (unsigned int f = 0; f < nf; f++)
                        printf("%s%s", f ? ", " : "", list[f]);
                printf("\n");
        }
        for (unsigned int i = 0; i < n; i++) {
                nvmlDevice_t dev = device(i);

                for (unsigned int f = 0; f < nf; f++) {
                        if (f)
                                printf(", ");
                        print_field(list[f], i, dev, n);
                }
                printf("\n");
        }
        return 0;
}

int main(int argc, char **argv)
{
        char *query_fields = NULL, *fields[32];
        const char *format = NULL;
        int list = 0, version = 0, ret;
        unsigned int nf = 0;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "-L") == 0 || strcmp(argv[i], "--list-gpus") == 0)
                        list = 1;
                else if (strcmp(argv[i], "--version") == 0)
                        version = 1;
                else if (strncmp(argv[i], "--query-gpu=", 12) == 0)
                        query_fields = argv[i] + 12;
                else if (strncmp(argv[i], "--format=", 9) == 0)
                        format = argv[i] + 9;
                else {
                        fprintf(stderr,
                                "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n");
                        return 2;
                }
        }
        if (query_fields) {
                if (!format || strncmp(format, "csv", 3) != 0) {
                        fprintf(stderr, "Please specify --format=csv with --query-gpu.\n");
                        return 2;
                }
                if (parse_fields(query_fields, fields, &nf) < 0)
                        return 2;
        }
        start_nvml();
        if (version) {
                printf("NVIDIA-SMI version  : %s\nDRIVER version      : %s\nCUDA Version        : %d.%d\n",
                       driver_version, driver_version, cuda_version / 1000, cuda_version % 1000 / 10);
                ret = 0;
        } else if (query_fields) {
                ret = query_rows(fields, nf, format);
        } else if (list) {
                ret = list_gpus();
        } else {
                ret = summary();
        }
        nvml.shutdown();
        return ret;
}
