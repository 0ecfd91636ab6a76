/* Fake libnvidia-ml.  Everything it reports comes from the driver root it runs against
 * ($FAKE_NVML_ROOT, default "/"), so that the same library answers for the driver-service child
 * chrooted into a fake driver root and for a container that got only some GPUs injected:
 *   proc/driver/nvidia/version                  driver version (real format)
 *   proc/driver/nvidia/gpus/<busid>/information model, UUID, bus location, minor (real format)
 *   proc/driver/nvidia/gpus/<busid>/fake-nvml   brand, compute capability, MIG (fake only)
 *   dev/nvidiactl, dev/nvidia<minor>            a GPU is visible only if its node exists
 *   etc/fake-nvml-mode                          crash | hang | error, to test failure handling
 *   etc/fake-nvml-inits                         when it exists, one line is appended per nvmlInit
 *                                               (tests count NVML starts; the service child has an
 *                                               empty environment, so the switch is a file)
 * libc only: it is injected into containers that have nothing but glibc. */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nvml-api.h"
#include "nvml-fake.h"

#define FAKE_CUDA_DEFAULT 13000
#define FAKE_MAX_MIG 7

static unsigned int init_count;
static struct fake_nvml_device *devices;
static unsigned int n_devices;
static char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
static int cuda_version = FAKE_CUDA_DEFAULT;

const char *fake_root(void)
{
        const char *r = getenv("FAKE_NVML_ROOT");
        return r && *r ? r : "/";
}

void root_path(char *buf, size_t size, const char *rel) { snprintf(buf, size, "%s/%s", fake_root(), rel); }

static char *trim(char *s)
{
        char *e;

        while (*s == ' ' || *s == '\t')
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = '\0';
        return s;
}

/* Splits "Key: \t value" at the first colon; the value keeps later colons (bus ids). */
static int split_line(char *line, char **key, char **value)
{
        char *colon = strchr(line, ':');

        if (!colon)
                return -1;
        *colon = '\0';
        *key = trim(line);
        *value = trim(colon + 1);
        return 0;
}

static int read_driver_version(void)
{
        char path[4096], line[512];
        FILE *f;

        root_path(path, sizeof(path), "proc/driver/nvidia/version");
        f = fopen(path, "re");
        if (!f)
                return -1;
        driver_version[0] = '\0';
        while (fgets(line, sizeof(line), f)) {
                char *tok, *save = NULL;

                if (strncmp(line, "NVRM version:", 13) != 0)
                        continue;
                for (tok = strtok_r(line + 13, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
                        if (isdigit((unsigned char) tok[0]) && strchr(tok, '.') &&
                            strspn(tok, "0123456789.") == strlen(tok)) {
                                snprintf(driver_version, sizeof(driver_version), "%s", tok);
                                break;
                        }
                }
                break;
        }
        fclose(f);
        return driver_version[0] ? 0 : -1;
}

static nvmlBrandType_t parse_brand(const char *s)
{
        static const struct {
                const char *name;
                nvmlBrandType_t brand;
        } table[] = {
                { "quadro", NVML_BRAND_QUADRO },
                { "tesla", NVML_BRAND_TESLA },
                { "nvs", NVML_BRAND_NVS },
                { "grid", NVML_BRAND_GRID },
                { "geforce", NVML_BRAND_GEFORCE },
                { "titan", NVML_BRAND_TITAN },
                { "nvidia_rtx", NVML_BRAND_NVIDIA_RTX },
                { "nvidia", NVML_BRAND_NVIDIA },
                { "geforce_rtx", NVML_BRAND_GEFORCE_RTX },
                { "titan_rtx", NVML_BRAND_TITAN_RTX },
        };

        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
                if (strcasecmp(s, table[i].name) == 0)
                        return table[i].brand;
        return NVML_BRAND_UNKNOWN;
}

static int add_mig(struct fake_nvml_device *gpu, char *value)
{
        struct fake_nvml_device *m, *grown;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], profile[32] = "1g.10gb";
        unsigned int gi, ci;

        if (sscanf(value, "%u %u %95s %31s", &gi, &ci, uuid, profile) < 3)
                return -1;
        grown = realloc(gpu->mig, (gpu->n_mig + 1) * sizeof(*grown));
        if (!grown)
                return -1;
        gpu->mig = grown;
        m = &gpu->mig[gpu->n_mig++];
        memset(m, 0, sizeof(*m));
        m->gi = gi;
        m->ci = ci;
        snprintf(m->uuid, sizeof(m->uuid), "%s", uuid);
        snprintf(m->profile, sizeof(m->profile), "%s", profile);
        return 0;
}

