/* Vulkan through the loader: create an instance, list the physical devices.  Prints one line per
 * device and "vulkan: PASS" when an NVIDIA device is among them; exit 1 with one line otherwise
 * (no ICD at all is VK_ERROR_INCOMPATIBLE_DRIVER from vkCreateInstance). */
#include <stdio.h>
#include <stdlib.h>
#include <vulkan/vulkan.h>

#define NVIDIA_VENDOR_ID 0x10de

static const char *type_name(VkPhysicalDeviceType t)
{
        switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
        default: return "other";
        }
}

int main(void)
{
        VkApplicationInfo app = {
                .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                .pApplicationName = "gpu-hook vk-devices",
                .apiVersion = VK_API_VERSION_1_1,
        };
        VkInstanceCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app };
        VkInstance inst;
        VkPhysicalDevice devs[16];
        uint32_t n = 16;
        int nvidia = 0;
        VkResult r = vkCreateInstance(&ci, NULL, &inst);

        if (r != VK_SUCCESS) {
                printf("vulkan: FAIL: vkCreateInstance returned %d%s\n", (int) r,
                       r == VK_ERROR_INCOMPATIBLE_DRIVER ? " (VK_ERROR_INCOMPATIBLE_DRIVER: no Vulkan driver found)"
                                                         : "");
                return 1;
        }
        r = vkEnumeratePhysicalDevices(inst, &n, devs);
        if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
                printf("vulkan: FAIL: vkEnumeratePhysicalDevices returned %d\n", (int) r);
                vkDestroyInstance(inst, NULL);
                return 1;
        }
        for (uint32_t i = 0; i < n; i++) {
                VkPhysicalDeviceProperties p;
                vkGetPhysicalDeviceProperties(devs[i], &p);
                printf("vulkan: device %u: %s (vendor 0x%04x, %s, Vulkan %u.%u.%u)\n", i, p.deviceName, p.vendorID,
                       type_name(p.deviceType), VK_API_VERSION_MAJOR(p.apiVersion), VK_API_VERSION_MINOR(p.apiVersion),
                       VK_API_VERSION_PATCH(p.apiVersion));
                nvidia += p.vendorID == NVIDIA_VENDOR_ID;
        }
        vkDestroyInstance(inst, NULL);
        if (nvidia == 0) {
                printf("vulkan: FAIL: %u device(s), none from NVIDIA\n", n);
                return 1;
        }
        printf("vulkan: PASS\n");
        return 0;
}
