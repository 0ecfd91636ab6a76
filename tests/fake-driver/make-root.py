#!/usr/bin/env python3
"""Assembles a fake NVIDIA driver root from the built artifacts and a GPU profile.

Run it through make-root.sh, which finds the build directory.  Everything is written with
paths relative to OUTDIR; device nodes need root (skipped with a warning otherwise).
"""
import argparse
import json
import os
import shutil
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

NVIDIA_MAJOR = 195
UVM_MAJOR = 511          # dynamic on a real host; fixed here so tests can predict it
CAPS_MAJOR = 510
BINARIES = ['nvidia-smi', 'nvidia-debugdump', 'nvidia-persistenced', 'nv-fabricmanager',
            'nvidia-cuda-mps-control', 'nvidia-cuda-mps-server']
LAYOUTS = {
    'standard': {'lib64': 'usr/lib/x86_64-linux-gnu', 'lib32': 'usr/lib/i386-linux-gnu',
                 'bin': 'usr/bin', 'firmware': 'lib/firmware/nvidia', 'share': 'usr/share'},
    'local': {'lib64': 'usr/local/nvidia/lib64', 'lib32': 'usr/local/nvidia/lib',
              'bin': 'usr/local/nvidia/bin', 'firmware': 'usr/local/nvidia/firmware/nvidia',
              'share': 'usr/local/nvidia/share'},
}
DECOY_DIR = 'usr/local/lib'
EGL_PLATFORM_LIBS = [('libnvidia-egl-wayland.so.1.1.19', 'libnvidia-egl-wayland.so.1'),
                     ('libnvidia-egl-gbm.so.1.1.2', 'libnvidia-egl-gbm.so.1')]
VULKAN_API = '1.4.312'
MESA_DIR = 'usr/lib/x86_64-linux-gnu'

PARAMS = """ResmanDebugLevel: 4294967295
RmLogonRC: 1
ModifyDeviceFiles: 1
DeviceFileUID: 0
DeviceFileGID: 0
DeviceFileMode: 438
InitializeSystemMemoryAllocations: 1
UsePageAttributeTable: 4294967295
EnableMSI: 1
EnablePCIeGen3: 0
MemoryPoolSize: 0
KMallocHeapMaxSize: 0
VMallocHeapMaxSize: 0
IgnoreMMIOCheck: 0
EnableStreamMemOPs: 0
EnableUserNUMAManagement: 1
NvLinkDisable: 0
RmProfilingAdminOnly: 1
PreserveVideoMemoryAllocations: 0
EnableS0ixPowerManagement: 0
S0ixPowerManagementVideoMemoryThreshold: 256
DynamicPowerManagement: 3
DynamicPowerManagementVideoMemoryThreshold: 200
RegisterPCIDriver: 1
EnablePCIERelaxedOrderingMode: 0
EnableResizableBar: 0
EnableGpuFirmware: 18
EnableGpuFirmwareLogs: 2
RmNvlinkBandwidthLinkCount: 0
EnableDbgBreakpoint: 0
OpenRmEnableUnsupportedGpus: 1
DmaRemapPeerMmio: 1
ImexChannelCount: 2048
CreateImexChannel0: 0
GrdmaPciTopoCheckOverride: 0
CoherentGPUMemoryMode: ""
RegistryDwords: ""
RegistryDwordsPerDevice: ""
RmMsg: ""
GpuBlacklist: ""
TemporaryFilePath: ""
ExcludedGpus: ""
"""


class Fail(Exception):
    pass


def parse_args():
    p = argparse.ArgumentParser(prog='make-root.sh', description='Write a fake NVIDIA driver root into OUTDIR.')
    p.add_argument('outdir', metavar='OUTDIR')
    p.add_argument('--layout', choices=sorted(LAYOUTS), default='standard')
    p.add_argument('--profile', default=os.path.join(HERE, 'profiles', 'default.json'))
    p.add_argument('--nvml-mode', choices=['ok', 'crash', 'hang', 'error'], default='ok')
    p.add_argument('--sockets', action='store_true',
                   help='create run/nvidia-persistenced/socket and run/nvidia-fabricmanager/socket')
    p.add_argument('--artifacts', required=True, help=argparse.SUPPRESS)
    return p.parse_args()


