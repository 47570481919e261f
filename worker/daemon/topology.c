/* topology: a host's NVLink islands and NUMA domains, declared (AxB) or read with a
 * dlopen'ed NVML (see topology.h). */
#include "topology.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The few NVML names used, as nvml.h (CUDA toolkit) declares them. Where the header is at
 * hand the values are checked against it; elsewhere (a build host without the toolkit) these
 * are the declarations, and the library is looked for only at run time. */
typedef struct topology_nvml_device *nvml_device;
enum { NVML_OK = 0 };
enum { P2P_CAPS_NVLINK = 2, P2P_STATUS_OK = 0 };
enum { TOPO_LEVEL_NODE = 40 }; /* NVML_TOPOLOGY_NODE: within one NUMA node */

#if defined(__has_include)
#if __has_include(<nvml.h>)
#include <nvml.h>
_Static_assert(NVML_OK == NVML_SUCCESS, "nvml.h: NVML_SUCCESS");
_Static_assert(P2P_CAPS_NVLINK == NVML_P2P_CAPS_INDEX_NVLINK, "nvml.h: P2P NVLink index");
_Static_assert(P2P_STATUS_OK == NVML_P2P_STATUS_OK, "nvml.h: P2P status OK");
_Static_assert(TOPO_LEVEL_NODE == NVML_TOPOLOGY_NODE, "nvml.h: NVML_TOPOLOGY_NODE");
#endif
#endif

typedef int (*nvml_init_f)(void);
typedef int (*nvml_shutdown_f)(void);
typedef int (*nvml_by_pci_f)(const char *bus, nvml_device *dev);
typedef int (*nvml_p2p_f)(nvml_device a, nvml_device b, int caps, int *status);
typedef int (*nvml_ancestor_f)(nvml_device a, nvml_device b, int *level);

struct nvml {
    nvml_init_f init;
    nvml_shutdown_f shutdown;
    nvml_by_pci_f by_pci;
    nvml_p2p_f p2p;
    nvml_ancestor_f ancestor;
    nvml_device dev[TOPOLOGY_MAX_GPUS];
};

int topology_parse(const char *spec, int ngpus, int *island, char *err, size_t len)
{
    char *end;
    errno = 0;
    long a = strtol(spec, &end, 10), b = 0;
    int ok = errno == 0 && end != spec && *end == 'x' && a >= 1 && a <= TOPOLOGY_MAX_GPUS;
    if (ok) {
        const char *s = end + 1;
        b = strtol(s, &end, 10);
        ok = errno == 0 && end != s && *end == '\0' && b >= 1 && b <= TOPOLOGY_MAX_GPUS;
    }
    if (!ok) {
        snprintf(err, len, "--simulate-topology %s: expected AxB (A islands of B GPUs, e.g. 2x4)",
                 spec);
        return -1;
    }
    if (a * b != ngpus) {
        snprintf(err, len, "--simulate-topology %s: %ld GPUs, but --simulate-gpus is %d", spec,
                 a * b, ngpus);
        return -1;
    }
    for (int g = 0; g < ngpus; g++)
        island[g] = (int)(g / b);
    return 0;
}

void topology_group(int n, int (*linked)(void *ctx, int a, int b), void *ctx, int *group)
{
    for (int g = 0; g < n; g++)
        group[g] = -1;
    int next = 0;
    for (int g = 0; g < n; g++) {
        if (group[g] >= 0)
            continue;
        group[g] = next;
        /* every GPU reached from the group so far joins it (n <= 64: quadratic is fine) */
        for (int grew = 1; grew;) {
            grew = 0;
            for (int a = g; a < n; a++)
                for (int b = g + 1; group[a] == next && b < n; b++)
                    if (group[b] < 0 && linked(ctx, a, b)) {
                        group[b] = next;
                        grew = 1;
                    }
        }
        next++;
    }
}

static void *open_nvml(void)
{
    static const char *const names[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

static int nvlinked(void *ctx, int a, int b)
{
    struct nvml *m = ctx;
    int st = -1;
    return m->p2p(m->dev[a], m->dev[b], P2P_CAPS_NVLINK, &st) == NVML_OK && st == P2P_STATUS_OK;
}

static int same_numa(void *ctx, int a, int b)
{
    struct nvml *m = ctx;
    int level = -1;
    return m->ancestor(m->dev[a], m->dev[b], &level) == NVML_OK && level >= 0 &&
           level <= TOPO_LEVEL_NODE;
}

/* Resolves the library's functions. Returns 0, or -1 with a note. */
static int nvml_bind(struct nvml *m, void *h, char *note, size_t len)
{
    m->init = (nvml_init_f)dlsym(h, "nvmlInit_v2");
    m->shutdown = (nvml_shutdown_f)dlsym(h, "nvmlShutdown");
    m->by_pci = (nvml_by_pci_f)dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    m->p2p = (nvml_p2p_f)dlsym(h, "nvmlDeviceGetP2PStatus");
    m->ancestor = (nvml_ancestor_f)dlsym(h, "nvmlDeviceGetTopologyCommonAncestor");
    if (m->init && m->shutdown && m->by_pci && m->p2p && m->ancestor)
        return 0;
    snprintf(note, len, "NVML lacks the topology calls");
    return -1;
}

int topology_probe_nvml(int n, const char *const *pci, int *island, int *numa, char *note,
                        size_t len)
{
    struct nvml m;
    void *h = n > 0 && n <= TOPOLOGY_MAX_GPUS ? open_nvml() : NULL;
    if (!h) {
        snprintf(note, len, n > 0 ? "no NVML library found" : "no GPU");
        return -1;
    }
    if (nvml_bind(&m, h, note, len) < 0)
        return -1; /* the library stays loaded, as the CUDA runtime does */
    if (m.init() != NVML_OK) {
        snprintf(note, len, "NVML did not start (no driver?)");
        return -1;
    }
    int rc = 0;
    for (int g = 0; g < n && rc == 0; g++)
        if (!pci[g] || !pci[g][0] || m.by_pci(pci[g], &m.dev[g]) != NVML_OK) {
            snprintf(note, len, "NVML does not know GPU %d (%s)", g, pci[g] ? pci[g] : "?");
            rc = -1;
        }
    if (rc == 0) {
        topology_group(n, nvlinked, &m, island);
        topology_group(n, same_numa, &m, numa);
    }
    m.shutdown();
    return rc;
}
