/* topology: how a host's GPUs are joined (issue 32 item 1): each GPU's NVLink island and its
 * NUMA/PCIe domain. Declared for simulated GPUs (--simulate-topology AxB), read with NVML
 * (libnvidia-ml loaded with dlopen, so the worker runs without a driver) on real ones, and
 * unknown (-1) where neither says: the scheduler then treats the whole node as one domain. */
#ifndef RINGMASTER_TOPOLOGY_H
#define RINGMASTER_TOPOLOGY_H

#include <stddef.h>

/* The most GPUs a host reports (INVENTORY_MAX_GPUS). */
#define TOPOLOGY_MAX_GPUS 64

/* Parses a declared topology "AxB" (A islands of B GPUs each, A, B >= 1) for a host of
 * ngpus GPUs: GPU g is in island g / B. Returns 0 with island[0..ngpus) filled, or -1 with
 * a message in err ("--simulate-topology 2x4: 8 GPUs, but --simulate-gpus is 6") and
 * island unchanged. */
int topology_parse(const char *spec, int ngpus, int *island, char *err, size_t len);

/* Groups n GPUs by a symmetric relation: GPUs a and b are in one group when linked(ctx, a,
 * b) is 1, or through a chain of such pairs. Groups are numbered 0, 1, ... in the order of
 * their lowest GPU. Fills group[0..n). */
void topology_group(int n, int (*linked)(void *ctx, int a, int b), void *ctx, int *group);

/* Reads the islands (GPUs joined by NVLink, nvmlDeviceGetP2PStatus) and NUMA domains (GPUs
 * whose common ancestor is at most a NUMA node, nvmlDeviceGetTopologyCommonAncestor) of n
 * GPUs named by their PCI bus ids (pci[g], as cudaDeviceGetPCIBusId writes them). Returns 0
 * with island[] and numa[] filled; or -1 with a note in note ("no NVML library found") and
 * both left as they are (unknown), where NVML is absent or fails. */
int topology_probe_nvml(int n, const char *const *pci, int *island, int *numa, char *note,
                        size_t len);

#endif