def read_conf(artifacts):
    conf = {}
    with open(os.path.join(artifacts, 'fake-driver.conf')) as f:
        for line in f:
            if '=' in line and not line.startswith('#'):
                k, v = line.strip().split('=', 1)
                conf[k] = v
    return conf


def read_libraries():
    libs = []
    with open(os.path.join(HERE, 'libraries.txt')) as f:
        for line in f:
            fields = line.split()
            if fields and not fields[0].startswith('#'):
                libs.append({'name': fields[0], 'soname': fields[1], 'i386': fields[3]})
    return libs


def norm_bus_id(bus_id, where):
    try:
        dom, bus, rest = bus_id.split(':')
        dev, fn = rest.split('.')
        return '%04x:%02x:%02x.%x' % (int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16))
    except ValueError:
        raise Fail('%s: bus_id %r is not DOMAIN:BUS:DEVICE.FUNCTION; fix the profile' % (where, bus_id))


def load_profile(path):
    try:
        with open(path) as f:
            prof = json.load(f)
    except (OSError, ValueError) as e:
        raise Fail('cannot read profile %s: %s; pass a JSON profile like profiles/default.json' % (path, e))
    gpus = prof.get('gpus')
    if not isinstance(gpus, list):
        raise Fail('profile %s: no "gpus" list; see profiles/default.json' % path)
    seen = set()
    for i, g in enumerate(gpus):
        where = '%s: gpus[%d]' % (path, i)
        for key in ('minor', 'uuid', 'bus_id', 'model'):
            if key not in g:
                raise Fail('%s lacks "%s"; every GPU needs minor, uuid, bus_id and model' % (where, key))
        g['bus_id'] = norm_bus_id(g['bus_id'], where)
        for key in ('minor', 'uuid', 'bus_id'):
            if (key, g[key]) in seen:
                raise Fail('%s: duplicate %s %s; each GPU needs its own' % (where, key, g[key]))
            seen.add((key, g[key]))
    return prof


class Root:
    def __init__(self, outdir):
        self.outdir = outdir
        self.warned_nodes = False

    def path(self, rel):
        return os.path.join(self.outdir, rel)

    def mkdir(self, rel, mode=0o755):
        os.makedirs(self.path(rel), mode=mode, exist_ok=True)

    def write(self, rel, text, mode=0o644):
        self.mkdir(os.path.dirname(rel))
        with open(self.path(rel), 'w') as f:
            f.write(text)
        os.chmod(self.path(rel), mode)

    def copy(self, src, rel, mode=0o755):
        self.mkdir(os.path.dirname(rel))
        shutil.copyfile(src, self.path(rel))
        os.chmod(self.path(rel), mode)

    def symlink(self, target, rel):
        self.mkdir(os.path.dirname(rel))
        os.symlink(target, self.path(rel))

    def chardev(self, rel, major, minor, mode=0o666):
        self.mkdir(os.path.dirname(rel))
        if os.geteuid() != 0:
            if not self.warned_nodes:
                print('make-root.sh: warning: not root, device nodes skipped (the fake NVML and libcuda will see '
                      'no GPU); run as root for a usable driver root', file=sys.stderr)
                self.warned_nodes = True
            return
        os.mknod(self.path(rel), stat.S_IFCHR | mode, os.makedev(major, minor))
        os.chmod(self.path(rel), mode)


