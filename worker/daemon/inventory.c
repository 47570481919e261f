/* inventory: the host's CPUs, memory and GPUs (found through a dlopen'ed CUDA runtime, or
 * simulated) for the worker's registration (see inventory.h). */
#include "inventory.h"
#include "topology.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The first fields of struct cudaDeviceProp in CUDA 12 and 13 (cuda_runtime_api.h):
 * char name[256], cudaUUID_t uuid (16), char luid[8], unsigned luidDeviceNodeMask, then
 * size_t totalGlobalMem at offset 288. The whole struct is 1008 bytes in CUDA 13; the
 * buffer is larger so that a newer runtime cannot write past it. */
#define CUDA_PROP_BYTES 8192
#define CUDA_PROP_MEM_OFFSET 288

typedef int (*count_f)(int *n);
typedef int (*props_f)(void *prop, int dev);
typedef int (*busid_f)(char *bus, int len, int dev);

static void *open_cudart(void)
{
    static const char *const names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                                        "/usr/local/cuda/lib64/libcudart.so"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

static void probe_cuda(struct inventory *inv)
{
    void *h = open_cudart();
    if (!h) {
        snprintf(inv->cuda_note, sizeof(inv->cuda_note), "no CUDA runtime found");
        return;
    }
    count_f count = (count_f)dlsym(h, "cudaGetDeviceCount");
    props_f props = (props_f)dlsym(h, "cudaGetDeviceProperties_v2");
    if (!props)
        props = (props_f)dlsym(h, "cudaGetDeviceProperties");
    int n = 0;
    if (!count || !props || count(&n) != 0 || n <= 0) {
        snprintf(inv->cuda_note, sizeof(inv->cuda_note), "the CUDA runtime found no GPU");
        return; /* the library stays loaded: unloading CUDA is not safe */
    }
    busid_f busid = (busid_f)dlsym(h, "cudaDeviceGetPCIBusId");
    static _Alignas(16) unsigned char prop[CUDA_PROP_BYTES];
    for (int i = 0; i < n && inv->ngpus < INVENTORY_MAX_GPUS; i++) {
        memset(prop, 0, sizeof(prop));
        if (props(prop, i) != 0)
            continue;
        struct inventory_gpu *g = &inv->gpus[inv->ngpus++];
        g->index = i;
        snprintf(g->model, sizeof(g->model), "%.127s", (const char *)prop);
        size_t mem;
        memcpy(&mem, prop + CUDA_PROP_MEM_OFFSET, sizeof(mem));
        g->memory_bytes = (long long)mem;
        g->island = g->numa = -1;
        if (busid && busid(g->pci, (int)sizeof(g->pci), i) != 0)
            g->pci[0] = '\0';
    }
}

/* The real GPUs' islands and NUMA domains from NVML; unknown, with the note, without it. */
static void probe_topology(struct inventory *inv)
{
    const char *pci[INVENTORY_MAX_GPUS];
    int island[INVENTORY_MAX_GPUS], numa[INVENTORY_MAX_GPUS];
    for (int g = 0; g < inv->ngpus; g++)
        pci[g] = inv->gpus[g].pci;
    if (topology_probe_nvml(inv->ngpus, pci, island, numa, inv->topology_note,
                            sizeof(inv->topology_note)) < 0)
        return;
    for (int g = 0; g < inv->ngpus; g++) {
        inv->gpus[g].island = island[g];
        inv->gpus[g].numa = numa[g];
    }
}

void inventory_probe(struct inventory *inv, int simulate_gpus)
{
    memset(inv, 0, sizeof(*inv));
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    inv->cpus = cpus > 0 ? (int)cpus : 1;
    inv->memory_bytes = pages > 0 && psize > 0 ? (long long)pages * psize : 0;
    if (simulate_gpus <= 0) {
        probe_cuda(inv);
        probe_topology(inv);
        return;
    }
    snprintf(inv->topology_note, sizeof(inv->topology_note), "simulated GPUs: none declared");
    inv->simulated = 1;
    for (int i = 0; i < simulate_gpus && i < INVENTORY_MAX_GPUS; i++) {
        inv->gpus[i].index = i;
        snprintf(inv->gpus[i].model, sizeof(inv->gpus[i].model), "simulated");
        inv->gpus[i].memory_bytes = 0;
        inv->gpus[i].island = inv->gpus[i].numa = -1;
        inv->ngpus++;
    }
}

int inventory_simulate_model(struct inventory *inv, const char *model)
{
    size_t n = strlen(model), ok = 0;
    while (ok < n && model[ok] >= 0x20 && model[ok] < 0x7f)
        ok++;
    if (!inv->simulated || n < 1 || n >= sizeof(inv->gpus[0].model) || ok != n) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < inv->ngpus; i++)
        snprintf(inv->gpus[i].model, sizeof(inv->gpus[i].model), "%s", model);
    return 0;
}

int inventory_simulate_topology(struct inventory *inv, const char *spec, char *err, size_t len)
{
    int island[INVENTORY_MAX_GPUS];
    if (!inv->simulated) {
        snprintf(err, len, "--simulate-topology: needs --simulate-gpus");
        return -1;
    }
    if (topology_parse(spec, inv->ngpus, island, err, len) < 0)
        return -1;
    for (int g = 0; g < inv->ngpus; g++)
        inv->gpus[g].island = island[g];
    inv->topology_note[0] = '\0';
    return 0;
}

/* One GPU of the registration (new): its island and domain only where known. */
static json_t *gpu_json(const struct inventory_gpu *g)
{
    json_t *j = json_pack("{s:i, s:s, s:I}", "index", g->index, "model", g->model,
                          "memory_bytes", (json_int_t)g->memory_bytes);
    if (j && g->island >= 0)
        json_object_set_new(j, "island", json_integer(g->island));
    if (j && g->numa >= 0)
        json_object_set_new(j, "numa", json_integer(g->numa));
    return j;
}

json_t *inventory_json(const struct inventory *inv, const char *name)
{
    json_t *gpus = json_array();
    for (int i = 0; i < inv->ngpus; i++)
        json_array_append_new(gpus, gpu_json(&inv->gpus[i]));
    return json_pack("{s:s, s:i, s:I, s:o, s:b}", "name", name, "cpus", inv->cpus, "memory_bytes",
                     (json_int_t)inv->memory_bytes, "gpus", gpus, "simulated", inv->simulated);
}