static void read_fake_nvml(struct fake_nvml_device *gpu, const char *dir, int first)
{
        char path[4096], line[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s/fake-nvml", dir);
        f = fopen(path, "re");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                char *key, *value;

                if (split_line(line, &key, &value) < 0)
                        continue;
                if (strcmp(key, "brand") == 0)
                        gpu->brand = parse_brand(value);
                else if (strcmp(key, "compute_capability") == 0)
                        sscanf(value, "%d.%d", &gpu->cc_major, &gpu->cc_minor);
                else if (strcmp(key, "pci_device_id") == 0)
                        gpu->pci_device_id = (unsigned int) strtoul(value, NULL, 0);
                else if (strcmp(key, "pci_subsystem_id") == 0)
                        gpu->pci_subsystem_id = (unsigned int) strtoul(value, NULL, 0);
                else if (strcmp(key, "cuda_driver_version") == 0 && first)
                        cuda_version = atoi(value);
                else if (strcmp(key, "mig_mode") == 0)
                        gpu->mig_mode = strcmp(value, "enabled") == 0 ? 1 : strcmp(value, "unsupported") == 0 ? -1 : 0;
                else if (strcmp(key, "mig_device") == 0)
                        add_mig(gpu, value);
                else
                        fake_usage_key(gpu, key, value);
        }
        fclose(f);
}

/* Returns 1 if the GPU described in DIR is visible (its /dev/nvidia<minor> exists). */
static int read_gpu(struct fake_nvml_device *gpu, const char *dir)
{
        char path[4096], line[512];
        int have_minor = 0, have_bus = 0;
        struct stat st;
        FILE *f;

        memset(gpu, 0, sizeof(*gpu));
        snprintf(path, sizeof(path), "%s/information", dir);
        f = fopen(path, "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f)) {
                char *key, *value;

                if (split_line(line, &key, &value) < 0)
                        continue;
                if (strcmp(key, "Model") == 0)
                        snprintf(gpu->name, sizeof(gpu->name), "%s", value);
                else if (strcmp(key, "GPU UUID") == 0)
                        snprintf(gpu->uuid, sizeof(gpu->uuid), "%s", value);
                else if (strcmp(key, "Device Minor") == 0)
                        have_minor = sscanf(value, "%u", &gpu->minor) == 1;
                else if (strcmp(key, "Bus Location") == 0)
                        have_bus = sscanf(value, "%x:%x:%x.%x", &gpu->domain, &gpu->bus, &gpu->dev, &gpu->fn) == 4;
        }
        fclose(f);
        if (!have_minor || !have_bus || !gpu->uuid[0])
                return 0;
        snprintf(line, sizeof(line), "dev/nvidia%u", gpu->minor);
        root_path(path, sizeof(path), line);
        if (stat(path, &st) < 0)
                return 0;
        gpu->cc_major = 9;
        gpu->brand = NVML_BRAND_NVIDIA;
        gpu->pci_device_id = 0x233010de;
        gpu->rdev = st.st_rdev;
        fake_usage_defaults(gpu);
        read_fake_nvml(gpu, dir, n_devices == 0);
        for (unsigned int i = 0; i < gpu->n_mig; i++) {
                struct fake_nvml_device *m = &gpu->mig[i];

                m->cc_major = gpu->cc_major;
                m->cc_minor = gpu->cc_minor;
                m->brand = gpu->brand;
                snprintf(m->name, sizeof(m->name), "%.60s MIG %.30s", gpu->name, m->profile);
        }
        return 1;
}

static int cmp_bus(const void *a, const void *b)
{
        const struct fake_nvml_device *x = a, *y = b;
        unsigned long long kx = ((unsigned long long) x->domain << 24) | (x->bus << 16) | (x->dev << 8) | x->fn;
        unsigned long long ky = ((unsigned long long) y->domain << 24) | (y->bus << 16) | (y->dev << 8) | y->fn;

        return kx < ky ? -1 : kx > ky;
}