def install_libraries(root, args, conf, dirs):
    version = conf['version']
    art = args.artifacts
    lib64 = []
    for lib in read_libraries():
        file = '%s.so.%s' % (lib['name'], version)
        soname = '%s.so.%s' % (lib['name'], version if lib['soname'] == 'full' else lib['soname'])
        targets = []
        if lib['i386'] == 'decoy':
            if conf.get('m32') == 'yes':
                targets.append(('m32-' + file, dirs['lib64']))
        else:
            targets.append((file, dirs['lib64']))
            if lib['i386'] == 'yes' and conf.get('m32') == 'yes':
                targets.append(('m32-' + file, dirs['lib32']))
        for built, libdir in targets:
            root.copy(os.path.join(art, built), os.path.join(libdir, file))
            if soname != file:
                root.symlink(file, os.path.join(libdir, soname))
            if libdir == dirs['lib64']:
                lib64.append(soname)
        if lib['name'] in ('libcuda', 'libnvidia-ml') and lib['i386'] != 'decoy':
            root.symlink(soname, os.path.join(dirs['lib64'], lib['name'] + '.so'))
    # decoys: see README.md
    for file, soname in EGL_PLATFORM_LIBS:
        root.copy(os.path.join(art, file), os.path.join(dirs['lib64'], file))
        root.symlink(file, os.path.join(dirs['lib64'], soname))
        lib64.append(soname)
    root.copy(os.path.join(art, 'decoy-libcuda.so.470.42.01'), os.path.join(DECOY_DIR, 'libcuda.so.470.42.01'))
    root.symlink('libcuda.so.470.42.01', os.path.join(DECOY_DIR, 'libcuda.so.1'))
    root.copy(os.path.join(art, 'decoy-libEGL.so.1.1.0'), os.path.join(MESA_DIR, 'libEGL.so.1.1.0'))
    root.symlink('libEGL.so.1.1.0', os.path.join(MESA_DIR, 'libEGL.so.1'))
    if args.layout == 'local':
        # the GPU machine: /lib/<soname> -> /usr/local/nvidia/lib64/<soname>, both in ld.so.cache
        for soname in lib64:
            root.symlink('/%s/%s' % (dirs['lib64'], soname), os.path.join('lib', soname))
    return [DECOY_DIR, dirs['lib64'], dirs['lib32'], MESA_DIR] + (['lib'] if args.layout == 'local' else [])


def install_binaries(root, args, dirs):
    for b in BINARIES:
        root.copy(os.path.join(args.artifacts, b), os.path.join(dirs['bin'], b))
        if args.layout == 'local':
            root.write(os.path.join('usr/bin', b), '#!/bin/sh\nexec /%s/%s "$@"\n' % (dirs['bin'], b), 0o755)
    if args.layout == 'standard':
        # decoy: a wrapper earlier on the default PATH than the real ELF
        root.write('usr/local/bin/nvidia-smi', '#!/bin/sh\nexec /usr/bin/nvidia-smi "$@"\n', 0o755)


def install_firmware(root, version, dirs):
    for fw in ('gsp_ga10x.bin', 'gsp_tu10x.bin'):
        root.write(os.path.join(dirs['firmware'], version, fw),
                   'fake GSP firmware %s for driver %s\n' % (fw, version), 0o644)


def icd_json(library, version='1.0.0', api=None):
    icd = {'library_path': library}
    if api:
        icd['api_version'] = api
    return json.dumps({'file_format_version': version, 'ICD': icd}, indent=4) + '\n'


def install_loader_files(root, args, version, dirs):
    """The graphics loader files as NVIDIA's installer writes them, under the layout's share dir."""
    share = dirs['share']
    root.write(share + '/vulkan/icd.d/nvidia_icd.json', icd_json('libGLX_nvidia.so.0', '1.0.1', VULKAN_API))
    # local layout: an absolute library path, which configure must honour at that very path
    layer_lib = ('/%s/libGLX_nvidia.so.0' % dirs['lib64']) if args.layout == 'local' else 'libGLX_nvidia.so.0'
    root.write(share + '/vulkan/implicit_layer.d/nvidia_layers.json', json.dumps({
        'file_format_version': '1.0.1',
        'layer': {'name': 'VK_LAYER_NV_optimus', 'type': 'INSTANCE', 'library_path': layer_lib,
                  'api_version': VULKAN_API, 'implementation_version': '1', 'description': 'NVIDIA Optimus layer',
                  'functions': {'vkGetInstanceProcAddr': 'vk_optimusGetInstanceProcAddr',
                                'vkGetDeviceProcAddr': 'vk_optimusGetDeviceProcAddr'},
                  'enable_environment': {'__NV_PRIME_RENDER_OFFLOAD': '1'},
                  'disable_environment': {'DISABLE_LAYER_NV_OPTIMUS_1': ''}}}, indent=4) + '\n')
    root.write(share + '/glvnd/egl_vendor.d/10_nvidia.json', icd_json('libEGL_nvidia.so.0'))
    for name, lib in (('10_nvidia_wayland.json', 'libnvidia-egl-wayland.so.1'),
                      ('15_nvidia_gbm.json', 'libnvidia-egl-gbm.so.1'),
                      ('20_nvidia_xcb.json', 'libnvidia-egl-xcb.so.1')):   # decoy: no such library here
        root.write(share + '/egl/egl_external_platform.d/' + name, icd_json(lib))
    root.write('%s/nvidia/nvidia-application-profiles-%s-rc' % (share, version), json.dumps({
        'rules': [{'pattern': {'feature': 'procname', 'matches': 'gnome-shell'}, 'profile': 'NoThreadedOptimizations'}],
        'profiles': [{'name': 'NoThreadedOptimizations',
                      'settings': [{'key': 'GLThreadedOptimizations', 'value': False}]}]}, indent=4) + '\n')
    # decoys: other vendors' files and a broken NVIDIA file that a valid one must win over
    root.write('usr/share/vulkan/icd.d/lvp_icd.x86_64.json',
               icd_json('/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so', '1.0.0', '1.3.238'))
    root.write('usr/share/glvnd/egl_vendor.d/50_mesa.json', icd_json('libEGL_mesa.so.0'))
    root.write('etc/vulkan/implicit_layer.d/nvidia_layers.json', '{"file_format_version": "1.0.1", "layer": {\n')


