/* inventory: what a worker host offers (CPUs, memory, GPUs), for its registration.
 * GPUs are found through the CUDA runtime loaded with dlopen (libcudart.so.13, .12, or
 * plain .so, also under /usr/local/cuda/lib64), so the same binary runs where CUDA is
 * missing; or simulated (model "simulated" or the one asked for, backed by CPU) when asked. */
#ifndef RINGMASTER_INVENTORY_H
#define RINGMASTER_INVENTORY_H

#include <jansson.h>
#include <stddef.h>

#define INVENTORY_MAX_GPUS 64

struct inventory_gpu {
    int index;
    char model[128];
    long long memory_bytes;
    int island; /* its NVLink island on this host (topology.h); -1 unknown */
    int numa;   /* its NUMA/PCIe domain on this host; -1 unknown */
    char pci[32]; /* its PCI bus id ("0000:3b:00.0"), "" when simulated or unknown */
};

struct inventory {
    int cpus;
    long long memory_bytes;
    int simulated;
    int ngpus;
    struct inventory_gpu gpus[INVENTORY_MAX_GPUS];
    char cuda_note[160]; /* why no GPU was found, "" when some were */
    char topology_note[160]; /* why the GPUs' topology is unknown, "" when it is known */
};

/* Fills inv. simulate_gpus > 0 advertises that many simulated GPUs and skips CUDA;
 * 0 probes CUDA (no GPU is not an error), then the GPUs' topology with NVML (unknown, with
 * topology_note saying why, where NVML is absent). Simulated GPUs' topology is unknown. */
void inventory_probe(struct inventory *inv, int simulate_gpus);

/* Names every simulated GPU of inv model (1..127 bytes, printable ASCII: e.g. "a100", so
 * that the scheduler sees a GPU model it knows). Returns 0, or -1 (EINVAL) when inv has
 * no simulated GPUs or the name is not one. */
int inventory_simulate_model(struct inventory *inv, const char *model);

/* Declares the simulated GPUs' topology, "AxB" (topology_parse()). Returns 0, or -1 with
 * a message in err when inv has no simulated GPUs or spec is not one for them. */
int inventory_simulate_topology(struct inventory *inv, const char *spec, char *err, size_t len);

/* The registration body of docs/worker-protocol.md for host name (new). */
json_t *inventory_json(const struct inventory *inv, const char *name);

#endif