static void free_devices(void)
{
        for (unsigned int i = 0; i < n_devices; i++)
                free(devices[i].mig);
        free(devices);
        devices = NULL;
        n_devices = 0;
}

static nvmlReturn_t scan_gpus(void)
{
        char path[4096];
        struct dirent *de;
        DIR *d;

        root_path(path, sizeof(path), "proc/driver/nvidia/gpus");
        d = opendir(path);
        if (!d)
                return NVML_SUCCESS; /* a driver without GPUs */
        while ((de = readdir(d))) {
                struct fake_nvml_device gpu, *grown;
                char dir[8192];

                if (de->d_name[0] == '.')
                        continue;
                snprintf(dir, sizeof(dir), "%s/%s", path, de->d_name);
                if (!read_gpu(&gpu, dir)) {
                        free(gpu.mig);
                        continue;
                }
                grown = realloc(devices, (n_devices + 1) * sizeof(*grown));
                if (!grown) {
                        free(gpu.mig);
                        closedir(d);
                        return NVML_ERROR_UNKNOWN;
                }
                devices = grown;
                devices[n_devices++] = gpu;
        }
        closedir(d);
        qsort(devices, n_devices, sizeof(*devices), cmp_bus);
        for (unsigned int i = 0; i < n_devices; i++) {
                devices[i].index = i;
                for (unsigned int j = 0; j < devices[i].n_mig; j++) {
                        devices[i].mig[j].parent = &devices[i];
                        devices[i].mig[j].index = j;
                }
        }
        return NVML_SUCCESS;
}

static void apply_failure_mode(nvmlReturn_t *ret)
{
        char path[4096], mode[32] = "";
        FILE *f;

        root_path(path, sizeof(path), "etc/fake-nvml-mode");
        f = fopen(path, "re");
        if (!f)
                return;
        if (!fgets(mode, sizeof(mode), f))
                mode[0] = '\0';
        fclose(f);
        trim(mode);
        if (strcmp(mode, "crash") == 0) {
                signal(SIGSEGV, SIG_DFL);
                raise(SIGSEGV);
        } else if (strcmp(mode, "hang") == 0) {
                for (;;)
                        pause();
        } else if (strcmp(mode, "error") == 0) {
                *ret = NVML_ERROR_DRIVER_NOT_LOADED;
        }
}

/* Appends one line to etc/fake-nvml-inits when the file exists (never creates it). */
static void count_init(void)
{
        char path[4096], line[64];
        int fd, n;

        root_path(path, sizeof(path), "etc/fake-nvml-inits");
        fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        n = snprintf(line, sizeof(line), "nvmlInit pid %d\n", (int) getpid());
        if (write(fd, line, (size_t) n) < 0)
                line[0] = '\0';
        close(fd);
}

nvmlReturn_t nvmlInit_v2(void)
{
        nvmlReturn_t ret = NVML_SUCCESS;
        char path[4096];

        count_init();

        apply_failure_mode(&ret);
        if (ret != NVML_SUCCESS)
                return ret;
        if (init_count > 0) {
                init_count++;
                return NVML_SUCCESS;
        }
        root_path(path, sizeof(path), "dev/nvidiactl");
        if (access(path, F_OK) < 0 || read_driver_version() < 0)
                return NVML_ERROR_DRIVER_NOT_LOADED;
        cuda_version = FAKE_CUDA_DEFAULT;
        ret = scan_gpus();
        if (ret != NVML_SUCCESS) {
                free_devices();
                return ret;
        }
        init_count = 1;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { return nvmlInit_v2(); }

nvmlReturn_t nvmlShutdown(void)
{
        if (init_count == 0)
                return NVML_ERROR_UNINITIALIZED;
        if (--init_count == 0)
                free_devices();
        return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
        switch (result) {
        case NVML_SUCCESS: return "Success";
        case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
        case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
        case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
        case NVML_ERROR_NOT_FOUND: return "Not Found";
        case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
        case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
        default: return "Unknown Error";
        }
}

static nvmlReturn_t copy_string(char *dst, unsigned int length, const char *src)
{
        if (!dst)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (strlen(src) + 1 > length)
                return NVML_ERROR_INSUFFICIENT_SIZE;
        memcpy(dst, src, strlen(src) + 1);
        return NVML_SUCCESS;
}

int fake_initialised(void) { return init_count > 0; }

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
        CHECK_INIT();
        return copy_string(version, length, driver_version);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
        char v[96];

        CHECK_INIT();
        snprintf(v, sizeof(v), "13.%s", driver_version);
        return copy_string(version, length, v);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
        CHECK_ARGS(cudaDriverVersion, cudaDriverVersion);
        *cudaDriverVersion = cuda_version;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
        return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
        CHECK_ARGS(deviceCount, deviceCount);
        *deviceCount = n_devices;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) { return nvmlDeviceGetCount_v2(deviceCount); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
        CHECK_ARGS(device, device);
        if (index >= n_devices)
                return NVML_ERROR_INVALID_ARGUMENT;
        *device = &devices[index];
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
        return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
        CHECK_ARGS(device, uuid);
        return copy_string(uuid, length, device->uuid);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
        CHECK_ARGS(device, name);
        return copy_string(name, length, device->name);
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
        CHECK_ARGS(device, type);
        *type = device->brand;
        return NVML_SUCCESS;
}

