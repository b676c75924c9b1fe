"""Run by tests/test_data_mpi.py under mpiexec: PACKED POLICY. Every rank loads its store and reads one
epoch; rank 0 checks exactly-once coverage and, for replicate, that the host held one segment."""
import sys

import numpy as np
from mpi4py import MPI

from pytorch_bridge.data import Dataset
from pytorch_bridge.data.store import local_rank

packed, policy = sys.argv[1], sys.argv[2]
comm = MPI.COMM_WORLD
rank, world = comm.Get_rank(), comm.Get_size()
lr, ln = local_rank()
ds = Dataset(packed)
ld = ds.loader("train", batch_size=3, rank=rank, world=world, seed=4, workers=1, policy=policy)
ld.set_epoch(2)
seen = [int(i) for b in ld.batches() for i in b]
n = sum(len(y) for _, y in ld)
info = comm.gather((ld.store.path, ld.store.created, len(ld), n, seen, lr, ln), root=0)
comm.Barrier()
ld.close()
if rank == 0:
    paths = {i[0] for i in info}
    assert len({i[2] for i in info}) == 1, "batch counts differ"
    allseen = sorted(s for i in info for s in i[4])
    assert allseen == list(range(ds.size("train"))), allseen
    assert sorted(i[5] for i in info) == list(range(world)) and {i[6] for i in info} == {world}
    if policy == "replicate":
        assert len(paths) == 1 and sum(i[1] for i in info) == 1, info
    else:
        assert len(paths) == world and all(i[1] for i in info)
    print("OK data %s %d" % (policy, world))
