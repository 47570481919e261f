-- 037: how a node's GPUs are joined, as its worker reports it at registration (issue 32
-- item 1): each GPU's NVLink island and its NUMA/PCIe domain, numbered on the node (0, 1,
-- ...). NULL: not known (no NVML, a simulated GPU without --simulate-topology): the
-- scheduler then sees the whole node as one domain, as before. The node's switch and rack
-- are its admin's labels (sql/035, "switch" and "rack").
ALTER TABLE node_gpus
    ADD COLUMN island integer CHECK (island IS NULL OR island BETWEEN 0 AND 1023),
    ADD COLUMN numa   integer CHECK (numa IS NULL OR numa BETWEEN 0 AND 1023);

-- A job's topology bound (POST /api/v1/jobs "topology", server/spec/jobspec_topology.c), as
-- Slurm's --switches=N@T: {"max_switches": N, "max_wait_s": T}; NULL: none.
ALTER TABLE jobs ADD COLUMN topology jsonb CHECK (topology IS NULL OR jsonb_typeof(topology) = 'object');