def access_file(minor, mode):
    return 'DeviceFileMinor: %d\nDeviceFileMode: %d\nDeviceFileModify: 1\n' % (minor, mode)


def install_proc(root, prof, version):
    p = 'proc/driver/nvidia'
    root.write(p + '/version',
               'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  '
               '(fake-driver@gpu-hook)  Tue Sep 23 09:53:18 UTC 2025\n'
               'GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n' % version)
    root.write(p + '/params', PARAMS)
    root.write(p + '/registry', 'Binary: ""\n')
    root.write(p + '/capabilities/mig/config', access_file(1, 256), 0o444)
    root.write(p + '/capabilities/mig/monitor', access_file(2, 292), 0o444)
    minors = ['config 1', 'monitor 2']
    for g in prof['gpus']:
        m = g['minor']
        gdir = '%s/gpus/%s' % (p, g['bus_id'])
        root.write(gdir + '/information',
                   'Model: \t\t %s\n'
                   'IRQ:   \t\t %d\n'
                   'GPU UUID: \t %s\n'
                   'Video BIOS: \t %s\n'
                   'Bus Type: \t PCIe\n'
                   'DMA Size: \t 52 bits\n'
                   'DMA Mask: \t 0xfffffffffffff\n'
                   'Bus Location: \t %s\n'
                   'Device Minor: \t %d\n'
                   'GPU Excluded:\t No\n' % (g['model'], 100 + m, g['uuid'], g.get('vbios', '96.00.99.00.01'),
                                             g['bus_id'], m))
        root.write(gdir + '/registry', 'Binary: ""\n')
        mig = g.get('mig')
        lines = ['brand: %s' % g.get('brand', 'nvidia'),
                 'compute_capability: %s' % g.get('compute_capability', '9.0'),
                 'pci_device_id: %s' % g.get('pci_device_id', '0x233010DE'),
                 'mig_mode: %s' % ('enabled' if mig is not None else g.get('mig_mode', 'disabled'))]
        if 'cuda_driver_version' in prof:
            lines.append('cuda_driver_version: %d' % prof['cuda_driver_version'])
        for key in ('memory_total_mib', 'process_memory_mib', 'process_sm_util', 'memory_util', 'temperature', 'power_mw',
                    'compute_mode', 'sm_clock_mhz', 'mem_clock_mhz'):
            if key in g:
                lines.append('%s: %d' % (key, g[key]))
        root.mkdir('%s/capabilities/gpu%d/mig' % (p, m))
        for d in (mig or {}).get('devices', []):
            lines.append('mig_device: %d %d %s %s' % (d['gi'], d['ci'], d['uuid'], d.get('profile', '1g.10gb')))
            gi_dir = '%s/capabilities/gpu%d/mig/gi%d' % (p, m, d['gi'])
            if not os.path.exists(root.path(gi_dir + '/access')):
                root.write(gi_dir + '/access', access_file(d['gi_minor'], 292), 0o444)
            root.write('%s/ci%d/access' % (gi_dir, d['ci']), access_file(d['ci_minor'], 292), 0o444)
        root.write(gdir + '/fake-nvml', '\n'.join(lines) + '\n')
        # the real table lists every possible GPU/compute instance of every GPU (15 x 8 per GPU)
        for gi in range(15):
            minors.append('gpu%d/gi%d/access %d' % (m, gi, 3 + m * 135 + gi * 9))
            for ci in range(8):
                minors.append('gpu%d/gi%d/ci%d/access %d' % (m, gi, ci, 3 + m * 135 + gi * 9 + 1 + ci))
    root.write('proc/driver/nvidia-caps/mig-minors', '\n'.join(minors) + '\n')