/* Index, minor and PCI data belong to physical GPUs; MIG handles answer NOT_SUPPORTED so that a
 * caller mixing the two up fails loudly instead of picking the parent silently. */
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
        CHECK_ARGS(device, minorNumber);
        if (device->parent)
                return NVML_ERROR_NOT_SUPPORTED;
        *minorNumber = device->minor;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
        CHECK_ARGS(device, index);
        if (device->parent)
                return NVML_ERROR_NOT_SUPPORTED;
        *index = device->index;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
        CHECK_ARGS(device, pci);
        if (device->parent)
                return NVML_ERROR_NOT_SUPPORTED;
        memset(pci, 0, sizeof(*pci));
        pci->domain = device->domain;
        pci->bus = device->bus;
        pci->device = device->dev;
        pci->pciDeviceId = device->pci_device_id;
        pci->pciSubSystemId = device->pci_subsystem_id;
        snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X", device->domain & 0xffff,
                 device->bus & 0xff, device->dev & 0xff, device->fn & 0xf);
        snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.%X", device->domain, device->bus & 0xff,
                 device->dev & 0xff, device->fn & 0xf);
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
        CHECK_ARGS(device, major);
        if (!minor)
                return NVML_ERROR_INVALID_ARGUMENT;
        *major = device->cc_major;
        *minor = device->cc_minor;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
        CHECK_ARGS(device, currentMode);
        if (!pendingMode)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (device->parent || device->mig_mode < 0)
                return NVML_ERROR_NOT_SUPPORTED;
        *currentMode = *pendingMode = (unsigned int) device->mig_mode;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
        CHECK_ARGS(device, count);
        if (device->parent || device->mig_mode < 0)
                return NVML_ERROR_NOT_SUPPORTED;
        if (device->mig_mode == 0)
                *count = 0;
        else
                *count = device->n_mig > FAKE_MAX_MIG ? device->n_mig : FAKE_MAX_MIG;
        return NVML_SUCCESS;
}

/* Like the real library, indices past the existing MIG devices (up to the maximum) are
 * NOT_FOUND: callers must iterate to the maximum and skip the holes. */
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)
{
        unsigned int max;
        nvmlReturn_t ret;

        CHECK_ARGS(device, migDevice);
        ret = nvmlDeviceGetMaxMigDeviceCount(device, &max);
        if (ret != NVML_SUCCESS)
                return ret;
        if (device->mig_mode != 1 || index >= max)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (index >= device->n_mig)
                return NVML_ERROR_NOT_FOUND;
        *migDevice = &device->mig[index];
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
        CHECK_ARGS(device, id);
        if (!device->parent)
                return NVML_ERROR_NOT_SUPPORTED;
        *id = device->gi;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
        CHECK_ARGS(device, id);
        if (!device->parent)
                return NVML_ERROR_NOT_SUPPORTED;
        *id = device->ci;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
        CHECK_ARGS(migDevice, device);
        if (!migDevice->parent)
                return NVML_ERROR_INVALID_ARGUMENT;
        *device = migDevice->parent;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
        CHECK_ARGS(device, isMigDevice);
        *isMigDevice = device->parent != NULL;
        return NVML_SUCCESS;
}
