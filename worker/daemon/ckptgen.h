/* ckptgen: checkpoint generations on the worker's side (docs/worker-protocol.md, "Checkpoint
 * generations"). The server names a job's checkpoint folder <root>/job-<id>/g<gen>, a new
 * generation after every requeue, so that a copy of the job left running by a requeue writes
 * only into an older generation's folder. A launch into an empty generation folder first
 * restores the newest older generation's checkpoint into it; nothing here ever writes into
 * an older generation. */
#ifndef RINGMASTER_CKPTGEN_H
#define RINGMASTER_CKPTGEN_H

#include <stddef.h>

/* The generation of folder dir: k when its last component is g<k> (k 0..INT_MAX, digits
 * only), else -1 (a folder that is no generation: the worker's own default, say). */
int ckptgen_of(const char *dir);

/* Fills the existing folder dir (generation gen = ckptgen_of(dir) >= 0) when it holds no
 * checkpoint file: copies into it the files of the newest older generation that has any (the
 * siblings g<k>, k < gen, highest k first), else those of the parent folder itself (the
 * layout before generations; generation -1). A checkpoint file is a regular file at the top
 * of the folder whose name does not end in ".tmp" (a writer's half-written temporary). Each
 * file is copied to <name>.ckptgen.tmp in dir and renamed, so that dir never holds half a
 * file, and a source replaced meanwhile by an atomic rename is read whole (one removed
 * meanwhile is skipped). Sets *from to the generation copied from (-1: the parent). Returns
 * the files copied (0: dir is no generation, already holds a checkpoint, or no older one
 * exists), or -1 with text in err (dir may then hold some of the files, never a partial one). */
int ckptgen_restore(const char *dir, int *from, char *err, size_t errlen);

#endif