def install_dev(root, prof):
    root.mkdir('fake-proc')  # where a test mounts procfs for the fake process list (README.md)
    root.mkdir('dev')
    for g in prof['gpus']:
        root.chardev('dev/nvidia%d' % g['minor'], NVIDIA_MAJOR, g['minor'])
    root.chardev('dev/nvidiactl', NVIDIA_MAJOR, 255)
    root.chardev('dev/nvidia-modeset', NVIDIA_MAJOR, 254)
    root.chardev('dev/nvidia-uvm', UVM_MAJOR, 0)
    root.chardev('dev/nvidia-uvm-tools', UVM_MAJOR, 1)
    root.mkdir('dev/nvidia-caps')
    root.chardev('dev/nvidia-caps/nvidia-cap1', CAPS_MAJOR, 1, 0o400)
    root.chardev('dev/nvidia-caps/nvidia-cap2', CAPS_MAJOR, 2, 0o444)
    for g in prof['gpus']:
        for d in (g.get('mig') or {}).get('devices', []):
            for minor in (d['gi_minor'], d['ci_minor']):
                if not os.path.lexists(root.path('dev/nvidia-caps/nvidia-cap%d' % minor)):
                    root.chardev('dev/nvidia-caps/nvidia-cap%d' % minor, CAPS_MAJOR, minor, 0o444)


def make_sockets(root, args):
    for rel in ('run/nvidia-persistenced/socket', 'run/nvidia-fabricmanager/socket'):
        root.mkdir(os.path.dirname(rel))
        r = subprocess.run([os.path.join(args.artifacts, 'mksock'), root.path(rel)])
        if r.returncode != 0:
            raise Fail('cannot create %s' % root.path(rel))


def write_ld_cache(root, libdirs):
    root.write('etc/ld.so.conf', ''.join('/%s\n' % d for d in libdirs))
    cmd = ['ldconfig', '-r', root.outdir]
    if os.geteuid() != 0:
        cmd = ['unshare', '-r'] + cmd    # ldconfig -r chroots
    ldconfig = shutil.which('ldconfig') or '/sbin/ldconfig'
    cmd[cmd.index('ldconfig')] = ldconfig
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0 or not os.path.exists(root.path('etc/ld.so.cache')):
        raise Fail('ldconfig -r %s failed: %s' % (root.outdir, r.stderr.strip() or 'exit %d' % r.returncode))


def main():
    args = parse_args()
    conf = read_conf(args.artifacts)
    prof = load_profile(args.profile)
    outdir = os.path.abspath(args.outdir)
    if os.path.exists(outdir) and (not os.path.isdir(outdir) or os.listdir(outdir)):
        raise Fail('%s exists and is not an empty directory; give a new or empty OUTDIR' % outdir)
    os.makedirs(outdir, exist_ok=True)
    root = Root(outdir)
    dirs = LAYOUTS[args.layout]
    libdirs = install_libraries(root, args, conf, dirs)
    install_binaries(root, args, dirs)
    install_firmware(root, conf['version'], dirs)
    install_loader_files(root, args, conf['version'], dirs)
    install_proc(root, prof, conf['version'])
    install_dev(root, prof)
    if args.nvml_mode != 'ok':
        root.write('etc/fake-nvml-mode', args.nvml_mode + '\n')
    if args.sockets:
        make_sockets(root, args)
    write_ld_cache(root, [d for d in libdirs if os.path.isdir(root.path(d))])


if __name__ == '__main__':
    try:
        main()
    except Fail as e:
        print('make-root.sh: %s' % e, file=sys.stderr)
        sys.exit(1)
    except OSError as e:
        print('make-root.sh: %s; check OUTDIR and the build directory' % e, file=sys.stderr)
        sys.exit(1)
